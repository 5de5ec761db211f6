"""A real citation-style graph built offline: the Linux kernel documentation (Debian `linux-doc-6.1`).

Nodes are the rst documents, edges their cross-references, features a binary bag of words over a
fixed vocabulary (Cora style), labels the top-level documentation area (`networking`, `hwmon`, ...).
Written in the Planetoid `ind.*` format with a standard-style split (20 labeled per class, 500
validation, 1,000 test), so every Planetoid tool reads it like Cora.

Cross-references (all resolved to a document; self-references and unresolved targets dropped):
    .. toctree:: entries (glob patterns expanded)     :doc:`target` and :doc:`text <target>`
    :ref:`label` / :ref:`text <label>` via the `.. _label:` definitions
    plain `Documentation/<path>.rst` mentions (the kernel's Sphinx automarkup turns them into links)
Edges are undirected (a_ij = a_ji = 1), as for the citation graphs (pitfall 7).

Features come from the prose only: reference targets, label definitions and toctree blocks are
removed first, so the bag of words does not spell out the graph. Words: lowercase alphabetic
tokens of >= 3 letters, English stop words removed, kept if they occur in >= `min_df` documents and
in at most `max_df` of them; the `vocab_size` most frequent (ties alphabetical) form the vocabulary.

Classes: top-level areas with at least `min_class_size` documents (the translations tree is
excluded: its area is a language, not a topic). Everything is sorted, so the build is deterministic.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from genfeat.data.planetoid import GraphData, files_sha256, read_planetoid, standard_split, symmetrize, write_planetoid
from genfeat.data.sources import data_home, require
from genfeat.errors import DataError

SOURCES_DIR = "usr/share/doc/linux-doc-6.1/html/_sources"
NAME = "linuxdoc"

STOP_WORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have having
he her here hers herself him himself his how i if in into is it its itself just may me might more most must
my myself no nor not now of off on once only or other our ours ourselves out over own same shall she should
so some such than that the their theirs them themselves then there these they this those through to too
under until up upon very was we were what when where which while who whom why will with would you your
yours yourself yourselves one two see use used using via etc within without will however thus
""".split())

_DOC_ROLE = re.compile(r":doc:`([^`]*)`")
_REF_ROLE = re.compile(r":ref:`([^`]*)`")
_ANY_ROLE = re.compile(r":[a-z:]+:`([^`<]*)(?:<[^`]*>)?`")
_LABEL_DEF = re.compile(r"^\.\. _([^:]+):\s*$", re.M)
_DOC_PATH = re.compile(r"Documentation/([A-Za-z0-9_./-]+?)\.rst\b")
_WORD = re.compile(r"[a-z]{3,}")


@dataclass(frozen=True)
class KernelDocsConfig:
    min_class_size: int = 40
    vocab_size: int = 1500
    min_df: int = 10
    max_df: float = 0.5
    per_class: int = 20
    num_val: int = 500
    num_test: int = 1000
    split_seed: int = 0


def _target(text: str) -> str:
    """`title <target>` -> target; `target` -> target."""
    m = re.search(r"<([^>]*)>\s*$", text)
    return (m.group(1) if m else text).strip()


def _resolve(base_dir: str, target: str, docs: set[str]) -> str | None:
    target = target.removesuffix(".rst").strip()
    if not target:
        return None
    path = target.lstrip("/") if target.startswith("/") else posixpath.join(base_dir, target)
    path = posixpath.normpath(path)
    return path if path in docs else None


def _split_toctrees(text: str) -> tuple[list[str], str]:
    """(toctree entries, text without the toctree blocks). A block is the directive line plus the
    following lines indented deeper than it (blank lines included)."""
    entries, kept, indent = [], [], None
    for line in text.splitlines():
        stripped = line.strip()
        depth = len(line) - len(line.lstrip())
        if indent is not None and (not stripped or depth > indent):
            if stripped and not stripped.startswith(":"):
                entries.append(_target(stripped))
            continue
        indent = None
        if stripped.startswith(".. toctree::"):
            indent = depth
            continue
        kept.append(line)
    return entries, "\n".join(kept)


def _references(doc: str, text: str, docs: set[str], labels: dict[str, str]) -> set[str]:
    base = posixpath.dirname(doc)
    refs: set[str] = set()
    for entry in _split_toctrees(text)[0]:
        if any(ch in entry for ch in "*?["):
            pattern = posixpath.normpath(posixpath.join(base, entry))
            refs.update(d for d in docs if fnmatch.fnmatchcase(d, pattern))
        elif (r := _resolve(base, entry, docs)) is not None:
            refs.add(r)
    for m in _DOC_ROLE.finditer(text):
        if (r := _resolve(base, _target(m.group(1)), docs)) is not None:
            refs.add(r)
    for m in _REF_ROLE.finditer(text):
        r = labels.get(_target(m.group(1)).lower())
        if r is not None:
            refs.add(r)
    for m in _DOC_PATH.finditer(text):
        if m.group(1) in docs:
            refs.add(m.group(1))
    refs.discard(doc)
    return refs


