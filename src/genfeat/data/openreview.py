"""Reviewer archives and submissions in the openreview-expertise dataset layout, for reviewer-paper affinities
(`genfeat affinity`; thesis C §3.4 as OpenReview's multi-facet recommender uses it).

    archives/<reviewer>.jsonl   one of the reviewer's papers a line: {"content": {"title": ..., "abstract": ...}}
                                (a field may also be {"value": ...}, as the API v2 writes it)
    submissions.json            {submission id: note} or a list of notes with "id"; a note has the same content

`archive_citations(dir)` makes the archives a `CitationData` for training on them: papers = the distinct
(title, abstract) pairs, authors = the reviewers whose archives hold them (no expertise labels are read, no
citations); the split holds out `test_fraction` / `valid_fraction` of the papers with >= 2 reviewers' archives
(all papers when none has).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from genfeat.data.citations import CitationData, cold_start_split, paper_inputs
from genfeat.errors import DataError


def _field(content: dict, name: str) -> str:
    v = content.get(name, "")
    if isinstance(v, dict):
        v = v.get("value", "")
    return v if isinstance(v, str) else ""


def _paper(note: dict, where: str) -> tuple[str, str]:
    if not isinstance(note, dict) or not isinstance(note.get("content"), dict):
        raise DataError(f"{where}: a paper must be an object with a 'content' object")
    title, abstract = _field(note["content"], "title"), _field(note["content"], "abstract")
    if not title and not abstract:
        raise DataError(f"{where}: a paper has neither content.title nor content.abstract")
    return title, abstract


def read_archives(archives: str | Path) -> dict[str, list[tuple[str, str]]]:
    """{reviewer: [(title, abstract), ...]} from archives/<reviewer>.jsonl, reviewers sorted."""
    root = Path(archives)
    files = sorted(root.glob("*.jsonl"))
    if not files:
        raise DataError(f"{root}: no <reviewer>.jsonl archives")
    out = {}
    for f in files:
        papers = []
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    papers.append(_paper(json.loads(line), f"{f}:{i}"))
                except json.JSONDecodeError as e:
                    raise DataError(f"{f}:{i}: not JSON ({e.msg})") from None
        out[f.stem] = papers
    return out


def read_submissions(path: str | Path) -> list[tuple[str, str, str]]:
    """[(id, title, abstract)] in the file's order."""
    try:
        notes = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: not JSON ({e.msg})") from None
    items = list(notes.items()) if isinstance(notes, dict) else [(n.get("id"), n) for n in notes]
    out = []
    for sid, note in items:
        if not sid:
            raise DataError(f"{path}: a submission without an id")
        out.append((str(sid), *_paper(note, f"{path} ({sid})")))
    return out


def archive_citations(archives: str | Path, seed: int = 0, test_fraction: float = 0.1, valid_fraction: float = 0.1,
                      min_count: int = 2, max_words: int = 512) -> CitationData:
    by_reviewer = read_archives(archives)
    index: dict[tuple[str, str], int] = {}
    pairs = []
    for r, papers in enumerate(by_reviewer.values()):
        for paper in papers:
            pairs.append((index.setdefault(paper, len(index)), r))
    pairs = np.unique(np.array(pairs, dtype=np.int64).reshape(-1, 2), axis=0)
    papers = list(index)
    authors = np.bincount(pairs[:, 0], minlength=len(papers))
    eligible = authors >= 2 if (authors >= 2).any() else np.ones(len(papers), dtype=bool)
    split = cold_start_split(eligible, None, test_fraction, valid_fraction, seed)
    ids, types, vocab = paper_inputs([t for t, _ in papers], [a for _, a in papers], split == 0, min_count, max_words)
    return CitationData(f"archives {Path(archives).name}", ids, types, split, pairs, np.zeros((0, 2), dtype=np.int64),
                        len(by_reviewer), 0, vocab, paper_names=[t for t, _ in papers],
                        author_names=list(by_reviewer), source=str(archives))
