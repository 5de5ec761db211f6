"""Citation graphs in the formats users have, as `CitationData` (thesis C §3.4.3.1's protocol: pruning before a
cold-start split; spec citation-prediction.md §7).

    SPECTER / SciDocs   a directory with metadata.json ({paper id: {"title", "abstract", "authors"?}}) and either
                        data.json ({query id: {candidate id: {"count": c}}}, c = 5 a direct citation: SPECTER's
                        training triples' source) or qrels (TREC lines "query 0 doc relevance": SciDocs' cite
                        task; relevance > 0 a citation); the query cites the candidate
    S2ORC JSONL         one paper a line: {"paper_id", "title", "abstract", "authors": [names or {"first",
                        "middle", "last"}], "outbound_citations": [paper ids]}

`paper_graph` turns (papers, authors, citations) into the data: citations to papers outside the set dropped;
authors identified by name (the thesis's rule: same name, same person); authors with < 2 papers and citing papers
with < 5 citations removed before the split; test = 10 % of the papers with >= 5 authors (>= 5 citing papers when
no paper has 5 authors), validation 10 % of the rest.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from genfeat.data.citations import CitationData, cold_start_split, paper_inputs, prune_columns
from genfeat.data.jsonl import jsonl_rows
from genfeat.errors import DataError


def _json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: not JSON ({e.msg})") from None


def _author(a) -> str:
    if isinstance(a, dict):
        if "name" in a:
            return str(a["name"]).strip()
        return " ".join(str(p) for k in ("first", "middle", "last") for p in
                        (a.get(k) if isinstance(a.get(k), list) else [a.get(k)]) if p).strip()
    return str(a).strip()


def paper_graph(name: str, papers: dict[str, tuple[str, str, list[str]]], citations: list[tuple[str, str]],
                seed: int = 0, min_count: int = 5, max_words: int = 512) -> CitationData:
    """`papers` {id: (title, abstract, author names)}; `citations` (cited id, citing id) pairs."""
    if not papers:
        raise DataError(f"{name}: no papers")
    ids = sorted(papers)
    index = {p: i for i, p in enumerate(ids)}
    names = sorted({a for _, _, authors in papers.values() for a in authors if a})
    a_index = {a: i for i, a in enumerate(names)}
    authorship = np.array([[index[p], a_index[a]] for p in ids for a in papers[p][2] if a],
                          dtype=np.int64).reshape(-1, 2)
    kept = [(index[c], index[q]) for c, q in citations if c in index and q in index and c != q]
    cites = np.array(kept, dtype=np.int64).reshape(-1, 2)
    authorship, author_ids = prune_columns(authorship, 2) if len(authorship) else (authorship, np.arange(0))
    cites, citer_ids = prune_columns(cites, 5) if len(cites) else (cites, np.arange(0))
    n_auth = np.bincount(authorship[:, 0], minlength=len(ids)) if len(authorship) else np.zeros(len(ids), int)
    n_cite = np.bincount(cites[:, 0], minlength=len(ids)) if len(cites) else np.zeros(len(ids), int)
    eligible = n_auth >= 5 if (n_auth >= 5).any() else n_cite >= 5
    split = cold_start_split(eligible, None, 0.1, 0.1, seed)
    input_ids, type_ids, vocab = paper_inputs([papers[p][0] for p in ids], [papers[p][1] for p in ids], split == 0,
                                              min_count, max_words)
    return CitationData(name, input_ids, type_ids, split, authorship, cites, len(author_ids), len(citer_ids), vocab,
                        paper_names=ids, author_names=[names[i] for i in author_ids],
                        citer_names=[ids[i] for i in citer_ids], source=name,
                        notes={"citations_outside_the_set": len(citations) - len(kept)})


def read_specter(root: str | Path, seed: int = 0, min_count: int = 5) -> CitationData:
    root = Path(root)
    meta = _json(root / "metadata.json")
    papers = {str(k): (v.get("title") or "", v.get("abstract") or "", [_author(a) for a in v.get("authors") or []])
              for k, v in meta.items()}
    citations: list[tuple[str, str]] = []
    if (root / "data.json").is_file():
        for q, cands in _json(root / "data.json").items():
            citations += [(str(c), str(q)) for c, v in cands.items()
                          if (v.get("count", 0) if isinstance(v, dict) else v) >= 5]
    else:
        qrels = sorted(root.glob("*qrel*"))
        if not qrels:
            raise DataError(f"{root}: neither data.json nor a qrels file")
        for f in qrels:
            for i, line in enumerate(f.read_text().splitlines(), 1):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) != 4:
                    raise DataError(f"{f}:{i}: a qrels line is 'query 0 doc relevance', got {line[:60]!r}")
                if float(parts[3]) > 0:
                    citations.append((parts[2], parts[0]))
    return paper_graph(f"specter {root.name}", papers, citations, seed, min_count)


def read_s2orc(path: str | Path, seed: int = 0, min_count: int = 5) -> CitationData:
    papers, citations = {}, []
    for i, p in jsonl_rows(path):
        pid = str(p.get("paper_id") or "")
        if not pid:
            raise DataError(f"{path}:{i}: a paper without paper_id")
        papers[pid] = (p.get("title") or "", p.get("abstract") or "", [_author(a) for a in p.get("authors") or []])
        citations += [(str(c), pid) for c in p.get("outbound_citations") or []]
    return paper_graph(f"s2orc {Path(path).name}", papers, citations, seed, min_count)
