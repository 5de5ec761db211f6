"""Labelled text for the classification recipes (`multi_cls_classify`, `xlnet_classify`): one reader of every task
they take, by name.

    bbc                  BBC News topics (5 classes), the stratified 60 / 20 / 20 split of `split_seed`
    debian-sections, wordnet-lexnames, wordnet-wic
                         genfeat's built tasks (`genfeat data build`, `data/built_tasks.py`)
    SST-2, MRPC, ...     a GLUE task's train.tsv / dev.tsv in `data_dir` (dev is the test split; a stratified tenth
                         of train the validation split); BoolQ, CB, RTE, WiC: SuperGLUE's train.jsonl / val.jsonl
    dir:PATH             your own files (below)

Your own files, `dir:PATH`: PATH/train, PATH/valid (optional) and PATH/test, each with the extension .tsv, .csv or
.jsonl (one file a split). TSV and CSV files have a header row and standard CSV quoting (a quoted field keeps its
tabs, commas and newlines, and loses its quotes); a JSONL file has one object a line. Columns: `text`, optional
`text_b` (a sentence-pair task: every row has one), and `label` (any string: the classes are the training split's
labels, in numeric order when every label is an integer, else sorted); the names are settable (`text_column`,
`text_b_column`, `label_column`); where the header has no `text` but has `text_a` (the TSVs of `genfeat data build
--out`), `text_a` is read. Without a valid file a stratified tenth of train, fixed by `split_seed`, is the
validation split. A valid or test label that train does not have, an empty text, or a row without a column is an
error naming the file and line.

`load_labelled(...)` -> (splits {"train", "valid", "test"} -> ((text_a, text_b | None) pairs, labels), whether it
is regression (STS-B only), the class names (None for GLUE / SuperGLUE and regression), and the splits' sha256).
`check_options(...)` refuses the options a task does not read. `evenly_limited(splits, n)` keeps n examples a split
(quick looks, tests); few-label training sets: `data.few_labels`.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from genfeat.data.built_task import Splits, splits_checksum
from genfeat.data.built_tasks import BUILDERS, build_task
from genfeat.data.text_classification import (
    GLUE_COLUMNS,
    SUPERGLUE_FIELDS,
    load_bbc_news,
    load_pair_task,
    stratified_split,
)
from genfeat.data.text_files import read_utf8
from genfeat.errors import ConfigError, DataError

EXTENSIONS = (".tsv", ".csv", ".jsonl")
COLUMNS = ("text", "text_b", "label")  # the defaults of text_column, text_b_column, label_column


def task_names() -> list[str]:
    return ["bbc", *BUILDERS, *GLUE_COLUMNS, *SUPERGLUE_FIELDS, "dir:PATH"]


def check_options(task: str, data_dir: str, columns: tuple[str, str, str] = COLUMNS) -> None:
    """ConfigError for an unknown task, a missing data_dir, or an option the task would not read."""
    glue = task in GLUE_COLUMNS or task in SUPERGLUE_FIELDS
    if not (task == "bbc" or task in BUILDERS or glue or task.startswith("dir:")):
        raise ConfigError(f"unknown task {task!r}; tasks: {', '.join(task_names())}")
    if task.startswith("dir:") and not task[4:]:
        raise ConfigError("task dir:PATH needs the folder's path after 'dir:'")
    if glue and not data_dir:
        raise ConfigError(f"task {task} needs data_dir (GLUE's train.tsv / dev.tsv or SuperGLUE's train.jsonl / "
                          "val.jsonl); your own files: task dir:PATH")
    if data_dir and not glue:
        raise ConfigError(f"data_dir is read by the GLUE and SuperGLUE tasks only, not by {task!r} (your own files: "
                          f"task dir:{data_dir})")
    if tuple(columns) != COLUMNS and not task.startswith("dir:"):
        raise ConfigError(f"text_column / text_b_column / label_column are read by task dir:PATH only, not {task!r}")


def load_labelled(task: str, data_dir: str = "", split_seed: int = 0, columns: tuple[str, str, str] = COLUMNS
                  ) -> tuple[Splits, bool, list[str] | None, str]:
    """The splits of `task` (module docstring)."""
    check_options(task, data_dir, columns)
    if task == "bbc":
        docs = load_bbc_news()
        split = stratified_split(docs.labels, split_seed)
        splits = {k: ([(" ".join(docs.texts[i].split()), None) for i in idx], docs.labels[idx])
                  for k, idx in split.items()}
        return splits, False, list(docs.classes), splits_checksum(splits)
    if task in BUILDERS:
        built = build_task(task, split_seed)
        return built.splits, False, built.classes, built.checksum
    if task.startswith("dir:"):
        splits, classes = read_labelled_dir(task[4:], columns, split_seed)
        return splits, False, classes, splits_checksum(splits)
    splits, regression = load_pair_task(task, data_dir, split_seed)
    return splits, regression, None, splits_checksum(splits)


def evenly_limited(splits: Splits, n: int) -> Splits:
    """Each split cut to `n` examples spaced evenly over it (a split ordered by class keeps every class); n = 0 or
    a split no longer than n: as it is."""
    out = {}
    for k, (pairs, y) in splits.items():
        idx = np.arange(len(y))
        if 0 < n < len(idx):
            idx = idx[np.linspace(0, len(idx) - 1, n).round().astype(np.int64)]
        out[k] = ([pairs[i] for i in idx], y[idx])
    return out


def split_file(folder: Path, split: str) -> Path | None:
    found = [folder / f"{split}{ext}" for ext in EXTENSIONS if (folder / f"{split}{ext}").is_file()]
    if len(found) > 1:
        raise DataError(f"{folder}: {' and '.join(p.name for p in found)} both hold the {split} split; keep one")
    return found[0] if found else None


def read_rows(path: Path, columns: tuple[str, str, str]) -> list[tuple[str, str | None, str]]:
    """(text_a, text_b | None, label) rows of one split file (module docstring)."""
    text, text_b, label = columns
    if path.suffix == ".jsonl":
        records = []
        for n, line in enumerate(read_utf8(path).split("\n"), 1):  # not splitlines: JSON may hold U+2028
            if line.strip():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DataError(f"{path}:{n}: not a JSON object ({e.msg})") from None
                if not isinstance(obj, dict):
                    raise DataError(f"{path}:{n}: not a JSON object")
                records.append((n, {k: None if v is None else str(v) for k, v in obj.items()}))
        header = set().union(*(r.keys() for _, r in records)) if records else set()
    else:
        with io.StringIO(read_utf8(path), newline="") as f:
            reader = csv.DictReader(f, delimiter="\t" if path.suffix == ".tsv" else ",")
            header = set(reader.fieldnames or [])
            records = [(reader.line_num, row) for row in reader]
    if text not in header and text == COLUMNS[0] and "text_a" in header:
        text = "text_a"  # genfeat's own `data build --out` files
    for need in (text, label):
        if need not in header:
            raise DataError(f"{path}: no {need!r} column (columns: {', '.join(sorted(header)) or 'none'}); set "
                            "text_column / label_column to yours")
    rows = []
    for n, r in records:
        a, b, y = r.get(text), r.get(text_b) if text_b in header else None, r.get(label)
        if a is None or y is None or not a.strip() or not y.strip():
            raise DataError(f"{path}:{n}: an empty {text!r} or {label!r}")
        rows.append((a, b if b and b.strip() else None, y.strip()))
    if not rows:
        raise DataError(f"{path}: no rows")
    if len({b is None for _, b, _ in rows}) > 1:
        raise DataError(f"{path}: some rows have {text_b!r} and some do not; a pair task needs it in every row")
    return rows


def class_order(names: set[str]) -> list[str]:
    try:
        return sorted(names, key=int)
    except ValueError:
        return sorted(names)


def read_labelled_dir(folder: str | Path, columns: tuple[str, str, str] = COLUMNS, split_seed: int = 0
                      ) -> tuple[Splits, list[str]]:
    """(splits, class names) of your own files (module docstring)."""
    d = Path(folder)
    if not d.is_dir():
        raise DataError(f"{d}: no such folder (task dir:PATH reads PATH/train, valid, test .tsv / .csv / .jsonl)")
    files = {s: split_file(d, s) for s in ("train", "valid", "test")}
    for s in ("train", "test"):
        if files[s] is None:
            raise DataError(f"{d}: no {s}.tsv, {s}.csv or {s}.jsonl")
    rows = {s: read_rows(p, columns) for s, p in files.items() if p is not None}
    classes = class_order({y for *_, y in rows["train"]})
    index = {c: i for i, c in enumerate(classes)}

    def split(s: str) -> tuple[list[tuple[str, str | None]], np.ndarray]:
        unknown = sorted({y for *_, y in rows[s]} - set(index))
        if unknown:
            raise DataError(f"{files[s]}: labels not in the training split: {', '.join(unknown[:5])}")
        return [(a, b) for a, b, _ in rows[s]], np.array([index[y] for *_, y in rows[s]], dtype=np.int64)
    out = {s: split(s) for s in rows}
    if "valid" not in out:  # a stratified tenth of train
        pairs, y = out["train"]
        idx = stratified_split(y, split_seed, valid=0.1, test=0.0)
        out["valid"] = ([pairs[i] for i in idx["valid"]], y[idx["valid"]])
        out["train"] = ([pairs[i] for i in idx["train"]], y[idx["train"]])
        if not len(out["valid"][1]):
            raise DataError(f"{d}: {len(y)} training rows leave none for the validation tenth carved from them; "
                            "give more rows, or a valid file")
    if len({b is None for k in out for _, b in out[k][0][:1]}) > 1:
        raise DataError(f"{d}: the splits disagree on whether examples have {columns[1]!r}")
    return {k: out[k] for k in ("train", "valid", "test")}, classes
