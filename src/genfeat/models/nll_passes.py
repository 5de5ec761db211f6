"""The NLL passes of a `CausalLM` over a token stream: how one ordered pass over a split is cut into model calls
(`tasks.language_modeling.NLLPass`). Each returns (summed NLL, number of targets), in float64.

    segment_nll   consecutive segments of B parallel streams; with `carry_memory` the backbone's memory flows from
                  each segment to the next (Transformer-XL evaluation, thesis Y §2.1)
    sliding_nll   overlapping windows that score only their newest targets (the vanilla-Transformer evaluation of
                  thesis Y §2.1.2, after Al-Rfou et al.)
"""

from __future__ import annotations

import numpy as np
import torch

from genfeat.data.streams import OrderedSegments
from genfeat.errors import ConfigError
from genfeat.losses.nll import nll
from genfeat.nn.outputs import BackboneOutput
from genfeat.train import distributed as D
from genfeat.train.logging import progress


@torch.no_grad()
def segment_nll(model: torch.nn.Module, tokens: np.ndarray, batch_size: int, seq_len: int, split: str,
                carry_memory: bool = False) -> tuple[float, int]:
    """Summed NLL and target count of one ordered pass of `tokens` in segments of `seq_len` (B parallel
    streams). With `carry_memory` the backbone's memory flows from each segment to the next
    (Transformer-XL evaluation); it starts empty."""
    device = next(model.parameters()).device
    total, count, memory = torch.zeros((), dtype=torch.float64, device=device), 0, {}
    segments = OrderedSegments(tokens, batch_size, seq_len, loop=False)
    for x, y in progress(segments, total=len(segments), desc=f"{split} pass"):
        y = y.to(device)
        out, bb = model(x.to(device), targets=y, **memory)
        if carry_memory:
            memory = bb.carry()
        total += nll(out, y, reduction="sum").double()
        count += y.numel()
    return total.item(), count


@torch.no_grad()
def sliding_nll(model: torch.nn.Module, tokens: np.ndarray, window: int, stride: int, split: str,
                batch_size: int = 64) -> tuple[float, int]:
    """Summed NLL and target count of the vanilla-Transformer evaluation (thesis Y §2.1.2, Al-Rfou et al.):
    windows of `window` tokens moved by `stride`; each window scores only its last `stride` targets (the first
    window scores all), so every target is predicted once with at least window - stride tokens of context.
    stride=1 is the thesis protocol (one prediction per window, maximal context)."""
    if not 1 <= stride <= window:
        raise ConfigError(f"sliding-window stride must be in [1, {window}], got {stride}")
    device = next(model.parameters()).device
    data = torch.from_numpy(np.asarray(tokens, dtype=np.int64))
    n = data.numel() - 1  # targets 1..n
    if n < window:
        raise ConfigError(f"{n + 1} tokens are too few for a {window}-token window")
    starts = list(range(0, n - window + 1, stride))
    if starts[-1] + window < n:  # cover the tail with one last window
        starts.append(n - window)
    lm = D.unwrap(model)
    total, count, scored_to = torch.zeros((), dtype=torch.float64, device=device), 0, 0  # targets 1..scored_to done
    for b in progress(range(0, len(starts), batch_size), desc=f"{split} pass (sliding window)"):
        chunk = starts[b : b + batch_size]
        firsts = []
        for s in chunk:  # window s predicts targets s+1 .. s+window; score only the new ones
            firsts.append(max(scored_to + 1, s + 1) - (s + 1))
            scored_to = s + window
        idx = torch.tensor(chunk)[:, None] + torch.arange(window + 1)  # (nb, W+1)
        xy = data[idx].to(device)
        bb = lm.backbone(xy[:, :-1])
        keep = min(firsts)  # the output layer only runs on positions that are scored
        out = lm.head(BackboneOutput(hidden=bb.hidden[:, keep:]), xy[:, :-1])
        losses = nll(out, xy[:, 1 + keep :], reduction="none")  # (nb, W - keep)
        for row, first in enumerate(firsts):
            total += losses[row, first - keep :].double().sum()
            count += window - first
    return total.item(), count
