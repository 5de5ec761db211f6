"""Configuration of the sequence -> K facets network (thesis C §3.2.1.3; spec multi-facet-embedding.md §5)."""

from __future__ import annotations

from dataclasses import dataclass

from genfeat.errors import ConfigError


@dataclass(frozen=True)
class FacetConfig:
    vocab_size: int = 30000
    d_model: int = 300  # the transformers' hidden size (the thesis: = the GloVe dimension)
    d_target: int = 300  # |E|: the target embedding space (any frozen word-vector table)
    k: int = 10  # facets
    n_enc: int = 5
    n_dec: int = 5
    n_head: int = 10
    d_inner: int = 1200
    max_len: int = 50  # with <eos>
    dropout: float = 0.1
    attn_dropout: float | None = None  # on the attention probabilities; None: `dropout`. 0 lets CPU attention
    #                                    run SDPA's fused kernel
    encoder: str = "transformer"  # transformer | lstm / gru (bidirectional) | bow (a bag-of-words MLP, the spec's
    #   §10 diagnostic); a pretrained network plugs in through `FacetModel(encoder=...)`
    decoder: str = "transformer"  # transformer | lstm (over the K slots) | linear (the slots as they are)
    cross_attention: bool = True  # the transformer decoder's: sentences yes; phrases no (the thesis removes it)
    output: str = "shared"  # shared: one output layer for every facet (§3.2) | per_facet: K output layers G^o_k
    #   (§3.4.2: crucial against facet collapse in recommendation)
    n_types: int = 0  # token-type embeddings added to the inputs (title / abstract in §3.4); 0: none
    row_k: tuple[int, ...] = ()  # facets per row type when rows of one batch differ (universal schema §3.3:
    #   patterns 5, KB relations 11): the decoder has k = max(row_k) slots and a row of type t uses the first
    #   row_k[t] (`FacetModel.row_slot_mask`); (): every row uses all k
    pad_id: int = 0

    @property
    def attention_dropout(self) -> float:
        return self.dropout if self.attn_dropout is None else self.attn_dropout

    def __post_init__(self) -> None:
        if self.encoder not in ("transformer", "lstm", "gru", "bow"):
            raise ConfigError(f"model.encoder must be transformer, lstm, gru or bow, got {self.encoder!r}")
        if self.output not in ("shared", "per_facet"):
            raise ConfigError(f"model.output must be shared or per_facet, got {self.output!r}")
        if self.decoder not in ("transformer", "lstm", "linear"):
            raise ConfigError(f"model.decoder must be transformer, lstm or linear, got {self.decoder!r}")
        if self.d_model % self.n_head:
            raise ConfigError(f"model.d_model={self.d_model} is not divisible by model.n_head={self.n_head}")
        if self.row_k and (min(self.row_k) < 1 or max(self.row_k) != self.k):
            raise ConfigError(f"model.row_k={self.row_k}: facet counts >= 1 whose largest is model.k={self.k}")
        if min(self.k, self.n_enc, self.n_dec, self.d_target, self.max_len) < 1:
            raise ConfigError("model.k, n_enc, n_dec, d_target and max_len must be >= 1")
