"""Recurrent blocks over right-padded batches: a (bi)directional GRU / LSTM that reads only each row's real
positions (packed), for readers and sequence-to-sequence encoders (thesis Y §3.2.4: the gated-attention reader's
BiGRUs, the question generator's encoder).

    rnn = BiRNN(d_in, d_hidden)                 # cell "gru" (default) or "lstm"; bidirectional by default
    out, last = rnn(x, mask)                    # x (B, T, d_in), mask (B, T) True = real  ->  out (B, T, dirs·d_hidden)
                                                #   (zeros at padding), last (B, dirs·d_hidden): the forward
                                                #   direction's state after the last real token, the backward
                                                #   direction's after the first
Rows must have at least one real position, and real positions must come first (right padding).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}


class BiRNN(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, cell: str = "gru", bidirectional: bool = True):
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"cell must be one of {', '.join(CELLS)}, got {cell!r}")
        self.rnn = CELLS[cell](d_in, d_hidden, batch_first=True, bidirectional=bidirectional)
        self.d_out = d_hidden * (2 if bidirectional else 1)

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        lengths = mask.sum(1)  # (B,)
        if bool((lengths == 0).any()):
            raise ValueError("BiRNN: a row has no real position")
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))  # (B, T, d_out)
        h = h[0] if isinstance(h, tuple) else h  # LSTM: (h, c)
        last = torch.cat(list(h), dim=-1)  # (dirs, B, d_hidden) -> (B, d_out)
        return out, last
