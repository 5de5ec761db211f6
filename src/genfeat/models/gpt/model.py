"""GPT-style causal Transformer decoder (Radford et al. 2018/2019 layout).

The baseline causal backbone of genfeat: the output heads of thesis C §2.3–2.4 (softmax, MoS, MFS,
dynamic partitioning) are evaluated on it, and it is the "GPT-2 small"-like model of thesis C §2.4.

    h_0 = E[x] + P[pos]                                   x (B, T) -> h_0 (B, T, d)
    h_l = h_{l-1} + Attn(LN(h_{l-1})) ; h_l += FFN(LN(h_l))   pre-LN blocks, causal SDPA
    hidden = LN_f(h_L)                                    (B, T, d)

Conditioned (thesis C §4.2.2.1, Eq. 4.1; `cfg.cond_dim` > 0, spec interactive-generation.md §4): condition
vectors inserted before chosen real tokens (`inserts=`, `models.gpt.insertion`)

    f = W_c v + P^f[pos of the token it precedes]          v (c,) -> f (d,); P^f a table of its own
    h_0 = merge(E[x] + P[pos], f ...)                      (B, T + n, d); the real tokens keep their positions

and the outputs are the real tokens' states only (B, T, d): an inserted slot predicts nothing (null labels).
`position_ids` (B, T) gives the real tokens' positions explicitly (default: P.. after a cache of P slots);
`key_mask` ((B, P + T), or (B, P) for the cache with all T new tokens real) hides left padding. Generation
(`models.sampling`) passes positions that count real tokens only (training-consistent, spec §4.4) unless asked
for the reference's offset by the inserted slots.

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
from genfeat.models.gpt.insertion import Insertions, insertion_layout, merge
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

    def forward(self, x: Tensor, cache: Tensor | None = None, key_mask: Tensor | None = None
                ) -> Tensor | tuple[Tensor, Tensor]:
        if cache is None:
            x = x + self.attn(self.ln1(x), key_mask=key_mask)
            return x + self.ff(self.ln2(x))
        a, cache = self.attn(self.ln1(x), cache, key_mask)
        x = x + a
        return x + self.ff(self.ln2(x)), cache


class GPTDecoder(nn.Module):
    """`mems`: the key / value cache (one (B, P, 2, H, dh) tensor per block; `()` starts an empty one): the new
    tokens sit at positions P.., and the output carries the extended cache. Generation reads one token per step
    with it (`models.sampling`); the outputs equal a full re-read of the context (tests/models/test_gpt_cache.py).
    The cache is plain tensors: PPLM perturbs it with gradients (`models.interactive.pplm`)."""

    # the cache is exact: sampling uses it only where the head reads nothing it drops
    offers = BackboneOffers(memory="cache", positions=True)

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
        if cfg.cond_dim:
            self.cond_proj = nn.Linear(cfg.cond_dim, cfg.d_model)  # the reference's linear_future
            self.cond_pos_emb = nn.Embedding(cfg.max_len, cfg.d_model)  # its wpe_future
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

    def embed_conditions(self, inserts: Insertions, position_ids: Tensor) -> Tensor:
        """Inserted vectors (B, N, c) -> (B, N, d): W_c v + P^f[position of the token each precedes]."""
        if not self.cfg.cond_dim:
            raise ValueError("this decoder takes no inserted vectors (model.cond_dim = 0)")
        if inserts.vectors.size(-1) != self.cfg.cond_dim:
            raise ValueError(f"inserted vectors of width {inserts.vectors.size(-1)}, the decoder takes "
                             f"cond_dim={self.cfg.cond_dim}")
        at = position_ids.gather(1, inserts.locations.clamp_min(0))  # (B, N)
        return self.cond_proj(inserts.vectors.to(self.cond_proj.weight.dtype)) + self.cond_pos_emb(at)

    def forward(self, input_ids: Tensor, output_all_hidden: bool = False,
                mems: tuple[Tensor, ...] | None = None, position_ids: Tensor | None = None,
                key_mask: Tensor | None = None, inserts: Insertions | None = None) -> BackboneOutput:
        B, T = input_ids.shape
        P = mems[0].size(1) if mems else 0
        if position_ids is None:
            if P + T > self.cfg.max_len:
                raise ValueError(f"sequence length {P + T} exceeds max_len={self.cfg.max_len}")
            position_ids = torch.arange(P, P + T, device=input_ids.device).expand(B, T)
        elif position_ids.shape != (B, T):
            raise ValueError(f"position_ids {tuple(position_ids.shape)} do not match input_ids {(B, T)}")
        elif int(position_ids.max()) >= self.cfg.max_len:
            raise ValueError(f"position {int(position_ids.max())} exceeds max_len={self.cfg.max_len}")
        h = self.tok_emb(input_ids) + self.pos_emb(position_ids)  # (B, T, d)
        if key_mask is not None and key_mask.size(1) == P:
            key_mask = torch.cat([key_mask, key_mask.new_ones(B, T)], 1)  # the new tokens are all real
        layout = None
        if inserts is not None and inserts.locations.numel():
            layout = insertion_layout(inserts.locations, T)
            if mems is not None and bool((layout.length != layout.width).any()):
                raise ValueError("with a cache, every row inserts the same number of vectors")
            h = merge(h, self.embed_conditions(inserts, position_ids), layout)  # (B, T + n, d)
            if key_mask is not None:
                ones = torch.ones_like(inserts.vectors[..., :1])  # (B, N, 1): an inserted slot is real
                slot_mask = merge(key_mask[:, P:, None].to(ones.dtype), ones, layout)[..., 0] > 0
                key_mask = torch.cat([key_mask[:, :P], slot_mask], 1)
        if P + h.size(1) > self.cfg.max_len:
            raise ValueError(f"sequence length {P + h.size(1)} exceeds max_len={self.cfg.max_len}")
        h = self.drop(h)
        all_hidden = [h] if output_all_hidden else None
        new_mems = []
        for i, block in enumerate(self.blocks):
            if mems is None:
                h = block(h, key_mask=key_mask)
            else:
                cache = mems[i] if mems else h.new_zeros(B, 0, 2, self.cfg.n_head, self.cfg.d_model // self.cfg.n_head)
                h, cache = block(h, cache, key_mask)
                new_mems.append(cache)
            if all_hidden is not None:
                all_hidden.append(h)
        h = self.ln_f(h)
        if layout is not None:  # the real tokens' states (B, T, d)
            real = lambda x: x.gather(1, layout.token_slot[..., None].expand(-1, -1, x.size(-1)))  # noqa: E731
            h = real(h)
            all_hidden = [real(x) for x in all_hidden] if all_hidden is not None else None
        return BackboneOutput(hidden=h, all_hidden=tuple(all_hidden) if all_hidden else None,
                              mems=tuple(new_mems) if mems is not None else None,
                              key_mask=key_mask if mems is not None else None)


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
