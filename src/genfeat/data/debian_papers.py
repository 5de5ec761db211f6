"""The Debian archive as papers with citations and fields, for Multi²SPE and its Multi-SciDocs-style benchmark
(thesis C §5.3.2-5.3.3, App. D.2; spec multi2spe.md §5-§6), from the same packages as the citation graph
(`data.debian_citations.debian_graph`: dummy, transitional and repeated packages dropped).

    paper      a package: its synopsis as title, its long description as abstract
    citation   package P cites Q when P Depends / Pre-Depends / Recommends / Suggests on Q (the outgoing list, as a
               paper's references)
    field      its Section without the archive area ("libs", "python", "devel", ...): the MAG field's stand-in, for
               field classification and for single- vs multi-domain training queries

`domain_queries` draws query papers from a pool: `field` given, that field's papers only (the thesis's
single-domain SPECTER set, CS there); else at most `max_share` of the queries from any one field (the
multi-domain set, whose builders keep any one field from dominating).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genfeat.data.debian_citations import debian_graph
from genfeat.errors import DataError


@dataclass
class PaperGraph:
    names: list[str]
    titles: list[str]
    abstracts: list[str]
    fields: np.ndarray  # (N,) str
    cites: list[np.ndarray]  # per paper: the ids it cites, ascending

    def __len__(self) -> int:
        return len(self.names)

    def describe(self) -> dict:
        counts = {str(f): int(n) for f, n in zip(*np.unique(self.fields, return_counts=True), strict=True)}
        return {"papers": len(self), "citations": int(sum(len(c) for c in self.cites)),
                "papers_citing": int(sum(len(c) > 0 for c in self.cites)), "fields": counts}


def debian_papers(root: str | Path | None = None) -> PaperGraph:
    g = debian_graph(root)
    titles, abstracts = g.texts()
    out: list[list[int]] = [[] for _ in g.names]
    for cited, citing in g.edges:
        out[citing].append(cited)
    return PaperGraph(g.names, titles, abstracts, np.asarray(g.sections()),
                      [np.asarray(sorted(c), dtype=np.int64) for c in out])


def domain_queries(fields: np.ndarray, pool: Sequence[int], n: int, rng: np.random.Generator,
                   field: str | None = None, max_share: float = 0.2) -> np.ndarray:
    """`n` query ids from `pool` (fewer when the pool runs out): one field's (single-domain), or with at most
    `max_share` of them from any one field (multi-domain), ascending."""
    pool = np.asarray(pool, dtype=np.int64)
    if field is not None:
        mine = pool[fields[pool] == field]
        if not len(mine):
            raise DataError(f"no paper of field {field!r} in the pool")
        return np.sort(rng.choice(mine, min(n, len(mine)), replace=False))
    cap = max(1, int(max_share * n))
    taken: dict[str, int] = {}
    out = []
    for i in rng.permutation(pool):
        f = str(fields[i])
        if taken.get(f, 0) < cap:
            taken[f] = taken.get(f, 0) + 1
            out.append(int(i))
            if len(out) == n:
                break
    return np.sort(np.asarray(out, dtype=np.int64))
