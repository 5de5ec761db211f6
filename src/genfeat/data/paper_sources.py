"""The paper worlds a Multi²SPE run trains and is evaluated on (thesis C §5.3.2-5.3.3, App. D.2; spec multi2spe.md
§5-§6, §13.2), as a run config's `data.*` section names them: the papers' token ids, the training triplets and the
ranking splits.

    load_papers(PaperDataConfig, seed, encode=None) -> PaperWorld
        synthetic   the spec §13.2 multi-domain graph drawn for the run's seed (`data.paper_synthetic`): the first
                    80 % are training queries, the last `valid_fraction` of them held out for model selection;
                    splits valid, test and test_cross (the cross-domain test queries), `n_neg` negatives each
        debian      the Debian packages as papers (`data.debian_papers`, after `genfeat data fetch
                    debian-packages`): title [SEP] description through `encode` (the run's tokenizer); queries are
                    packages that cite; `test_queries` and `valid_queries` drawn multi-domain (at most `max_share`
                    of them from one Section) with `split_seed`, so every run of a benchmark ranks the same ones,
                    their negatives from an evaluation pool of `eval_pool` of the papers (SciDocs' own papers);
                    `train_queries` from the rest, one Section's (`train_field`: the single-domain set) or
                    multi-domain; splits valid (cite, `n_neg` negatives: model selection), and for each number of
                    negatives in `test_negatives` (500: Multi-SciDocs, 25: SciDocs' original size) test_cite_N and
                    test_cocite_N with up to `n_pos` positives; no test or valid query, none of their candidates
                    and no paper of the pool is in a training triplet; `field_papers` other papers of the Sections
                    with at least `field_min` packages, half to fit and half to score field classification

Triplets are SPECTER's (`data.paper_triplets.specter_triplets`: `per_query` a query, `hard_fraction` hard
negatives), drawn with the run's seed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from genfeat.data.debian_papers import debian_papers, domain_queries
from genfeat.data.paper_synthetic import SyntheticPapersConfig, synthetic_papers
from genfeat.data.paper_triplets import RankingQueries, cite_queries, cocite_queries, specter_triplets
from genfeat.errors import ConfigError, DataError

SOURCES = ("synthetic", "debian")
Encode = Callable[[Sequence[str], Sequence[str]], list[np.ndarray]]  # titles, abstracts -> each paper's ids


@dataclass(frozen=True)
class PaperDataConfig:
    source: str = "synthetic"  # synthetic (spec §13.2) | debian (the Debian packages, `data.debian_papers`)
    synthetic: SyntheticPapersConfig = field(default_factory=SyntheticPapersConfig)
    valid_fraction: float = 0.1  # synthetic: of the training queries, held out for model selection
    per_query: int = 5  # triplets per training query
    hard_fraction: float = 0.3  # SPECTER's hard negatives
    n_pos: int = 5  # positives per ranked query
    n_neg: int = 50  # sampled negatives per ranked query of the selection split (synthetic: every split)
    batch_size: int = 16
    # debian
    split_seed: int = 0  # the query draws (one set for every run seed)
    max_len: int = 128  # word pieces a paper with [CLS] / [SEP]s and the K - 1 facet tokens
    test_queries: int = 200
    valid_queries: int = 100
    train_queries: int = 4000
    train_field: str = ""  # "": multi-domain training queries; a Section (e.g. "libs"): single-domain
    max_share: float = 0.2  # multi-domain draws: at most this share of the queries from one Section
    test_negatives: tuple[int, ...] = (500, 25)  # Multi-SciDocs' and SciDocs' candidate lists
    eval_pool: float = 0.1  # the share of the papers that held-out queries' negatives are drawn from (kept out of
    #   training with the queries and their positives, as SciDocs' papers are out of SPECTER's training set)
    field_papers: int = 2000
    field_min: int = 1000  # Sections with fewer packages are not labels (1,000: the 19 largest, as MAG's 19 fields)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ConfigError(f"data.source must be one of {', '.join(SOURCES)}, got {self.source!r}")
        if not 0 < self.valid_fraction < 1 or not 0 <= self.hard_fraction <= 1 or not 0 < self.max_share <= 1 \
                or not 0 < self.eval_pool < 1:
            raise ConfigError("data.valid_fraction, eval_pool and max_share must be in (0, 1) and data.hard_fraction "
                              "in [0, 1]")
        if min(self.per_query, self.n_pos, self.n_neg, self.batch_size, self.test_queries, self.valid_queries,
               self.train_queries, *self.test_negatives or (0,)) < 1:
            raise ConfigError("data.per_query, n_pos, n_neg, batch_size, the query counts and test_negatives must be "
                              ">= 1")


@dataclass
class PaperWorld:
    papers: list[np.ndarray]  # per paper: [CLS] title [SEP] abstract [SEP] ids
    triplets: np.ndarray  # (M, 3) query, cited, not cited
    splits: dict[str, RankingQueries]  # "valid" (selection) first
    fields: np.ndarray | None = None  # (N,) str, debian
    field_split: tuple[np.ndarray, np.ndarray] | None = None  # paper ids to fit / to score field classification
    name: str = ""

    def describe(self) -> dict:
        out = {"papers": len(self.papers), "triplets": len(self.triplets),
               "queries": {k: len(v) for k, v in self.splits.items()}}
        if self.field_split is not None:
            out["field_papers"] = {"fit": len(self.field_split[0]), "score": len(self.field_split[1]),
                                   "labels": int(len(np.unique(self.fields[np.concatenate(self.field_split)])))}
        return out


def load_papers(dc: PaperDataConfig, seed: int, encode: Encode | None = None) -> PaperWorld:
    if dc.source == "synthetic":
        return synthetic_world(dc, seed)
    if encode is None:
        raise ConfigError("data.source=debian reads text: the run's tokenizer encodes it")
    return debian_world(dc, seed, encode)


def synthetic_world(dc: PaperDataConfig, seed: int) -> PaperWorld:
    graph = synthetic_papers(dataclasses.replace(dc.synthetic, seed=dc.synthetic.seed + seed))
    N = len(graph.ids)
    rng = np.random.default_rng(seed)
    n_valid = max(1, int(round(len(graph.train_queries) * dc.valid_fraction)))
    train_q, valid_q = graph.train_queries[:-n_valid], graph.train_queries[-n_valid:]
    splits = {"valid": cite_queries(graph.cites, valid_q, N, rng, dc.n_pos, dc.n_neg),
              "test": cite_queries(graph.cites, graph.test_queries, N, rng, dc.n_pos, dc.n_neg)}
    cross = graph.cross_domain[splits["test"].queries]
    splits["test_cross"] = dataclasses.replace(
        splits["test"], queries=splits["test"].queries[cross],
        positives=[p for p, c in zip(splits["test"].positives, cross, strict=True) if c],
        candidates=[p for p, c in zip(splits["test"].candidates, cross, strict=True) if c])
    triplets = specter_triplets(graph.cites, train_q, N, rng, dc.per_query, dc.hard_fraction)
    return PaperWorld([np.asarray(p) for p in graph.ids], triplets, splits, name="the synthetic multi-domain graph")


def debian_world(dc: PaperDataConfig, seed: int, encode: Encode) -> PaperWorld:
    g = debian_papers()
    N = len(g)
    split_rng = np.random.default_rng([dc.split_seed, 59])
    citing = np.flatnonzero([len(c) > 0 for c in g.cites])
    pool = np.sort(split_rng.choice(N, max(1, int(dc.eval_pool * N)), replace=False))  # held-out negatives
    test_q = domain_queries(g.fields, np.setdiff1d(citing, pool), dc.test_queries, split_rng, max_share=dc.max_share)
    rest = np.setdiff1d(citing, np.concatenate([pool, test_q]))
    valid_q = domain_queries(g.fields, rest, dc.valid_queries, split_rng, max_share=dc.max_share)
    rest = np.setdiff1d(rest, valid_q)
    splits = {"valid": cite_queries(g.cites, valid_q, N, split_rng, dc.n_pos, dc.n_neg, pool)}
    for n_neg in dc.test_negatives:
        splits[f"test_cite_{n_neg}"] = cite_queries(g.cites, test_q, N, split_rng, dc.n_pos, n_neg, pool)
        splits[f"test_cocite_{n_neg}"] = cocite_queries(g.cites, test_q, N, split_rng, dc.n_pos, n_neg, pool)
    held = np.unique(np.concatenate([pool, *(s.papers() for s in splits.values())]))
    train_pool = np.setdiff1d(rest, held)
    train_q = domain_queries(g.fields, train_pool, dc.train_queries, split_rng, field=dc.train_field or None,
                             max_share=dc.max_share if not dc.train_field else 1.0)
    if not len(train_q):
        raise DataError("no training query left after the held-out queries and their candidates")
    triplets = specter_triplets(g.cites, train_q, N, np.random.default_rng(seed), dc.per_query, dc.hard_fraction,
                                exclude=held)
    labels, counts = np.unique(g.fields, return_counts=True)
    common = set(labels[counts >= dc.field_min].tolist())
    pool = np.setdiff1d(np.flatnonzero([str(f) in common for f in g.fields]), held)
    chosen = split_rng.choice(pool, min(dc.field_papers, len(pool)), replace=False)
    half = len(chosen) // 2
    papers = encode(g.titles, g.abstracts)
    kind = f"{dc.train_field} (single-domain)" if dc.train_field else "multi-domain"
    return PaperWorld(papers, triplets, splits, g.fields, (np.sort(chosen[:half]), np.sort(chosen[half:])),
                      name=f"the Debian packages, {kind} training queries")
