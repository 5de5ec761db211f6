"""A citation graph from the Debian archive's package lists (`genfeat data build debian-citations`; thesis C
§3.4.3.1's S2ORC graph transferred, spec citation-prediction.md §7): deterministic for a given archive snapshot and
seed.

    paper      a binary package described in Translation-en: the synopsis as title, the long description as
               abstract (`debian_sections.described_packages`)
    author     the Maintainer, one identity per lower-cased e-mail address (binary Packages lists carry no
               Uploaders, so every package has one author: a documented deviation)
    citation   package P cites Q when P Depends / Pre-Depends / Recommends / Suggests on Q and Q is in the set
               (every alternative of an "a | b" counts; version and architecture qualifiers dropped; virtual
               packages are not resolved to their providers); the citing package P is the column, so the task
               ranks, for a new package Q, the existing packages that would depend on it; the strongest field is
               kept as the edge type (in the order above)
    group      the Source package (the binary name when Source is absent): the binary packages of one source
               never straddle a split, which keeps a -dev, -doc, -dbg or -data package with its library

Rules, in order:
1. one record per package name, the first in Packages' order;
2. dropped: transitional and dummy packages (the synopsis says "transitional" or "dummy"), and packages whose
   text repeats an earlier package's (by name) word for word;
3. citations inside the kept set, self-citations dropped; authors with fewer than `min_author_papers` (2)
   packages and citing packages with fewer than `min_citations` (5) citations removed, before the split
   (§3.4.3.1);
4. test = `test_fraction` (10 %) of the packages with >= 5 citing packages (the thesis's "papers with >= 5
   authors" adapted: one author per package here), drawn by source group; validation = `valid_fraction` (10 %) of
   the remaining groups (`citations.cold_start_split`);
5. text: `citations.paper_inputs` with the vocabulary of the training packages (words seen >= 5 times).

Test packages are cold: their authorship and citation rows are only evaluated (`CitationData.pairs(kind,
"train")` holds training papers only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genfeat.data.citations import CitationData, cold_start_split, paper_inputs, prune_columns
from genfeat.data.debian_sections import described_packages, description_parts
from genfeat.data.sources import require

CITE_FIELDS = ("Depends", "Pre-Depends", "Recommends", "Suggests")
_DUMMY = re.compile(r"\b(transitional|dummy)\b", re.IGNORECASE)
_EMAIL = re.compile(r"<([^>]+)>")


def maintainer_id(field: str) -> str:
    """The lower-cased e-mail address of a Maintainer field (the whole field, lower-cased, without one)."""
    m = _EMAIL.search(field)
    return (m.group(1) if m else field).strip().lower()


def dependency_names(field: str) -> list[str]:
    """Package names of a dependency field, every alternative, without versions or architecture qualifiers."""
    names = []
    for alt in re.split(r"[,|]", field):
        name = alt.strip().split(" ", 1)[0].split("(", 1)[0].split(":", 1)[0].split("[", 1)[0]
        if name:
            names.append(name)
    return names


@dataclass
class DebianGraph:
    """Rules 1-3's first half (module docstring): the kept packages, their Packages paragraphs and descriptions,
    and every dependency edge inside the set (cited, citing) -> the strongest field's index in CITE_FIELDS."""

    names: list[str]
    paras: list[dict[str, str]]
    descriptions: list[str]
    edges: dict[tuple[int, int], int]
    notes: dict[str, int]

    def texts(self) -> tuple[list[str], list[str]]:
        """(titles, abstracts): each package's synopsis and long description (`debian_sections.description_parts`)."""
        parts = [description_parts(d) for d in self.descriptions]
        return [t for t, _ in parts], [a for _, a in parts]

    def sections(self) -> list[str]:
        """Each package's Section without its archive area ("contrib/net" -> "net"; "" when absent)."""
        return [p.get("Section", "").rsplit("/", 1)[-1] for p in self.paras]


def debian_graph(root: str | Path | None = None) -> DebianGraph:
    base = Path(root) if root is not None else require("debian-packages", "Packages", "Translation-en")
    described = described_packages(base)
    kept, seen, dummy, repeated = [], set(), 0, 0
    for name in sorted(described):
        para, desc = described[name]
        if _DUMMY.search(description_parts(desc)[0]):
            dummy += 1
            continue
        text = " ".join(desc.split())
        if text in seen:
            repeated += 1
            continue
        seen.add(text)
        kept.append(name)
    index = {n: i for i, n in enumerate(kept)}
    paras = [described[n][0] for n in kept]
    edges: dict[tuple[int, int], int] = {}  # (cited paper, citing package) -> strongest field
    for i, p in enumerate(paras):
        for t, f in enumerate(CITE_FIELDS):
            for dep in dependency_names(p.get(f, "")):
                j = index.get(dep)
                if j is not None and j != i:
                    edges.setdefault((j, i), t)
    return DebianGraph(kept, paras, [described[n][1] for n in kept], edges,
                       {"packages_described": len(described), "dropped_transitional_or_dummy": dummy,
                        "dropped_repeated_texts": repeated})


def debian_citations(root: str | Path | None = None, seed: int = 0, min_author_papers: int = 2,
                     min_citations: int = 5, test_fraction: float = 0.1, valid_fraction: float = 0.1,
                     min_count: int = 5, max_words: int = 512) -> CitationData:
    graph = debian_graph(root)
    kept, paras, edges = graph.names, graph.paras, graph.edges

    authors = sorted({maintainer_id(p.get("Maintainer", "")) for p in paras})
    a_index = {a: i for i, a in enumerate(authors)}
    authorship = np.array([[i, a_index[maintainer_id(p.get("Maintainer", ""))]] for i, p in enumerate(paras)],
                          dtype=np.int64).reshape(-1, 2)
    pairs = np.array(sorted(edges), dtype=np.int64).reshape(-1, 2)

    authorship, author_ids = prune_columns(authorship, min_author_papers)
    citations, citer_ids = prune_columns(pairs, min_citations)
    old = citer_ids[citations[:, 1]]
    types = np.array([edges[(int(q), int(c))] for q, c in zip(citations[:, 0], old, strict=True)], dtype=np.int8)

    citers = np.bincount(citations[:, 0], minlength=len(kept))
    groups = np.array([p.get("Source", n).split(" ", 1)[0] for n, p in zip(kept, paras, strict=True)])
    split = cold_start_split(citers >= 5, groups, test_fraction, valid_fraction, seed)
    titles, abstracts = graph.texts()
    input_ids, type_ids, vocab = paper_inputs(titles, abstracts, split == 0, min_count, max_words)
    notes = {**graph.notes, "min_author_papers": min_author_papers,
             "min_citations": min_citations, "split_seed": seed,
             "test_eligible": int((citers >= 5).sum()), "source_groups": len(set(groups.tolist()))}
    return CitationData("debian-citations", input_ids, type_ids, split, authorship, citations, len(author_ids),
                        len(citer_ids), vocab, paper_names=kept, author_names=[authors[i] for i in author_ids],
                        citer_names=[kept[i] for i in citer_ids], citation_types=types,
                        type_names=list(CITE_FIELDS), source="debian-packages", notes=notes)
