"""Transformer-XL (Dai, Yang et al. 2019; thesis Y §2.1): segment-level recurrence + relative
positional attention.

For layer n = 1..N on segment τ (spec TXL-5):
    h~^{n-1} = [SG(m^{n-1}) ∘ h^{n-1}]                 memory = cached *inputs* of layer n   (B, M'+L, d)
    A_ij = (q_i+u)·k_j + (q_i+v)·W_{k,R} R_{M'+i-j}     relative attention (nn.relative_attention)
    o = LN(h + Attn),  h^n = LN(o + FF(o))              post-LN, ReLU FFN
with h^0 = Dropout(E[x]·sqrt(d)) (no absolute position), R the fixed [sin|cos] table, u/v shared across
layers (thesis) or per layer (`untie_r`, TF/HF). After the segment, m^n <- SG([m^n ∘ h^n])[last M rows].
The memory starts empty (reference), not as M zero rows (HF).

Shapes: input ids (B, L); mems: tuple of N tensors (B, M', d); output hidden (B, L, d) after the final
dropout, new mems (B, min(M, M'+L), d).

Deviations from the reference code: batch-first layout; attention through SDPA with the positional
term as an additive bias (same math); `pos_enc="absolute"` implements the Vaswani ablation by adding
the sinusoid of absolute positions (memory positions included) to the layer-0 input and dropping the
relative term (no W_{k,R}, u, v: content-only scores), instead of the reference's attn_type=2 module.
Initialisation as the reference (N(0, init_std) weights, N(0,
proj_init_std) adaptive projections, LayerNorm gains N(1, init_std), u, v N(0, init_std)).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from genfeat.heads.adaptive_softmax import ProjectedAdaptiveLogSoftmax
from genfeat.heads.config import build_head
from genfeat.heads.softmax import SoftmaxHead
from genfeat.models.lm import CausalLM
from genfeat.models.transformer_xl.config import TXLConfig
from genfeat.nn.dropout import Dropout
from genfeat.nn.embeddings import AdaptiveEmbedding
from genfeat.nn.outputs import BackboneOffers, BackboneOutput
from genfeat.nn.relative_attention import (
    RelPartialLearnableMultiHeadAttn,
    causal_memory_mask,
    relative_positions,
    sinusoid_table,
)


class PositionwiseFF(nn.Module):
    def __init__(self, d_model: int, d_inner: int, dropout: float, pre_lnorm: bool = False):
        super().__init__()
        self.CoreNet = nn.Sequential(nn.Linear(d_model, d_inner), nn.ReLU(inplace=True), Dropout(dropout),
                                     nn.Linear(d_inner, d_model), Dropout(dropout))
        self.layer_norm = nn.LayerNorm(d_model)
        self.pre_lnorm = pre_lnorm

    def forward(self, x: Tensor) -> Tensor:
        if self.pre_lnorm:
            return x + self.CoreNet(self.layer_norm(x))
        return self.layer_norm(x + self.CoreNet(x))


class RelPartialLearnableDecoderLayer(nn.Module):
    def __init__(self, cfg: TXLConfig):
        super().__init__()
        relative = cfg.pos_enc == "relative"
        self.dec_attn = RelPartialLearnableMultiHeadAttn(cfg.n_head, cfg.d_model, cfg.d_head, cfg.dropout,
                                                         cfg.dropatt, cfg.pre_lnorm, relative=relative)
        self.pos_ff = PositionwiseFF(cfg.d_model, cfg.d_inner, cfg.dropout, cfg.pre_lnorm)
        if cfg.untie_r and relative:
            self.r_w_bias = nn.Parameter(torch.zeros(cfg.n_head, cfg.d_head))
            self.r_r_bias = nn.Parameter(torch.zeros(cfg.n_head, cfg.d_head))

    def forward(self, h: Tensor, r: Tensor | None, r_w_bias: Tensor | None, r_r_bias: Tensor | None, mask: Tensor,
                mem: Tensor | None) -> Tensor:
        return self.pos_ff(self.dec_attn(h, r, r_w_bias, r_r_bias, mask, mem))


class TransformerXL(nn.Module):
    def __init__(self, cfg: TXLConfig):
        super().__init__()
        # the segment memory is part of the model: generation always carries it
        self.offers = BackboneOffers(memory="recurrent", ext_len=cfg.ext_len)
        if cfg.vocab_size < 1:
            raise ValueError("TXLConfig.vocab_size must be set (the recipe takes it from the tokenizer)")
        self.cfg = cfg
        self.word_emb = AdaptiveEmbedding(cfg.vocab_size, cfg.embed_dim, cfg.d_model, cfg.cutoffs, cfg.div_val)
        self.drop = Dropout(cfg.dropout)
        self.layers = nn.ModuleList(RelPartialLearnableDecoderLayer(cfg) for _ in range(cfg.n_layer))
        if not cfg.untie_r and cfg.pos_enc == "relative":
            self.r_w_bias = nn.Parameter(torch.zeros(cfg.n_head, cfg.d_head))  # u
            self.r_r_bias = nn.Parameter(torch.zeros(cfg.n_head, cfg.d_head))  # v
        self.reset_parameters()
        self.reset_length(cfg.mem_len, cfg.same_length, cfg.clamp_len)

    def reset_length(self, mem_len: int, same_length: bool = False, clamp_len: int = -1) -> None:
        """Evaluation settings that may differ from training (longer memory, same_length, clamp_len),
        as the reference's `reset_length`; the segment length is simply the input length."""
        if mem_len < 0:
            raise ValueError("mem_len must be >= 0")
        self.mem_len, self.same_length, self.clamp_len = mem_len, same_length, clamp_len

    def reset_parameters(self) -> None:
        std, pstd = self.cfg.init_std, self.cfg.proj_init_std
        for name, p in self.named_parameters():
            if "emb_projs" in name:
                nn.init.normal_(p, 0.0, pstd)
            elif name.endswith("layer_norm.weight"):
                nn.init.normal_(p, 1.0, std)  # reference quirk: LayerNorm gains N(1, std)
            elif name.endswith(("r_w_bias", "r_r_bias")) or p.dim() >= 2:
                nn.init.normal_(p, 0.0, std)
            else:
                nn.init.zeros_(p)

    def init_mems(self, batch_size: int, device: torch.device | None = None) -> tuple[Tensor, ...]:
        """Empty memory (length 0), as the reference."""
        dtype = self.word_emb.emb_layers[0].weight.dtype
        return tuple(torch.empty(batch_size, 0, self.cfg.d_model, device=device, dtype=dtype)
                     for _ in range(self.cfg.n_layer))

    def _update_mems(self, hids: list[Tensor], mems: tuple[Tensor, ...], qlen: int) -> tuple[Tensor, ...]:
        """m^n <- SG([m^n ∘ h^n]) restricted to the last mem_len rows before the ext_len tail."""
        M = self.mem_len
        if M == 0:
            return tuple(h.new_empty(h.size(0), 0, h.size(2)) for h in hids)
        with torch.no_grad():
            out = []
            for mem, h in zip(mems, hids, strict=True):
                cat = torch.cat([mem, h], dim=1)  # (B, M'+L, d)
                end = mem.size(1) + max(0, qlen - self.cfg.ext_len)
                out.append(cat[:, max(0, end - M) : end].detach())
            return tuple(out)

    def forward(self, input_ids: Tensor, mems: tuple[Tensor, ...] | None = None,
                output_all_hidden: bool = False) -> BackboneOutput:
        cfg = self.cfg
        B, L = input_ids.shape
        if mems is None or len(mems) == 0:
            mems = self.init_mems(B, input_ids.device)
        if len(mems) != cfg.n_layer:
            raise ValueError(f"expected {cfg.n_layer} memory tensors, got {len(mems)}")
        mlen = mems[0].size(1)
        klen = mlen + L
        h = self.word_emb(input_ids)  # (B, L, d), scaled by sqrt(d)
        if cfg.pos_enc == "absolute":  # Vaswani ablation: absolute positions mlen..mlen+L-1 on the input
            abs_pos = torch.arange(mlen, klen, device=h.device, dtype=torch.float32)
            h = h + sinusoid_table(abs_pos, cfg.d_model).to(h.dtype)
        mask = causal_memory_mask(L, mlen, self.same_length, self.mem_len, device=h.device)  # (L, K)
        r = u = v = None
        if cfg.pos_enc == "relative":
            pos = relative_positions(klen, self.clamp_len, device=h.device)
            r = self.drop(sinusoid_table(pos, cfg.d_model).to(h.dtype))  # (K, d), rows = distance K-1..0
        h = self.drop(h)
        hids = [h]
        for i, layer in enumerate(self.layers):
            if cfg.pos_enc == "relative":
                u, v = (layer.r_w_bias, layer.r_r_bias) if cfg.untie_r else (self.r_w_bias, self.r_r_bias)
            h = layer(h, r, u, v, mask, mems[i])
            hids.append(h)
        new_mems = self._update_mems(hids[:-1], mems, L)  # cache each layer's *input*
        return BackboneOutput(hidden=self.drop(h), all_hidden=tuple(hids) if output_all_hidden else None,
                              mems=new_mems)


