"""Relative Effective Context Length (RECL), thesis Y §2.1.4 (Table 2.9; spec §5.3).

For a group of models, per-token losses l_i(c, t) with exactly c preceding tokens:
    b(c, t)     = min_i l_i(c, t)                              best short-context loss in the group
    T(c)        = the ceil(r · n) positions with the largest b(c, t)      (hard positions)
    f_i(c, c')  = mean_{t in T(c)} min(b(c, t), l_i(c', t))     a longer context counts only where it helps
    g_i(c, c')  = (exp f_i(c, c) - exp f_i(c, c')) / exp f_i(c, c)
    RECL_i      = the first c (from c_0, step Δ) with g_i(c, c + Δ) < 0.01
If the largest context is reached first, RECL_i is that context and flagged as a lower bound.
RECL is relative to the group: changing the group changes b and every model's RECL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

THRESHOLD = 0.01  # 1% relative gain (thesis)


@dataclass(frozen=True)
class RECLResult:
    recl: int
    lower_bound: bool  # the search ran out of contexts before the gain fell below the threshold
    gains: tuple[float, ...]  # g_i(c, c + Δ) for each step taken


def relative_gain(losses: dict[str, np.ndarray], i: str, k: int, r: float) -> float:
    """g_i(c_k, c_{k+1}) for losses[name] of shape (n_contexts, n_positions)."""
    b = np.min(np.stack([v[k] for v in losses.values()]), axis=0)  # (n,)
    n_hard = math.ceil(r * b.size)
    hard = np.argsort(-b, kind="stable")[:n_hard]
    f_same = b[hard].mean()
    f_long = np.minimum(b[hard], losses[i][k + 1][hard]).mean()
    return float((math.exp(f_same) - math.exp(f_long)) / math.exp(f_same))


def recl(losses: dict[str, np.ndarray], contexts: list[int], r: float = 1.0,
         threshold: float = THRESHOLD) -> dict[str, RECLResult]:
    """losses[model][k, t] = l_model(contexts[k], t) on the same positions t for every model and context."""
    if not 0 < r <= 1:
        raise ValueError("r must be in (0, 1]")
    if list(contexts) != sorted(contexts) or len(set(contexts)) != len(contexts):
        raise ValueError("contexts must increase strictly")
    shapes = {v.shape for v in losses.values()}
    if len(shapes) != 1 or next(iter(shapes))[0] != len(contexts):
        raise ValueError(f"every loss array must have shape ({len(contexts)}, n_positions); got {shapes}")
    out = {}
    for name in losses:
        gains = []
        for k in range(len(contexts) - 1):
            gains.append(relative_gain(losses, name, k, r))
            if gains[-1] < threshold:
                out[name] = RECLResult(contexts[k], False, tuple(gains))
                break
        else:
            out[name] = RECLResult(contexts[-1], True, tuple(gains))
    return out


@torch.no_grad()
def context_losses(model: torch.nn.Module, tokens: np.ndarray, contexts: list[int], positions: np.ndarray,
                   batch_size: int = 32, max_context: int | None = None) -> np.ndarray:
    """l(c, t) = -log p(x_t | x_{t-c} .. x_{t-1}) exactly (one forward over the c-token window per (c, t),
    no memory carried in). positions must all be >= max(contexts). A model whose usable context is capped
    (the vanilla Transformer at its training length, thesis Y Table 2.9) gets `max_context`: longer contexts
    are cut to their last max_context tokens. Returns (n_contexts, n_positions)."""
    if positions.min() < max(contexts):
        raise ValueError("every position needs at least max(contexts) preceding tokens")
    device = next(model.parameters()).device
    data = torch.from_numpy(np.asarray(tokens, dtype=np.int64))
    out = np.zeros((len(contexts), len(positions)))
    jobs = [(k, min(c, max_context) if max_context else c, s) for k, c in enumerate(contexts)
            for s in range(0, len(positions), batch_size)]
    for k, c, s in tqdm(jobs, desc="RECL context losses", leave=False, mininterval=1.0):
        pos = torch.from_numpy(positions[s : s + batch_size].astype(np.int64))
        idx = pos[:, None] - c + torch.arange(c)  # (nb, c) context windows
        head, _ = model(data[idx].to(device))
        logp = head.log_probs()[:, -1]  # (nb, V)
        out[k, s : s + len(pos)] = -logp.gather(1, data[pos][:, None].to(device)).squeeze(1).double().cpu().numpy()
    return out
