"""The synthetic universal-schema matrix of spec multi-facet-universal-schema.md §10.1 (deterministic per seed):
patterns that express one or two KB relations, so that one pattern embedding cannot sit near the entity pairs of
both (the case K facets are for).

    relations   `n_relations` (8) with orthonormal centres μ_r in R^`dim` (16) (QR of a Gaussian matrix)
    pairs       `pairs_per_relation` (200) entity pairs per relation, each with exactly one relation; the "USchema-
                like" start of the entity-pair table e_j = μ_r(j) + `init_noise` (0.15) ε (Algorithm 2 starts from a
                USchema run; from a random start the reference configuration learned no facets in its budget)
    patterns    `n_patterns` (1,500): a relation set of size 1 or 2 (`two_relation_prob` ½), one of the
                relation's `keywords_per_relation` (4) keywords per relation + `fillers_per_pattern` (2) of
                `n_fillers` (10) filler tokens, shuffled; co-occurring with `pairs_per_pattern` (5) distinct pairs
                drawn uniformly from the pairs of its relations
    KB rows     with `kb_rows`: one row per relation (its token "rel_r"), co-occurring with all its pairs
    probes      `n_probes` (300) held-out two-relation patterns A = {kw(r1), kw(r2), fillers} and their subsets
                B = A without kw(r2) (one relation, r1): the §10.2 claims U1-U4
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from genfeat.data.universal_schema import PATTERN, RELATION, SPECIALS, SchemaMatrix, left_padded


@dataclass(frozen=True)
class SyntheticSchemaConfig:
    n_relations: int = 8
    dim: int = 16
    pairs_per_relation: int = 200
    keywords_per_relation: int = 4
    n_fillers: int = 10
    fillers_per_pattern: int = 2
    n_patterns: int = 1500
    pairs_per_pattern: int = 5
    two_relation_prob: float = 0.5
    kb_rows: bool = True
    init_noise: float = 0.15
    n_probes: int = 300
    seed: int = 0


@dataclass
class SyntheticSchema:
    matrix: SchemaMatrix
    centres: np.ndarray  # (R, dim) orthonormal
    pair_relation: np.ndarray  # (n_pairs,)
    pair_init: np.ndarray  # (n_pairs, dim) the USchema-like start
    probe_two: np.ndarray  # (n_probes, T) input ids of the two-relation probes A
    probe_one: np.ndarray  # (n_probes, T) of their one-relation subsets B
    probe_relations: np.ndarray  # (n_probes, 2) r1 (B's), r2
    relation_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # (R,) the KB rows, if any


def synthetic_schema(cfg: SyntheticSchemaConfig = SyntheticSchemaConfig()) -> SyntheticSchema:
    rng = np.random.default_rng(cfg.seed)
    R = cfg.n_relations
    centres = np.linalg.qr(rng.standard_normal((cfg.dim, R)))[0].T  # (R, dim) orthonormal rows
    pair_relation = np.repeat(np.arange(R), cfg.pairs_per_relation)
    pair_init = centres[pair_relation] + cfg.init_noise * rng.standard_normal((len(pair_relation), cfg.dim))

    keywords = [[f"kw{r}_{i}" for i in range(cfg.keywords_per_relation)] for r in range(R)]
    fillers = [f"filler{i}" for i in range(cfg.n_fillers)]
    relation_tokens = [f"rel_{r}" for r in range(R)]
    vocab = [*SPECIALS, *(w for ks in keywords for w in ks), *fillers, *relation_tokens]
    tok = {w: i for i, w in enumerate(vocab)}
    pairs_of = [np.flatnonzero(pair_relation == r) for r in range(R)]

    def pattern(rels: list[int]) -> list[int]:
        words = [keywords[r][rng.integers(cfg.keywords_per_relation)] for r in rels]
        words += list(rng.choice(fillers, cfg.fillers_per_pattern, replace=False))
        return [tok[w] for w in rng.permutation(words)]

    rows, types, cells = [], [], []
    for i in range(cfg.n_patterns):
        rels = list(rng.choice(R, 2 if rng.random() < cfg.two_relation_prob else 1, replace=False))
        rows.append(tuple(pattern(rels)))
        types.append(PATTERN)
        pool = np.concatenate([pairs_of[r] for r in rels])
        cells += [(i, j) for j in rng.choice(pool, cfg.pairs_per_pattern, replace=False)]
    relation_rows = []
    if cfg.kb_rows:
        for r in range(R):
            relation_rows.append(len(rows))
            cells += [(len(rows), j) for j in pairs_of[r]]
            rows.append((tok[relation_tokens[r]],))
            types.append(RELATION)

    two, one, rels = [], [], []
    for _ in range(cfg.n_probes):
        r1, r2 = (int(r) for r in rng.choice(R, 2, replace=False))
        k1, k2 = (tok[keywords[r][rng.integers(cfg.keywords_per_relation)]] for r in (r1, r2))
        fill = [tok[w] for w in rng.choice(fillers, cfg.fillers_per_pattern, replace=False)]
        a = [int(t) for t in rng.permutation([k1, k2, *fill])]
        two.append(a)
        one.append([t for t in a if t != k2])
        rels.append((r1, r2))
    matrix = SchemaMatrix(
        name=f"synthetic universal schema (seed {cfg.seed})", vocab=vocab, rows=rows,
        row_types=np.asarray(types, dtype=np.int64), row_names=[" ".join(vocab[t] for t in r) for r in rows],
        pair_names=[f"pair{j}" for j in range(len(pair_relation))], cells=np.asarray(cells, dtype=np.int64))
    return SyntheticSchema(matrix, centres, pair_relation, pair_init.astype(np.float32), left_padded(two),
                           left_padded(one), np.asarray(rels, dtype=np.int64),
                           np.asarray(relation_rows, dtype=np.int64))