def build_txl_lm(cfg: TXLConfig) -> CausalLM:
    """Transformer-XL + softmax (no cutoffs) or projected adaptive softmax; the output embeddings are tied to the
    input ones when `cfg.tie_weight`, the projections wherever `cfg.tie_projs` says (independently)."""
    backbone = TransformerXL(cfg)
    if cfg.cutoffs or cfg.div_val > 1 or cfg.embed_dim != cfg.d_model:
        head = ProjectedAdaptiveLogSoftmax(cfg.vocab_size, cfg.embed_dim, cfg.d_model, cfg.cutoffs, cfg.div_val,
                                           tie_to=backbone.word_emb, tie_projs=cfg.tie_projs,
                                           tie_weight=cfg.tie_weight)
        shared = {id(q) for q in backbone.parameters()}
        for name, p in head.named_parameters():  # reference init for the head's own (untied) parameters
            if id(p) in shared:
                continue
            if "out_projs" in name:
                nn.init.normal_(p, 0.0, cfg.proj_init_std)
            elif p.dim() >= 2:
                nn.init.normal_(p, 0.0, cfg.init_std)
            else:
                nn.init.zeros_(p)
    elif cfg.head is not None:  # any head of genfeat.heads; C also sees the memory's tokens (CausalLM)
        head = build_head(cfg.head, cfg.d_model, cfg.vocab_size,
                          backbone.word_emb.emb_layers[0] if cfg.tie_weight else None)
    else:
        head = SoftmaxHead(cfg.d_model, cfg.vocab_size, backbone.word_emb.emb_layers[0] if cfg.tie_weight else None,
                           bias=True)
    return CausalLM(backbone, head, max_len=None)
