"""Sampling from any causal LM of the library, one token at a time (`stream`, a generator: tokens are yielded as
they are drawn, so a server streams them and a consumer that stops reading stops the work), and all at once
(`sample`).

    p_t = softmax(filter(log p(x_t | x_<t) / temperature))      filter: top-k (thesis Y §2.1 and thesis C §4.3:
                                                                k = 40), then top-p (nucleus) on what is left

Backbones with a memory (Transformer-XL) or a key / value cache (GPT, for the heads that allow it:
`CausalLM.generation_memory`) read the prompt once and then one token per step (constant cost per token, thesis
Y §2.1.3); the others re-read the last `max_len` tokens each step, as does a full cache (it is rebuilt from the
last `max_len` tokens). A backbone that takes positions and a key mask (`offers.positions`: GPT) also takes
left-padded prompts (`key_mask`), and condition vectors (`inserts`, a conditioned GPT, thesis C §4.2.2): they
enter before the prompt's last token, and the generated tokens' positions count real tokens only, as in
training (spec interactive-generation.md §4.4); `ri_position_offset=True` counts the inserted slots too, as the
reference's cache does (parity with its released checkpoints).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

from genfeat.models.gpt.insertion import Insertions
from genfeat.models.lm import CausalLM


def filter_log_probs(logp: Tensor, top_k: int | None = None, top_p: float = 1.0) -> Tensor:
    """logp (B, V) -> the same with -inf outside the top-k and then outside the smallest set whose probability
    reaches top_p (the most likely token always stays)."""
    if top_k is not None and top_k < logp.size(-1):
        kth = logp.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
        logp = logp.masked_fill(logp < kth, float("-inf"))
    if top_p < 1.0:
        srt, idx = logp.sort(-1, descending=True)
        p = srt.softmax(-1)
        drop = p.cumsum(-1) - p >= top_p  # the mass before a token already reaches top_p
        logp = logp.masked_fill(drop.scatter(1, idx, drop), float("-inf"))
    return logp


def _check(prompt: Tensor, temperature: float, top_p: float) -> None:
    if prompt.dim() != 2 or prompt.size(1) == 0:
        raise ValueError("prompt must be a non-empty (batch, length) tensor of token ids")
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")


def stream(
    lm: CausalLM,
    prompt: Tensor,
    max_new_tokens: int,
    top_k: int | None = 40,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
    stop_token: int | None = None,
    top_p: float = 1.0,
    key_mask: Tensor | None = None,
    inserts: Insertions | None = None,
    ri_position_offset: bool = False,
) -> Iterator[Tensor]:
    """Yields the next token of every row, (B,), up to `max_new_tokens` times, and stops early once every row has
    emitted `stop_token`. prompt (B, T0); key_mask (B, T0), True = a real token (left padding: False first);
    inserts: vectors to insert, their locations in the prompt (`Insertions.before_last`)."""
    _check(prompt, temperature, top_p)
    offers = lm.backbone.offers
    if (key_mask is not None or inserts is not None) and not offers.positions:
        raise ValueError(f"{type(lm.backbone).__name__} takes no key mask or inserted vectors")
    was_training = lm.training
    lm.eval()
    B, T0 = prompt.shape
    real = torch.ones_like(prompt, dtype=torch.bool) if key_mask is None else key_mask.bool()  # (B, T)
    ids = prompt
    done = torch.zeros(B, dtype=torch.bool, device=prompt.device)
    start = lm.generation_memory()
    if ri_position_offset and start is None:
        raise ValueError("ri_position_offset is the cache's convention, and this head re-reads the context")
    n_inserted = int(inserts.counts.max()) if inserts is not None and inserts.locations.numel() else 0
    memory: dict = {}  # what the next call continues from (`BackboneOutput.carry`)
    try:
        with torch.no_grad():
            for _ in range(max_new_tokens):
                if memory and (lm.max_len is None or memory["mems"][0].size(1) < lm.max_len):
                    kw = dict(memory)
                    if offers.positions and not ri_position_offset:
                        kw["position_ids"] = real.sum(1, keepdim=True) - 1  # (B, 1) the real tokens before it
                    head_out, out = lm(ids[:, -1:], last_only=True, **kw)
                else:
                    lo = 0 if lm.max_len is None else max(0, ids.size(1) + n_inserted - lm.max_len)  # window
                    kw = {"mems": start} if start is not None else {}
                    if offers.positions:
                        kw["position_ids"] = (real[:, lo:].cumsum(1) - 1).clamp_min(0)
                        if key_mask is not None:
                            kw["key_mask"] = real[:, lo:]
                        if inserts is not None and T0 - 1 - lo >= 0:  # the window still holds their place
                            kw["inserts"] = Insertions(inserts.vectors, torch.where(
                                inserts.locations >= 0, inserts.locations - lo, -1))
                    head_out, out = lm(ids[:, lo:], last_only=True, **kw)
                memory = out.carry() if out.mems is not None and out.mems[0].size(1) > 0 else {}
                logp = filter_log_probs(head_out.log_probs()[:, -1] / temperature, top_k, top_p)  # (B, V)
                nxt = torch.multinomial(torch.softmax(logp, dim=-1), 1, generator=generator)  # (B, 1)
                ids = torch.cat([ids, nxt], dim=1)
                real = torch.cat([real, real.new_ones(B, 1)], 1)
                yield nxt.squeeze(1)
                if stop_token is not None:
                    done |= nxt.squeeze(1) == stop_token
                    if bool(done.all()):
                        break
    finally:
        lm.train(was_training)


def sample(lm: CausalLM, prompt: Tensor, max_new_tokens: int, top_k: int | None = 40, temperature: float = 1.0,
           generator: torch.Generator | None = None, stop_token: int | None = None, **kwargs) -> Tensor:
    """Top-k sampling: prompt (B, T0) -> (B, T0 + n), the prompt followed by what `stream` draws (kwargs: top_p,
    key_mask, inserts, ri_position_offset)."""
    steps = list(stream(lm, prompt, max_new_tokens, top_k, temperature, generator, stop_token, **kwargs))
    return torch.cat([prompt, torch.stack(steps, 1)], 1) if steps else prompt
