"""The citation graphs by name (thesis C §3.4; spec citation-prediction.md §3, §13), as a run config's `data.*`
section names them, with the fixed word vectors of their vocabulary.

    load_citations(CitationDataConfig, seed) -> (CitationData, vectors (n_vocab, d_word) | None)

    synthetic       the spec §13 generator (`data.citation_synthetic`) drawn for the run's seed; no word vectors
    debian          the Debian archive's citation graph (`data.debian_citations`, after `genfeat data fetch
                    debian-packages`), its cold-start split drawn by `split_seed`
    specter:DIR     SPECTER / SciDocs files (`data.citation_readers.read_specter`)
    s2orc:FILE      S2ORC-style JSONL (`data.citation_readers.read_s2orc`)
    archives:DIR    reviewer archives in openreview-expertise's layout (`data.openreview`; authorship only)

Real sources read `vectors` (glove-6b-50d or a GloVe / word2vec text file): a row per vocabulary word, zeros where
it has none.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from genfeat.data.citation_readers import read_s2orc, read_specter
from genfeat.data.citation_synthetic import SyntheticCitationConfig, synthetic_citations
from genfeat.data.citations import CitationData
from genfeat.data.debian_citations import debian_citations
from genfeat.data.openreview import archive_citations
from genfeat.data.word_vectors import vocab_vectors
from genfeat.errors import ConfigError

READERS = {"archives": archive_citations, "specter": read_specter, "s2orc": read_s2orc}  # data.source KIND:PATH


@dataclass(frozen=True)
class CitationDataConfig:
    source: str = "synthetic"  # synthetic | debian (`data.debian_citations`, after `genfeat data fetch
    #                            debian-packages`) | archives:DIR (reviewer archives, `data.openreview`: authorship)
    #                            | specter:DIR | s2orc:FILE (`data.citation_readers`)
    synthetic: SyntheticCitationConfig = field(default_factory=SyntheticCitationConfig)
    split_seed: int = 0  # debian: the cold-start split's seed
    vectors: str = "glove-6b-50d"  # debian: the fixed word vectors (encoder start, Ω, CBOW): glove-6b-50d or a
    #                                GloVe / word2vec text file
    batch_size: int = 64  # positive pairs per step, each with its negative paper

    def __post_init__(self) -> None:
        if self.source not in ("synthetic", "debian") and self.source.split(":", 1)[0] not in READERS:
            raise ConfigError(f"data.source must be synthetic, debian, archives:DIR, specter:DIR or s2orc:FILE, got "
                              f"{self.source!r}")


def load_citations(dc: CitationDataConfig, seed: int) -> tuple[CitationData, np.ndarray | None]:
    """(the data, the fixed word vectors of its vocabulary (zeros for words without one) or None); `seed` is the
    run's (the synthetic graph is drawn for it)."""
    if dc.source == "synthetic":
        return synthetic_citations(dataclasses.replace(dc.synthetic, seed=dc.synthetic.seed + seed)).data, None
    kind, _, path = dc.source.partition(":")
    data = READERS[kind](path, seed=dc.split_seed) if kind in READERS else debian_citations(seed=dc.split_seed)
    table, found = vocab_vectors(data.vocab, dc.vectors)
    print(f"word vectors: {int(found.sum()):,} of {len(data.vocab):,} words ({dc.vectors})")
    return data, table
