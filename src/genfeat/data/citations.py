"""Papers, their authors and their citing papers, split for cold-start prediction (thesis C §3.4.1.1, §3.4.3.1,
Appendix B.4-B.5; spec citation-prediction.md §3, §5.1, §7).

    CitationData        papers as word ids ("title <sep> abstract <eos>", left-padded) with type ids (0 title,
                        1 abstract), a split per paper (train / valid / test), authorship pairs (paper, author) and
                        citation pairs (paper, citing paper), the training papers' word counts (SIF weights)
    paper_inputs        texts -> ids: lower-cased word tokens (a regular expression, not spaCy: a documented
                        deviation), words seen fewer than `min_count` times in the training papers -> <unk>, at
                        most `max_words` words, the title alone when the abstract is empty
    prune_columns       authors with fewer than 2 papers, citing papers with fewer than 5 citations removed (before
                        the split, as §3.4.3.1)
    cold_start_split    test = `test_fraction` of the eligible papers (the thesis: those with >= 5 authors), drawn by
                        group (papers of one group, e.g. the binary packages of one Debian source package, never
                        straddle a split), validation = `valid_fraction` of the remaining groups

Cold start: only training papers' pairs are trained on (`pairs(kind, "train")`); a valid / test paper's rows are
only ever evaluated.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genfeat.config import atomic_write_text
from genfeat.errors import DataError

PAD, UNK, SEP, EOS = 0, 1, 2, 3
SPECIALS = ("<pad>", "<unk>", "<sep>", "<eos>")
SPLITS = ("train", "valid", "test")
KINDS = ("author", "citer")
_WORD = re.compile(r"[a-z0-9]+(?:['.+-][a-z0-9]+)*|[^\sa-z0-9]")


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits with inner ' . + -, or one other symbol)."""
    return _WORD.findall(text.lower())


@dataclass
class CitationData:
    name: str
    input_ids: np.ndarray  # (n_papers, T) int64, left-padded with PAD
    type_ids: np.ndarray  # (n_papers, T) int64: 0 title (and <sep>), 1 abstract (and <eos>)
    split: np.ndarray  # (n_papers,) int8: index into SPLITS
    authorship: np.ndarray  # (P_a, 2) int64: paper, author
    citations: np.ndarray  # (P_c, 2) int64: paper, citing paper
    n_authors: int
    n_citers: int
    vocab: list[str]
    paper_names: list[str] = field(default_factory=list)
    author_names: list[str] = field(default_factory=list)
    citer_names: list[str] = field(default_factory=list)
    citation_types: np.ndarray | None = None  # (P_c,) int8: index into type_names (a dependency field)
    type_names: list[str] = field(default_factory=list)
    source: str = ""  # the `genfeat data` source it was built from
    notes: dict = field(default_factory=dict)  # counts of what the build dropped and why

    def __post_init__(self) -> None:
        n = len(self.input_ids)
        if self.type_ids.shape != self.input_ids.shape or self.split.shape != (n,):
            raise DataError(f"{self.name}: input_ids {self.input_ids.shape}, type_ids {self.type_ids.shape} and "
                            f"split {self.split.shape} disagree")
        for kind, pairs, m in (("author", self.authorship, self.n_authors), ("citer", self.citations, self.n_citers)):
            if len(pairs) and (pairs[:, 0].min() < 0 or pairs[:, 0].max() >= n or pairs[:, 1].min() < 0
                               or pairs[:, 1].max() >= m):
                raise DataError(f"{self.name}: a {kind} pair names a paper outside [0, {n}) or a column outside "
                                f"[0, {m})")

    @property
    def n_papers(self) -> int:
        return len(self.input_ids)

    def papers(self, split: str) -> np.ndarray:
        """Indices of the split's papers, ascending."""
        return np.flatnonzero(self.split == SPLITS.index(split))

    def pairs(self, kind: str, split: str | None = None) -> np.ndarray:
        """(P, 2) pairs of `kind` (author | citer), only those whose paper is in `split` when given."""
        pairs = self.authorship if kind == "author" else self.citations
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        return pairs if split is None else pairs[self.split[pairs[:, 0]] == SPLITS.index(split)]

    def n_columns(self, kind: str) -> int:
        return self.n_authors if kind == "author" else self.n_citers

    def word_probs(self) -> np.ndarray:
        """(V,) p(w) over the training papers' tokens (specials excluded), for the SIF weights ν / (ν + p(w))."""
        ids = self.input_ids[self.split == 0].ravel()
        counts = np.bincount(ids[ids >= len(SPECIALS)], minlength=len(self.vocab)).astype(np.float64)
        return counts / max(counts.sum(), 1.0)

    def stats(self) -> dict[str, int]:
        out = {"papers": self.n_papers, "authors": self.n_authors, "citers": self.n_citers,
               "authorship_pairs": len(self.authorship), "citation_pairs": len(self.citations),
               "vocab": len(self.vocab)}
        return out | {f"{s}_papers": int((self.split == i).sum()) for i, s in enumerate(SPLITS)}

    @property
    def checksum(self) -> str:
        """sha256 of the arrays and the names (the ids, splits and pairs a result was measured on)."""
        h = hashlib.sha256()
        for a in (self.input_ids, self.type_ids, self.split, self.authorship, self.citations,
                  *(() if self.citation_types is None else (self.citation_types,))):
            h.update(str(a.shape).encode())
            h.update(np.ascontiguousarray(a).astype(np.int64).tobytes())
        for names in (self.vocab, self.paper_names, self.author_names, self.citer_names, self.type_names):
            h.update(json.dumps(names, ensure_ascii=False).encode())
        return h.hexdigest()

    def describe(self) -> dict:
        return {"task": self.name, "source": self.source, "sizes": self.stats(), "sha256": self.checksum,
                **self.notes}

    def write(self, out: str | Path) -> list[Path]:
        """citations.npz (the arrays) and citations.json (the names, the description)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        arrays = {"input_ids": self.input_ids, "type_ids": self.type_ids, "split": self.split,
                  "authorship": self.authorship, "citations": self.citations}
        if self.citation_types is not None:
            arrays["citation_types"] = self.citation_types
        np.savez_compressed(out / "citations.npz", **arrays)
        names = {"vocab": self.vocab, "papers": self.paper_names, "authors": self.author_names,
                 "citers": self.citer_names, "citation_types": self.type_names, "describe": self.describe()}
        atomic_write_text(out / "citations.json", json.dumps(names, ensure_ascii=False) + "\n")
        return [out / "citations.npz", out / "citations.json"]

    def summary(self) -> str:
        s = self.stats()
        return (f"{self.name}: {s['papers']:,} papers ({s['train_papers']:,} train / {s['valid_papers']:,} valid / "
                f"{s['test_papers']:,} test), {s['authors']:,} authors ({s['authorship_pairs']:,} pairs), "
                f"{s['citers']:,} citing papers ({s['citation_pairs']:,} pairs), {s['vocab']:,} words")


def paper_inputs(titles: Sequence[str], abstracts: Sequence[str], train: np.ndarray, min_count: int = 5,
                 max_words: int = 512, vocab: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(input_ids, type_ids, vocab): "title <sep> abstract <eos>" (the title and <eos> alone when the abstract is
    empty), at most `max_words` words (the abstract cut first), left-padded. The vocabulary (`vocab` to reuse one)
    is the specials and the words seen >= `min_count` times in the papers where `train` is True, by frequency."""
    if len(titles) != len(abstracts) or len(train) != len(titles):
        raise ValueError(f"{len(titles)} titles, {len(abstracts)} abstracts and {len(train)} train flags")
    toks = [(words(t), words(a)) for t, a in zip(titles, abstracts, strict=True)]
    if vocab is None:
        counts = Counter(w for (t, a), tr in zip(toks, train, strict=True) if tr for w in (*t, *a))
        vocab = [*SPECIALS, *sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))]
    index = {w: i for i, w in enumerate(vocab)}
    rows, types = [], []
    for t, a in toks:
        t = t[:max_words]
        a = a[: max_words - len(t)]
        ids = [index.get(w, UNK) for w in t] + ([SEP] + [index.get(w, UNK) for w in a] if a else []) + [EOS]
        ty = [0] * (len(t) + (1 if a else 0)) + [1] * len(a) + [1 if a else 0]
        rows.append(ids)
        types.append(ty)
    width = max(len(r) for r in rows)
    input_ids = np.full((len(rows), width), PAD, dtype=np.int64)
    type_ids = np.zeros((len(rows), width), dtype=np.int64)
    for i, (r, ty) in enumerate(zip(rows, types, strict=True)):
        input_ids[i, width - len(r):], type_ids[i, width - len(r):] = r, ty
    return input_ids, type_ids, list(vocab)


