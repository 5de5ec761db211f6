"""The facet decoder (thesis C §3.2.1.3, Eq. 3.4; Figure 3.2): K slots from any encoder's `Encoded` states ->
K facets, all in one pass. Separable from the encoder: the facet network's own, a GPT decoder's or a BERT's
states (`encoders.BackboneEncoder`) feed it alike.

    slots    s_k = L_k(pooled), k = 1..K                          the K input maps: weights U(-0.1, 0.1), biases
                                                                  U(-0.5, 0.5) (facets start with norm about 1,
                                                                  out of the NNSC dead zone; spec §12.1)
    mix      TransformerFacetDecoder  self-attention among the slots (+ cross-attention to the encoder states;
                                      without it, the thesis's phrase model)
             LSTMFacetDecoder         an LSTM over s_1..s_K whose initial state is a linear map of `pooled`
             LinearFacetDecoder       the slots as they are (the bag-of-words diagnostic's)
    facets   Linear(d_model -> |E|)(mixed)                        one output layer shared by the facets, or with
                                                                  `cfg.output="per_facet"` K of them, G^o_k (§3.4.2)

A slot mask (B, K) (True = a real slot) lets rows of one batch have different K (a pattern and a KB relation in
universal schema, a paper and its K citations): masked slots are never attended to, the LSTM reads them after the
real ones only (masks must be prefixes), and their facets are 0 (pass the mask on to `nnsc_loss`'s facet_mask).

Shapes: pooled (B, d_in), states (B, T, d_in), slot_mask (B, K) -> `FacetOutput` slots (B, K, d), hidden
(B, K, d), facets (B, K, |E|); d_in (the encoder's width) may differ from d = d_model (a projection maps the
states for cross-attention).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.models.bert.model import BertLayer
from genfeat.models.facets.config import FacetConfig
from genfeat.models.facets.encoders import Encoded, bert_block_config
from genfeat.nn.dropout import Dropout


@dataclass
class FacetOutput:
    slots: Tensor  # (B, K, d) the decoder's inputs L_k(pooled)
    hidden: Tensor  # (B, K, d) the decoder's output states
    facets: Tensor  # (B, K, |E|), 0 at masked slots


class CrossAttentionLayer(nn.Module):
    """Post-LN decoder block: self-attention over the K slots, cross-attention to the encoder states, FFN."""

    def __init__(self, cfg: FacetConfig):
        super().__init__()
        self.self_block = BertLayer(bert_block_config(cfg))  # self-attention + FFN, post-LN
        d = cfg.d_model
        self.n_head = cfg.n_head
        self.q, self.kv, self.out = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.drop, self.p = Dropout(cfg.dropout), cfg.attention_dropout

    def cross(self, x: Tensor, mem: Tensor, mask: Tensor | None) -> Tensor:
        B, K, D = x.shape
        H, T = self.n_head, mem.size(1)
        q = self.q(x).view(B, K, H, D // H).transpose(1, 2)  # (B, H, K, dh)
        k, v = self.kv(mem).view(B, T, 2, H, D // H).permute(2, 0, 3, 1, 4)  # 2 x (B, H, T, dh)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.p if self.training else 0.0)
        return self.ln(x + self.drop(self.out(y.transpose(1, 2).reshape(B, K, D))))

    def forward(self, x: Tensor, mem: Tensor, mask: Tensor | None, slot_mask: Tensor | None) -> Tensor:
        """x (B, K, d) slots; mem (B, T, d) encoder states; mask (B, 1, 1, T) / slot_mask (B, 1, 1, K): True =
        attend."""
        bl = self.self_block
        x = bl.ln_attn(x + bl.drop(bl.attn(x, slot_mask)))  # self-attention among the slots
        x = self.cross(x, mem, mask)
        return bl.ln_ffn(x + bl.drop(bl.ffn(x)))


class PerSlotLinear(nn.Module):
    """K linear layers, one per slot, in one batched product: (B, K, d_in) -> (B, K, d_out)."""

    def __init__(self, k: int, d_in: int, d_out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(k, d_in, d_out))
        self.bias = nn.Parameter(torch.zeros(k, d_out))

    def forward(self, x: Tensor) -> Tensor:
        return torch.einsum("bki,kio->bko", x, self.weight) + self.bias


class FacetDecoder(nn.Module):
    """The K slot maps, the mixing of a subclass (`mix`) and the output layer (module docstring)."""

    def __init__(self, cfg: FacetConfig, d_in: int):
        super().__init__()
        self.cfg = cfg
        self.build_mixer(cfg, d_in)  # first: the parameters are drawn in the order of the thesis's network
        self.slots = nn.ModuleList([nn.Linear(d_in, cfg.d_model) for _ in range(cfg.k)])  # L_1 .. L_K
        for lin in self.slots:
            nn.init.uniform_(lin.weight, -0.1, 0.1)
            nn.init.uniform_(lin.bias, -0.5, 0.5)
        self.slot_drop = Dropout(cfg.dropout)
        self.out = nn.Linear(cfg.d_model, cfg.d_target) if cfg.output == "shared" else \
            PerSlotLinear(cfg.k, cfg.d_model, cfg.d_target)
        nn.init.uniform_(self.out.weight, -0.1, 0.1)
        nn.init.zeros_(self.out.bias)

    def build_mixer(self, cfg: FacetConfig, d_in: int) -> None:
        """The subclass's own layers."""

    def mix(self, slots: Tensor, enc: Encoded, slot_mask: Tensor | None) -> Tensor:
        """(B, K, d) slots -> (B, K, d) decoder states."""
        return slots

    def forward(self, enc: Encoded, slot_mask: Tensor | None = None) -> FacetOutput:
        K = self.cfg.k
        if slot_mask is not None and (slot_mask.shape != (enc.pooled.size(0), K) or not slot_mask.any(1).all()):
            raise ValueError(f"slot_mask must be (B, K) = ({enc.pooled.size(0)}, {K}) with a real slot in every row,"
                             f" got {tuple(slot_mask.shape)}")
        slots = self.slot_drop(torch.stack([lin(enc.pooled) for lin in self.slots], 1))  # (B, K, d)
        hidden = self.mix(slots, enc, slot_mask)
        facets = self.out(hidden)  # (B, K, |E|)
        if slot_mask is not None:
            facets = facets * slot_mask[..., None].to(facets.dtype)
        return FacetOutput(slots, hidden, facets)