def _prose(text: str) -> str:
    text = _split_toctrees(text)[1]
    text = _LABEL_DEF.sub("", text)
    text = _ANY_ROLE.sub(lambda m: m.group(1), text)  # keep a role's link text, drop its target
    return _DOC_PATH.sub(" ", text)


def read_docs(root: Path) -> dict[str, str]:
    """{doc id (path without .rst.txt): text} for every rst source outside translations/."""
    files = sorted(root.rglob("*.rst.txt"))
    if not files:
        raise DataError(f"no *.rst.txt files under {root}")
    docs = {}
    for f in files:
        doc = f.relative_to(root).as_posix().removesuffix(".rst.txt")
        if not doc.startswith("translations/"):
            docs[doc] = f.read_text(encoding="utf-8", errors="replace")
    return docs


def build_graph(texts: dict[str, str], cfg: KernelDocsConfig = KernelDocsConfig()) -> GraphData:
    """The document graph of `texts` ({doc id: rst text}); see the module docstring."""
    import scipy.sparse as sp

    all_docs = set(texts)
    labels_to_doc: dict[str, str] = {}
    for doc in sorted(texts):
        for m in _LABEL_DEF.finditer(texts[doc]):
            labels_to_doc.setdefault(m.group(1).strip().lower(), doc)
    areas: dict[str, int] = {}
    for doc in texts:
        if "/" in doc:
            areas[doc.split("/", 1)[0]] = areas.get(doc.split("/", 1)[0], 0) + 1
    class_names = sorted(a for a, n in areas.items() if n >= cfg.min_class_size)
    if len(class_names) < 2:
        raise DataError(f"fewer than 2 areas with >= {cfg.min_class_size} documents")
    cls = {a: k for k, a in enumerate(class_names)}
    nodes = sorted(d for d in texts if "/" in d and d.split("/", 1)[0] in cls)
    index = {d: i for i, d in enumerate(nodes)}
    src, dst = [], []
    for d in nodes:
        for r in sorted(_references(d, texts[d], all_docs, labels_to_doc)):
            if r in index:
                src.append(index[d])
                dst.append(index[r])
    n = len(nodes)
    adj = symmetrize(sp.csr_matrix((np.ones(len(src), np.float32), (src, dst)), shape=(n, n)))

    bags = [set(_WORD.findall(_prose(texts[d]).lower())) - STOP_WORDS for d in nodes]
    df: dict[str, int] = {}
    for bag in bags:
        for w in bag:
            df[w] = df.get(w, 0) + 1
    cands = [w for w, c in df.items() if cfg.min_df <= c <= cfg.max_df * n]
    vocab = sorted(sorted(cands), key=lambda w: -df[w])[:cfg.vocab_size]
    widx = {w: j for j, w in enumerate(vocab)}
    rows = [i for i, bag in enumerate(bags) for w in bag if w in widx]
    cols = [widx[w] for bag in bags for w in bag if w in widx]
    features = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n, len(vocab)))
    features.sort_indices()

    labels = np.array([cls[d.split("/", 1)[0]] for d in nodes], np.int64)
    train, val, test = standard_split(labels, cfg.per_class, cfg.num_val, cfg.num_test, cfg.split_seed)
    g = GraphData(NAME, features, labels, adj, train, val, test, class_names, nodes, vocab)
    g.validate()
    return g


def build_kernel_docs(out_dir: str | Path | None = None, cfg: KernelDocsConfig = KernelDocsConfig(),
                      force: bool = False) -> Path:
    """Build the graph from the fetched `linux-doc` source and write `ind.linuxdoc.*` + `meta.json`."""
    out = Path(out_dir) if out_dir is not None else data_home() / "graphs" / NAME
    meta_path = out / "meta.json"
    if meta_path.is_file() and not force:
        meta = json.loads(meta_path.read_text())
        try:
            if meta.get("config") == asdict(cfg) and meta.get("files_sha256") == files_sha256(out, NAME):
                return out  # built with these settings and unchanged since
        except OSError:  # a file is missing: rebuild
            pass
    root = require("linux-doc") / SOURCES_DIR
    g = build_graph(read_docs(root), cfg)
    order = write_planetoid(out, g, seed=cfg.split_seed)
    meta = {"config": asdict(cfg), "classes": g.class_names, "vocabulary": g.vocabulary,
            "node_names": [g.node_names[k] for k in order], "summary": g.summary(),
            "files_sha256": files_sha256(out, NAME)}
    meta_path.write_text(json.dumps(meta, indent=0))
    return out


def load_kernel_docs(cfg: KernelDocsConfig = KernelDocsConfig(), out_dir: str | Path | None = None) -> GraphData:
    out = build_kernel_docs(out_dir, cfg)
    g = read_planetoid(out, NAME)
    meta = json.loads((out / "meta.json").read_text())
    g.class_names, g.node_names, g.vocabulary = meta["classes"], meta["node_names"], meta["vocabulary"]
    return g
