"""Sequence -> K facet embeddings (thesis C §3.2.1.3, Eqs. 3.3-3.4, Figure 3.2; spec multi-facet-embedding.md §5):
an encoder (`encoders.py`) and a facet decoder (`decoder.py`), chosen independently.

    [e_1 .. e_T, e_<eos>] = TE(w_1 .. w_T <eos>)                         Eq. 3.3, the encoder
    F = TD(L_1(e_<eos>) .. L_K(e_<eos>), [e_1 .. e_<eos>])               Eq. 3.4, all K facets in one pass:
                                                                         self-attention among the K slots,
                                                                         cross-attention to the encoder states
    facets = Linear(d_model -> |E|)(F)                                   one output layer shared by the facets
                                                                         (`output="per_facet"`: K of them, §3.4.2)

`cfg.encoder` (transformer | lstm | bow) and `cfg.decoder` (transformer | lstm | linear) pick the parts; the
thesis's network is transformer + transformer (with `cross_attention=False` for phrases), `bow` + `linear` the
spec's §10 diagnostic. `encoder=` takes any module returning `encoders.Encoded` instead, a pretrained GPT decoder
or BERT through `encoders.BackboneEncoder`. Inputs are left-padded so <eos> is the last position (pad_id masked as
keys). Layers: BERT-style post-LN blocks (`models/bert`'s), GELU, SDPA.

`cfg.row_k` gives rows of different types different facet counts in one batch (a pattern and a KB relation):
`row_slot_mask(row_types)` is the prefix slot mask to pass to `forward`.

Shapes: input_ids (B, T), type_ids (B, T) (with `cfg.n_types`), slot_mask (B, K) -> facets (B, K, |E|); `run`
returns the slots and decoder states too.
Deviations: a key-padding mask (the reference attends to padding). The training choices that differ from the
thesis at CPU scale (width 50 from GloVe 6B 50d instead of 300, 2 + 2 layers instead of 5 + 5, AdamW with a cosine
schedule, clipping at 1.0 against the reference's 0.25) are the recipe's, listed in `recipes/facets.py`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from genfeat.models.facets.config import FacetConfig
from genfeat.models.facets.decoder import DECODERS, FacetOutput
from genfeat.models.facets.encoders import ENCODERS, Encoded


class FacetModel(nn.Module):
    def __init__(self, cfg: FacetConfig, init_embedding: Tensor | None = None, encoder: nn.Module | None = None):
        """`init_embedding` (vocab_size, d_model): the input table's start (the built encoders'); `encoder`: a
        module of your own with `d_out` and forward(input_ids) -> Encoded, instead of `cfg.encoder`'s."""
        super().__init__()
        self.cfg = cfg
        self.encoder = encoder if encoder is not None else ENCODERS[cfg.encoder](cfg, init_embedding)
        self.decoder = DECODERS[cfg.decoder](cfg, self.encoder.d_out)

    def row_slot_mask(self, row_types: Tensor) -> Tensor:
        """(B,) row types -> the (B, K) prefix slot mask of `cfg.row_k` (row type t: its first row_k[t] slots)."""
        if not self.cfg.row_k:
            raise ValueError("model.row_k is not set: every row uses all model.k slots")
        counts = torch.tensor(self.cfg.row_k, device=row_types.device)[row_types]  # (B,)
        return torch.arange(self.cfg.k, device=row_types.device)[None] < counts[:, None]

    def encode(self, input_ids: Tensor, type_ids: Tensor | None = None) -> Encoded:
        return self.encoder(input_ids) if type_ids is None else self.encoder(input_ids, type_ids)

    def run(self, input_ids: Tensor, slot_mask: Tensor | None = None, type_ids: Tensor | None = None
            ) -> FacetOutput:
        return self.decoder(self.encode(input_ids, type_ids), slot_mask)

    def forward(self, input_ids: Tensor, slot_mask: Tensor | None = None, type_ids: Tensor | None = None) -> Tensor:
        """Facets (B, K, |E|), not normalised (training leaves their norms free)."""
        return self.run(input_ids, slot_mask, type_ids).facets