class TransformerFacetDecoder(FacetDecoder):
    """Self-attention among the slots and, with `cfg.cross_attention`, cross-attention to the encoder states."""

    def build_mixer(self, cfg: FacetConfig, d_in: int) -> None:
        block = CrossAttentionLayer if cfg.cross_attention else (lambda c: BertLayer(bert_block_config(c)))
        self.layers = nn.ModuleList([block(cfg) for _ in range(cfg.n_dec)])
        self.mem_proj = nn.Linear(d_in, cfg.d_model) if cfg.cross_attention and d_in != cfg.d_model else None

    def mix(self, slots: Tensor, enc: Encoded, slot_mask: Tensor | None) -> Tensor:
        mask = None if bool(enc.mask.all()) else enc.mask[:, None, None, :]
        keys = None if slot_mask is None else slot_mask[:, None, None, :]
        mem = enc.states if self.mem_proj is None else self.mem_proj(enc.states)
        x = slots
        for layer in self.layers:
            x = layer(x, mem, mask, keys) if self.cfg.cross_attention else layer(x, keys)
        return x


class LSTMFacetDecoder(FacetDecoder):
    """An LSTM over the K slots, its initial (h, c) a linear map of the pooled encoding."""

    def build_mixer(self, cfg: FacetConfig, d_in: int) -> None:
        self.init_state = nn.Linear(d_in, 2 * cfg.n_dec * cfg.d_model)
        self.lstm = nn.LSTM(cfg.d_model, cfg.d_model, cfg.n_dec, batch_first=True)

    def mix(self, slots: Tensor, enc: Encoded, slot_mask: Tensor | None) -> Tensor:
        if slot_mask is not None and not bool((slot_mask.cummin(1).values == slot_mask).all()):
            raise ValueError("the LSTM decoder reads the slots in order: a slot mask must be a prefix (real first)")
        B, L, d = slots.size(0), self.cfg.n_dec, self.cfg.d_model
        h0, c0 = self.init_state(enc.pooled).view(B, 2, L, d).permute(1, 2, 0, 3).contiguous()
        y, _ = self.lstm(slots, (h0, c0))  # a real slot reads only the slots before it
        return y


class LinearFacetDecoder(FacetDecoder):
    """The slots themselves (no mixing): the bag-of-words diagnostic's decoder."""


DECODERS = {"transformer": TransformerFacetDecoder, "lstm": LSTMFacetDecoder, "linear": LinearFacetDecoder}
