"""PPLM with a bag-of-words attribute model (Dathathri et al. 2020), the baseline of thesis C §4.3.3.3 (Table 4.5):
before each token, a few gradient steps on the key / value cache raise the probability of a bag of words.

    per token, with H the cache of the context so far and x the last token:
      ΔH = 0;  repeat `iters` times:
          p = softmax(LM(x | H + m ⊙ ΔH))                m: the last `window` cache positions only
          L = -log Σ_{w ∈ BoW} p(w) + kl_scale · KL(p || p_unperturbed)
          ΔH ← ΔH - step_size · ∇L / n^gamma             n: the largest ||∇L|| of the layer in this step
      p_next ∝ p(H + ΔH)^gm_scale · p_unperturbed^(1 - gm_scale), then top-k sampling;
      the perturbed cache, extended by x, is the next step's H

Defaults: the PPLM repository's BoW settings as the thesis's call uses them (step size 0.03, 3 iterations,
window 5, γ 1.5, gm-scale 0.99, KL-scale 0.01, top-k 40, temperature 1). The LM is any genfeat `CausalLM` whose
backbone keeps an exact key / value cache (the GPT decoder); the thesis's base LM is the conditional generator
with no inserted vectors. Deviations: no `horizon` / discriminator mode (BoW only); batch 1.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from genfeat.models.lm import CausalLM
from genfeat.models.sampling import filter_log_probs

SMALL = 1e-15


@dataclass(frozen=True)
class PPLMConfig:
    step_size: float = 0.03
    iters: int = 3
    window: int = 5
    gamma: float = 1.5
    gm_scale: float = 0.99
    kl_scale: float = 0.01
    top_k: int = 40
    temperature: float = 1.0


def _next(lm: CausalLM, last: Tensor, mems: tuple[Tensor, ...]) -> tuple[Tensor, tuple[Tensor, ...]]:
    head_out, out = lm(last, last_only=True, mems=mems)
    return head_out.log_probs()[:, -1], out.mems  # (1, V), the extended cache


def stream(lm: CausalLM, prompt: Sequence[int], bow: Sequence[int], max_new_tokens: int,
           cfg: PPLMConfig = PPLMConfig(), generator: torch.Generator | None = None) -> Iterator[int]:
    """The tokens of one continuation of `prompt` (at least 2 tokens) steered towards the word ids `bow`."""
    if lm.backbone.offers.memory != "cache":
        raise ValueError("PPLM perturbs a key / value cache: this backbone keeps none")
    if len(prompt) < 2 or not bow:
        raise ValueError("PPLM needs a prompt of at least 2 tokens and a non-empty bag of words")
    was = lm.training
    lm.eval()
    device = next(lm.parameters()).device
    ids = torch.as_tensor([list(prompt)], device=device)
    bag = torch.as_tensor(sorted(set(bow)), device=device)
    trainable = [p for p in lm.parameters() if p.requires_grad]
    for p in trainable:
        p.requires_grad_(False)  # the gradient goes to the cache alone
    try:
        with torch.no_grad():
            past = lm.backbone(ids[:, :-1], mems=()).mems  # H: the context before the last token
        unpert = past
        last = ids[:, -1:]
        for _ in range(max_new_tokens):
            with torch.no_grad():
                logp_plain, unpert_next = _next(lm, last, unpert)
            P = past[0].size(1)
            mask = (torch.arange(P, device=device) >= P - cfg.window).view(1, P, 1, 1, 1).float()
            delta = [torch.zeros_like(h, requires_grad=True) for h in past]
            norms = [0.0] * len(past)  # the largest gradient norm of each layer so far (the reference's)
            for _ in range(cfg.iters):
                logp, _ = _next(lm, last, tuple(h + m for h, m in zip(past, (d * mask for d in delta), strict=True)))
                probs = logp.exp()
                loss = -torch.log(probs[:, bag].sum() + SMALL)
                if cfg.kl_scale:
                    q = probs + SMALL * (probs <= SMALL)
                    loss = loss + cfg.kl_scale * (q * (q.log() - logp_plain)).sum()
                grads = torch.autograd.grad(loss, delta)
                with torch.no_grad():
                    for i, (d, g) in enumerate(zip(delta, grads, strict=True)):
                        g = g * mask
                        norms[i] = max(norms[i], float(g.norm()) + SMALL)
                        d -= cfg.step_size * g / norms[i] ** cfg.gamma
            with torch.no_grad():
                logp, past = _next(lm, last, tuple(h + d * mask for h, d in zip(past, delta, strict=True)))
                mixed = cfg.gm_scale * logp + (1 - cfg.gm_scale) * logp_plain  # p^gm · p_plain^(1-gm), in logs
                mixed = filter_log_probs(torch.log_softmax(mixed / cfg.temperature, -1), cfg.top_k)
                nxt = torch.multinomial(mixed.softmax(-1), 1, generator=generator)  # (1, 1)
            unpert = unpert_next
            last = nxt
            yield int(nxt)
    finally:
        for p in trainable:
            p.requires_grad_(True)
        lm.train(was)
