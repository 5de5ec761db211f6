"""Recurrent blocks over right-padded batches: a (bi)directional GRU / LSTM that reads only each row's real
positions, for readers and sequence-to-sequence encoders (thesis Y §3.2.4: the gated-attention reader's BiGRUs,
the question generator's encoder).

    rnn = BiRNN(d_in, d_hidden)                 # cell "gru" (default) or "lstm"; bidirectional by default
    out, last = rnn(x, mask)                    # x (B, T, d_in), mask (B, T) True = real  ->  out (B, T, dirs·d_hidden)
                                                #   (zeros at padding), last (B, dirs·d_hidden): the forward
                                                #   direction's state after the last real token, the backward
                                                #   direction's after the first
Rows must have at least one real position, and real positions must come first (right padding).

The two directions are two one-directional cells over unpacked tensors: the forward one reads the padded rows
as they are (with right padding, position t has read only 0..t), the backward one reads each row's real part
reversed (a per-row index flip, padding left in place) and its outputs are flipped back. The outputs equal a
packed bidirectional cell's (tests/gdan/test_blocks.py); a training pass (forward + backward) on the CPU is
1.22-3.64x faster than through `pack_padded_sequence` (docs/results/gdan.md, `benchmarks.gdan --table speed`),
which GDAN's 20-sentence cloze passages need. Padding is computed over, not skipped: the gain shrinks where
lengths differ much within a batch.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}


def flip_real(lengths: Tensor, T: int) -> Tensor:
    """(B, T) indices that reverse each row's first lengths[b] positions and keep the rest (an involution)."""
    t = torch.arange(T, device=lengths.device)[None, :]
    return torch.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)


class BiRNN(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, cell: str = "gru", bidirectional: bool = True):
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"cell must be one of {', '.join(CELLS)}, got {cell!r}")
        self.forward_rnn = CELLS[cell](d_in, d_hidden, batch_first=True)
        self.backward_rnn = CELLS[cell](d_in, d_hidden, batch_first=True) if bidirectional else None
        self.d_out = d_hidden * (2 if bidirectional else 1)

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        lengths = mask.sum(1)  # (B,)
        if bool((lengths == 0).any()):
            raise ValueError("BiRNN: a row has no real position")
        rows = torch.arange(len(x), device=x.device)
        out, _ = self.forward_rnn(x)  # (B, T, d_hidden)
        outs, lasts = [out], [out[rows, lengths - 1]]
        if self.backward_rnn is not None:
            flip = flip_real(lengths, x.size(1))[..., None]  # (B, T, 1)
            back, _ = self.backward_rnn(x.gather(1, flip.expand_as(x)))  # row b read from lengths[b] - 1 down to 0
            lasts.append(back[rows, lengths - 1])
            outs.append(back.gather(1, flip.expand_as(back)))
        return torch.cat(outs, -1).masked_fill(~mask[..., None], 0.0), torch.cat(lasts, -1)
