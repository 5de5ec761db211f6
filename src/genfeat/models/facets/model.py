"""Sequence -> K facet embeddings (thesis C §3.2.1.3, Eqs. 3.3-3.4, Figure 3.2; spec multi-facet-embedding.md §5):

    [e_1 .. e_T, e_<eos>] = TE(w_1 .. w_T <eos>)                         Eq. 3.3, a transformer encoder
    F = TD(L_1(e_<eos>) .. L_K(e_<eos>), [e_1 .. e_<eos>])               Eq. 3.4, all K facets in one pass:
                                                                         self-attention among the K slots,
                                                                         cross-attention to the encoder states
    facets = Linear(d_model -> |E|)(F)                                   one output layer shared by the facets

Inputs are left-padded so <eos> is the last position (pad_id masked as keys). Layers: BERT-style post-LN blocks
(`models/bert`'s), GELU, SDPA. The token embedding can start from a word-vector table (`init_embedding`: unit rows x
sqrt(d), the reference; the padding row stays zero); learned positions; the K input maps L_k have weights U(-0.1,
0.1) and biases U(-0.5, 0.5) (large biases start the facets with norm about 1, out of the NNSC dead zone; spec
§12.1), the output layer U(-0.1, 0.1) and zero bias. `cross_attention=False` (the phrase model) makes the decoder a
plain encoder over the K slots. `arch="lstm"`: a bidirectional LSTM encoder pooled as [last forward; first backward]
and an LSTM decoder over the K slot inputs whose initial state is a linear map of the pooled encoding. `arch="bow"`:
the spec's §10 diagnostic encoder (order-free): ReLU(Linear(mean of the token embeddings)) -> the K maps L_k -> the
output layer, no decoder (to tell a loss problem from an architecture one on the synthetic corpus).

Shapes: input_ids (B, T) -> facets (B, K, |E|); `encode` gives the contextual states (B, T, d) too.
Deviations: a key-padding mask (the reference attends to padding). The training choices that differ from the
thesis at CPU scale (width 50 from GloVe 6B 50d instead of 300, 2 + 2 layers instead of 5 + 5, AdamW with a cosine
schedule, clipping at 1.0 against the reference's 0.25) are the recipe's, listed in `recipes/facets.py`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.models.bert.config import BertConfig
from genfeat.models.bert.model import BertLayer
from genfeat.models.facets.config import FacetConfig
from genfeat.nn.dropout import Dropout


def _bert_cfg(cfg: FacetConfig) -> BertConfig:
    return BertConfig(vocab_size=cfg.vocab_size, d_model=cfg.d_model, n_layer=1, n_head=cfg.n_head,
                      d_inner=cfg.d_inner, max_len=cfg.max_len, dropout=cfg.dropout, attn_dropout=cfg.dropout)


class CrossAttentionLayer(nn.Module):
    """Post-LN decoder block: self-attention over the K slots, cross-attention to the encoder states, FFN."""

    def __init__(self, cfg: FacetConfig):
        super().__init__()
        self.self_block = BertLayer(_bert_cfg(cfg))  # self-attention + FFN, post-LN
        d = cfg.d_model
        self.n_head = cfg.n_head
        self.q, self.kv, self.out = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.drop, self.p = Dropout(cfg.dropout), cfg.dropout

    def cross(self, x: Tensor, mem: Tensor, mask: Tensor | None) -> Tensor:
        B, K, D = x.shape
        H, T = self.n_head, mem.size(1)
        q = self.q(x).view(B, K, H, D // H).transpose(1, 2)  # (B, H, K, dh)
        k, v = self.kv(mem).view(B, T, 2, H, D // H).permute(2, 0, 3, 1, 4)  # 2 x (B, H, T, dh)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.p if self.training else 0.0)
        return self.ln(x + self.drop(self.out(y.transpose(1, 2).reshape(B, K, D))))

    def forward(self, x: Tensor, mem: Tensor, mask: Tensor | None) -> Tensor:
        """x (B, K, d) slots; mem (B, T, d) encoder states; mask (B, 1, 1, T) True = attend."""
        bl = self.self_block
        x = bl.ln_attn(x + bl.drop(bl.attn(x, None)))  # self-attention among the slots
        x = self.cross(x, mem, mask)
        return bl.ln_ffn(x + bl.drop(bl.ffn(x)))


class FacetModel(nn.Module):
    def __init__(self, cfg: FacetConfig, init_embedding: Tensor | None = None):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.tok = nn.Embedding(cfg.vocab_size, d, padding_idx=cfg.pad_id)
        if init_embedding is not None:
            if init_embedding.shape != (cfg.vocab_size, d):
                raise ValueError(f"init_embedding {tuple(init_embedding.shape)} is not ({cfg.vocab_size}, {d})")
            with torch.no_grad():
                self.tok.weight.copy_(F.normalize(init_embedding.float(), dim=-1) * math.sqrt(d))
                self.tok.weight[cfg.pad_id].zero_()  # padding stays a zero row (no gradient reaches it)
        self.drop = Dropout(cfg.dropout)
        if cfg.arch == "transformer":
            self.pos = nn.Embedding(cfg.max_len, d)
            self.ln = nn.LayerNorm(d, eps=1e-12)
            self.enc = nn.ModuleList([BertLayer(_bert_cfg(cfg)) for _ in range(cfg.n_enc)])
            dec = CrossAttentionLayer if cfg.cross_attention else (lambda c: BertLayer(_bert_cfg(c)))
            self.dec = nn.ModuleList([dec(cfg) for _ in range(cfg.n_dec)])
        elif cfg.arch == "bow":
            self.bow = nn.Linear(d, d)  # the hidden layer over the mean token embedding
        else:
            self.enc_lstm = nn.LSTM(d, d, cfg.n_enc, batch_first=True, bidirectional=True)
            self.pool = nn.Linear(2 * d, d)
            self.init_state = nn.Linear(d, 2 * cfg.n_dec * d)
            self.dec_lstm = nn.LSTM(d, d, cfg.n_dec, batch_first=True)
        self.slots = nn.ModuleList([nn.Linear(d, d) for _ in range(cfg.k)])  # L_1 .. L_K
        for lin in self.slots:
            nn.init.uniform_(lin.weight, -0.1, 0.1)
            nn.init.uniform_(lin.bias, -0.5, 0.5)
        self.slot_drop = Dropout(cfg.dropout)
        self.out = nn.Linear(d, cfg.d_target)
        nn.init.uniform_(self.out.weight, -0.1, 0.1)
        nn.init.zeros_(self.out.bias)

    def encode(self, input_ids: Tensor) -> tuple[Tensor, Tensor]:
        """(contextual states (B, T, d), pooled <eos> state (B, d)); inputs left-padded, <eos> last."""
        real = input_ids != self.cfg.pad_id
        if self.cfg.arch == "lstm":  # packed: the padding is never read
            B, T, d = input_ids.size(0), input_ids.size(1), self.cfg.d_model
            n = real.sum(1)
            shift = (torch.arange(T, device=input_ids.device)[None] + (T - n)[:, None]) % T  # left -> right padding
            x = self.drop(self.tok(input_ids.gather(1, shift)))
            packed = nn.utils.rnn.pack_padded_sequence(x, n.cpu(), batch_first=True, enforce_sorted=False)
            h, _ = self.enc_lstm(packed)
            h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True, total_length=T)  # (B, T, 2d) right-padded
            last = h[torch.arange(B), n - 1, :d]  # the forward state at the last real token, backward at the first
            pooled = self.pool(torch.cat([last, h[:, 0, d:]], -1))
            back = (torch.arange(T, device=input_ids.device)[None] - (T - n)[:, None]) % T  # right -> left padding
            return (h[..., :d] + h[..., d:]).gather(1, back[..., None].expand(B, T, d)), pooled
        if self.cfg.arch == "bow":
            x = self.drop(self.tok(input_ids)) * real[..., None]  # (B, T, d), padding masked out
            mean = x.sum(1) / real.sum(1, keepdim=True).clamp_min(1)
            return x, torch.relu(self.bow(mean))
        T = input_ids.size(1)
        if T > self.cfg.max_len:
            raise ValueError(f"sequence of {T} tokens is longer than model.max_len={self.cfg.max_len}")
        # left padding: position 0 is the first real token
        pos = (real.cumsum(1) - 1).clamp_min(0)
        x = self.drop(self.ln(self.tok(input_ids) + self.pos(pos)))
        mask = None if bool(real.all()) else real[:, None, None, :]
        for layer in self.enc:
            x = layer(x, mask)
        return x, x[:, -1]

    def forward(self, input_ids: Tensor) -> Tensor:
        """Facets (B, K, |E|), not normalised (training leaves their norms free)."""
        states, pooled = self.encode(input_ids)
        slots = self.slot_drop(torch.stack([lin(pooled) for lin in self.slots], 1))  # (B, K, d)
        if self.cfg.arch == "lstm":
            B, L, d = pooled.size(0), self.cfg.n_dec, self.cfg.d_model
            h0, c0 = self.init_state(pooled).view(B, 2, L, d).permute(1, 2, 0, 3).contiguous()
            y, _ = self.dec_lstm(slots, (h0, c0))
            return self.out(y)
        if self.cfg.arch == "bow":
            return self.out(slots)
        real = input_ids != self.cfg.pad_id
        mask = None if bool(real.all()) else real[:, None, None, :]
        x = slots
        for layer in self.dec:
            x = layer(x, states, mask) if self.cfg.cross_attention else layer(x, None)
        return self.out(x)
