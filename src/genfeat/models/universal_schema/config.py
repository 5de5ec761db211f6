"""Configuration of multi-facet universal schema (thesis C §3.3.1.2; spec multi-facet-universal-schema.md §4): the
facet network's options (`FacetConfig`: `--model.encoder transformer|lstm`, widths, layers) and its own."""

from __future__ import annotations

from dataclasses import dataclass

from genfeat.errors import ConfigError
from genfeat.losses.nnsc import ASSIGN
from genfeat.models.facets.config import FacetConfig

KINDS = ("multi_facet", "uschema", "cuschema")


@dataclass(frozen=True)
class UniversalSchemaConfig(FacetConfig):
    kind: str = "multi_facet"  # multi_facet (ours; k = k_rel = 1: the single-facet ablation) | uschema (a
    #                            lookup row per pattern, logistic loss) | cuschema (an LSTM row encoder, one
    #                            embedding, logistic loss; Verga et al. 2016's compositional universal schema)
    vocab_size: int = 30000
    d_model: int = 300  # = the GloVe width (the reference)
    d_target: int = 300  # the entity-pair embedding width
    k: int = 5  # facets per sentence pattern
    k_rel: int = 11  # facets per KB relation
    n_enc: int = 3
    n_dec: int = 3
    n_head: int = 10
    d_inner: int = 1200
    max_len: int = 22  # 20 pattern tokens (the reference drops longer ones) + <eos>, with room for a relation
    dropout: float = 0.3
    assign: str = "min_dist"  # the facet of a pair: min_dist (Algorithm 2) | max_cos (the reference code)
    pair_init_std: float = 0.1  # the entity-pair table when it does not start from a USchema run

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind not in KINDS:
            raise ConfigError(f"model.kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if min(self.k, self.k_rel) < 1:
            raise ConfigError("model.k and model.k_rel must be >= 1")
        if self.assign not in ASSIGN:
            raise ConfigError(f"model.assign must be one of {', '.join(ASSIGN)}, got {self.assign!r}")

    def facet_config(self) -> FacetConfig:
        """The facet network's config: max(k, k_rel) decoder slots, patterns (row type 0) the first k, KB
        relations (row type 1) the first k_rel."""
        return FacetConfig(**{f: getattr(self, f) for f in FacetConfig.__dataclass_fields__} |
                           {"k": max(self.k, self.k_rel), "row_k": (self.k, self.k_rel)})
