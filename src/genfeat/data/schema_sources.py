"""The universal-schema matrices by name (thesis C §3.3; spec multi-facet-universal-schema.md §4, §10), as a run
config's `data.*` section names them, with the word vectors of their tokens.

    load_schema(SchemaDataConfig, seed, vectors_wanted) -> (SchemaMatrix, SyntheticSchema | None, vectors | None)

    synthetic   the spec §10.1 generator (`data.schema_synthetic`) drawn for the run's seed; its words get seeded
                random vectors `synthetic_vectors` wide (only when `vectors_wanted`: Ω reads them)
    news        patterns between capitalised mentions (`data.news_patterns` over `corpus`)
    debian      the Debian archive with KB rows and held-out heads (`data.debian_schema`, `split_seed`)
    wordnet     WordNet's 26 pointer types as KB rows (`data.wordnet_schema`, `split_seed`)

Real sources read `vectors` (glove-6b-50d or a GloVe / word2vec text file): a row per matrix token, zeros where it
has none. `token_probs(matrix)`: p(w) of Eq. B.2 counted on the matrix's rows.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from genfeat.data.debian_schema import debian_schema
from genfeat.data.news_patterns import news_patterns
from genfeat.data.schema_synthetic import SyntheticSchema, SyntheticSchemaConfig, synthetic_schema
from genfeat.data.universal_schema import SchemaMatrix
from genfeat.data.word_vectors import vocab_vectors
from genfeat.data.wordnet_schema import wordnet_schema
from genfeat.errors import ConfigError

PAIR_INITS = ("data", "uschema", "random")


@dataclass(frozen=True)
class SchemaDataConfig:
    source: str = "synthetic"  # synthetic (spec §10.1) | news (`data.news_patterns` over `corpus`) | debian
    #                            (`data.debian_schema`) | wordnet (`data.wordnet_schema`): KB rows, held-out heads
    #                            drawn by `split_seed`
    split_seed: int = 0
    synthetic: SyntheticSchemaConfig = field(default_factory=SyntheticSchemaConfig)
    synthetic_vectors: int = 16  # synthetic: the width of the random word vectors Ω reads (with gamma > 0)
    corpus: str = "bbc-news+wiki"  # news: `data.sentences.documents`' corpora
    min_pairs: int = 1  # news: a pattern's fewest distinct entity pairs
    vectors: str = "glove-6b-50d"  # news: the fixed word vectors (encoder start, Ω): glove-6b-50d or a file
    batch_size: int = 64  # instances (each up to max_pairs pairs of one row); the reference: 200
    max_pairs: int = 5
    valid_share: float = 0.05
    batch_groups: int = 1  # negative pools per batch: one process with G trains what G torchrun ranks do
    pair_init: str = "data"  # data (the synthetic generator's USchema-like start) | uschema | random

    def __post_init__(self) -> None:
        if self.source not in ("synthetic", "news", "debian", "wordnet"):
            raise ConfigError(f"data.source must be synthetic, news, debian or wordnet, got {self.source!r}")
        if self.pair_init not in PAIR_INITS:
            raise ConfigError(f"data.pair_init must be one of {', '.join(PAIR_INITS)}, got {self.pair_init!r}")
        if self.pair_init == "data" and self.source != "synthetic":
            raise ConfigError("data.pair_init=data is the synthetic generator's start; use uschema or random")


def load_schema(dc: SchemaDataConfig, seed: int, vectors_wanted: bool
                ) -> tuple[SchemaMatrix, SyntheticSchema | None, np.ndarray | None]:
    """(the matrix, the synthetic generator's draw or None, word vectors (n_vocab, d_word) or None); `seed` is
    the run's (the synthetic matrix and its vectors are drawn for it)."""
    if dc.source == "synthetic":
        syn = synthetic_schema(dataclasses.replace(dc.synthetic, seed=dc.synthetic.seed + seed))
        rng = np.random.default_rng([dc.synthetic.seed + seed, 1])
        vecs = rng.standard_normal((len(syn.matrix.vocab), dc.synthetic_vectors)) if vectors_wanted else None
        return syn.matrix, syn, vecs
    matrix = news_patterns(dc.corpus, dc.min_pairs) if dc.source == "news" else \
        debian_schema(seed=dc.split_seed) if dc.source == "debian" else wordnet_schema(seed=dc.split_seed)
    table, found = vocab_vectors(matrix.vocab, dc.vectors)
    print(f"word vectors: {int(found.sum()):,} of {len(matrix.vocab):,} tokens ({dc.vectors})")
    return matrix, None, table


def token_probs(matrix: SchemaMatrix) -> np.ndarray:
    """p(w) of Eq. B.2 counted on the matrix's rows (the spec's fallback for corpus frequencies)."""
    counts = np.bincount(np.concatenate([np.asarray(r) for r in matrix.rows]), minlength=len(matrix.vocab))
    return counts / counts.sum()
