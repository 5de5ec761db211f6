"""SciDocs' own files, for users who have them (`aws s3 sync --no-sign-request s3://ai2-s2-research-public/specter/
scidocs/ data/`; spec multi2spe.md §6-§7): the paper metadata, the cite / co-cite qrels and the MAG / MeSH label
files, read into the structures the Multi²SPE evaluation uses.

    read_metadata(path)   {paper_id: (title, abstract)} from a `paper_metadata_*.json` ({id: {"title", "abstract"}})
    read_qrels(path)      {query_id: {paper_id: relevance}} from a TREC qrels file ("qid 0 pid rel" lines)
    read_labels(path)     [(paper_id, label)] from a MAG / MeSH csv (a header, then "pid,class_label")
    qrel_queries          a qrels dict as `data.paper_triplets.RankingQueries` over the papers of `index`, under
                          SciDocs' missing-embedding policy: a query without an embedding is skipped, a candidate
                          without one dropped (the counts are returned with it)

A query's candidates are every paper its qrels list (SciDocs: 5 positives and 25 negatives; Multi-SciDocs: up to 5
and 500).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from genfeat.data.jsonl import jsonl_rows
from genfeat.data.paper_triplets import RankingQueries
from genfeat.errors import DataError


def read_metadata(path: str | Path) -> dict[str, tuple[str, str]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object of paper id -> metadata")
    out = {}
    for pid, m in data.items():
        if not isinstance(m, dict) or "title" not in m:
            raise DataError(f"{path}: paper {pid!r} has no title")
        out[str(pid)] = (m.get("title") or "", m.get("abstract") or "")
    return out


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4:
            raise DataError(f"{path}:{n}: a qrels line is 'query 0 paper relevance', got {line!r}")
        out.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    return out


def read_labels(path: str | Path) -> list[tuple[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows or len(rows[0]) < 2:
        raise DataError(f"{path}: expected a header and 'pid,class_label' rows")
    return [(r[0], r[1]) for r in rows[1:] if r]


def qrel_queries(qrels: Mapping[str, Mapping[str, int]], index: Mapping[str, int]
                 ) -> tuple[RankingQueries, dict[str, int]]:
    """(the queries over `index`'s paper numbers, {"queries_skipped", "candidates_dropped"})."""
    qs, pos, cand = [], [], []
    skipped = dropped = 0
    for q, rels in qrels.items():
        if q not in index:
            skipped += 1
            continue
        kept = [(index[p], r) for p, r in rels.items() if p in index]
        dropped += len(rels) - len(kept)
        positives = np.asarray(sorted(i for i, r in kept if r > 0), dtype=np.int64)
        negatives = np.asarray(sorted(i for i, r in kept if r <= 0), dtype=np.int64)
        qs.append(index[q])
        pos.append(positives)
        cand.append(np.concatenate([positives, negatives]))
    return (RankingQueries(np.asarray(qs, dtype=np.int64), pos, cand),
            {"queries_skipped": skipped, "candidates_dropped": dropped})


def read_papers_jsonl(path: str | Path) -> list[tuple[str, str, str]]:
    """(paper_id, title, abstract) of each line of SPECTER's input format (`{"paper_id", "title", "abstract"}`; a
    missing or null abstract is empty); DataError naming the line of a row without paper_id or title, or of bad
    JSON, and for a file without papers."""
    out = []
    for n, row in jsonl_rows(path):
        if not isinstance(row, dict) or not row.get("paper_id") or row.get("title") is None:
            raise DataError(f"{path}:{n}: a paper needs paper_id and title (SPECTER's input format)")
        out.append((str(row["paper_id"]), str(row["title"]), str(row.get("abstract") or "")))
    if not out:
        raise DataError(f"{path}: no papers")
    return out
