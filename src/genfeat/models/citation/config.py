"""Configuration of the multi-facet paper recommender (thesis C §3.4.2-3.4.3; spec citation-prediction.md §5-6):
the facet network's options (`FacetConfig`: `--model.k`, `--model.encoder transformer|gru|...`) and its own."""

from __future__ import annotations

from dataclasses import dataclass

from genfeat.errors import ConfigError
from genfeat.models.facets.config import FacetConfig


@dataclass(frozen=True)
class CitationConfig(FacetConfig):
    vocab_size: int = 20000
    d_model: int = 200  # §3.4.3.1: hidden size 200 = the author / citer embedding size
    d_target: int = 200
    k: int = 5
    n_enc: int = 3
    n_dec: int = 3
    n_head: int = 4
    d_inner: int = 800
    max_len: int = 512  # words, with <sep> and <eos>
    output: str = "per_facet"  # G^o_k (§3.4.2)
    n_types: int = 2  # title / abstract
    magnitudes: bool = True  # the TM + two-MLP magnitude heads of Eq. 3.15; False: p^a = p^c = p
    magnitude_dropout: float = 0.3  # inside TM (the reference's)
    positive_magnitudes: bool = False  # the reference's are unconstrained; True: softplus
    truncate: bool = True  # Eq. 3.13's clip at 0
    column_init_std: float = 0.1  # author / citer embeddings start small (spec pitfall 3: scores start near 0)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.column_init_std <= 0:
            raise ConfigError("model.column_init_std must be > 0")
