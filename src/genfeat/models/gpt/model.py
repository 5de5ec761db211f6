"""GPT-style causal Transformer decoder (Radford et al. 2018/2019 layout).

The baseline causal backbone of genfeat: the output heads of thesis C §2.3–2.4 (softmax, MoS, MFS,
dynamic partitioning) are evaluated on it, and it is the "GPT-2 small"-like model of thesis C §2.4.

    h_0 = E[x] + P[pos]                                   x (B, T) -> h_0 (B, T, d)
    h_l = h_{l-1} + Attn(LN(h_{l-1})) ; h_l += FFN(LN(h_l))   pre-LN blocks, causal SDPA
    hidden = LN_f(h_L)                                    (B, T, d)

Deviations: none from GPT-2 in structure; init N(0, 0.02) with residual projections scaled by
1/sqrt(2 n_layer) as GPT-2. Dropout on embeddings, attention probabilities and residual branches. The GELU is the
exact one unless `activation="gelu_tanh"` (GPT-2's; set by `models.gpt.hf.from_pretrained` for GPT-2 checkpoints).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from genfeat.errors import ConfigError
from genfeat.heads.config import build_head
from genfeat.heads.two_stage import TwoStageReranker
from genfeat.models.gpt.config import GPTConfig
from genfeat.models.lm import CausalLM
from genfeat.nn.attention import CausalSelfAttention
from genfeat.nn.dropout import Dropout
from genfeat.nn.feedforward import FeedForward
from genfeat.nn.outputs import BackboneOffers, BackboneOutput


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
        self.attn = CausalSelfAttention(cfg.d_model, cfg.n_head, cfg.dropout, cfg.bias)
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
        self.ff = FeedForward(cfg.d_model, cfg.ff_dim, cfg.dropout, cfg.bias,
                              "tanh" if cfg.activation == "gelu_tanh" else "none")

    def forward(self, x: Tensor, cache: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
        if cache is None:
            x = x + self.attn(self.ln1(x))
            return x + self.ff(self.ln2(x))
        a, cache = self.attn(self.ln1(x), cache)
        x = x + a
        return x + self.ff(self.ln2(x)), cache


class GPTDecoder(nn.Module):
    """`mems`: the key / value cache (one (B, P, 2, H, dh) tensor per block; `()` starts an empty one): the new
    tokens sit at positions P.., and the output carries the extended cache. Generation reads one token per step
    with it (`models.lm.sample`); the outputs equal a full re-read of the context (tests/models/test_gpt_cache.py)."""

    offers = BackboneOffers(memory="cache")  # exact: sample() uses it only where the head reads nothing it drops

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        if cfg.vocab_size < 1:
            raise ValueError("GPTConfig.vocab_size must be set (the recipe takes it from the tokenizer)")
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model)
        self.drop = Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith(("attn.proj.weight", "net.2.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, input_ids: Tensor, output_all_hidden: bool = False,
                mems: tuple[Tensor, ...] | None = None) -> BackboneOutput:
        B, T = input_ids.shape
        P = mems[0].size(1) if mems else 0
        if P + T > self.cfg.max_len:
            raise ValueError(f"sequence length {P + T} exceeds max_len={self.cfg.max_len}")
        pos = torch.arange(P, P + T, device=input_ids.device)
        h = self.drop(self.tok_emb(input_ids) + self.pos_emb(pos))  # (B, T, d)
        all_hidden = [h] if output_all_hidden else None
        new_mems = []
        for i, block in enumerate(self.blocks):
            if mems is None:
                h = block(h)
            else:
                cache = mems[i] if mems else h.new_zeros(B, 0, 2, self.cfg.n_head, self.cfg.d_model // self.cfg.n_head)
                h, cache = block(h, cache)
                new_mems.append(cache)
            if all_hidden is not None:
                all_hidden.append(h)
        h = self.ln_f(h)
        return BackboneOutput(hidden=h, all_hidden=tuple(all_hidden) if all_hidden else None,
                              mems=tuple(new_mems) if mems is not None else None)


def build_gpt_lm(cfg: GPTConfig) -> CausalLM:
    """GPT decoder + output head (`cfg.head`, softmax by default), tied to the token embedding when
    cfg.tie_embeddings."""
    backbone = GPTDecoder(cfg)
    head = build_head(cfg.head, cfg.d_model, cfg.vocab_size, backbone.tok_emb if cfg.tie_embeddings else None)
    if cfg.head.stage2_candidates:
        try:
            head = TwoStageReranker(head, backbone, cfg.head.stage2_candidates, cfg.head.stage2_merge)
        except ValueError as e:
            raise ConfigError(f"head: {e}") from None
    return CausalLM(backbone, head, max_len=cfg.max_len)