def prune_columns(pairs: np.ndarray, min_papers: int) -> tuple[np.ndarray, np.ndarray]:
    """Drop the columns with fewer than `min_papers` distinct papers; (kept pairs with columns renumbered 0..m-1 in
    their old order, the kept old column ids)."""
    pairs = np.unique(pairs, axis=0)
    cols, count = np.unique(pairs[:, 1], return_counts=True)
    keep = cols[count >= min_papers]
    kept = pairs[np.isin(pairs[:, 1], keep)]
    return np.stack([kept[:, 0], np.searchsorted(keep, kept[:, 1])], 1), keep


def cold_start_split(eligible: np.ndarray, groups: np.ndarray | None = None, test_fraction: float = 0.1,
                     valid_fraction: float = 0.1, seed: int = 0) -> np.ndarray:
    """(n,) int8 split per paper (module docstring). A group is eligible for test when any of its papers is;
    test takes round(test_fraction x the eligible papers) papers' worth of whole groups, drawn at random."""
    n = len(eligible)
    groups = np.arange(n) if groups is None else np.asarray(groups)
    if groups.shape != (n,):
        raise ValueError(f"groups {groups.shape} must be ({n},)")
    rng = np.random.default_rng(seed)
    uniq, inverse = np.unique(groups, return_inverse=True)
    size = np.bincount(inverse)
    elig = np.bincount(inverse, weights=eligible.astype(float)) > 0
    split = np.zeros(n, dtype=np.int8)

    def take(candidates: np.ndarray, papers: int, label: int) -> None:
        order = rng.permutation(candidates)
        chosen = order[: int(np.searchsorted(np.cumsum(size[order]), papers, side="left")) + 1] if papers else []
        split[np.isin(inverse, chosen)] = label

    take(np.flatnonzero(elig), round(test_fraction * int(eligible.sum())), 2)
    rest = np.setdiff1d(np.arange(len(uniq)), np.unique(inverse[split == 2]))
    take(rest, round(valid_fraction * int(size[rest].sum())), 1)
    return split
