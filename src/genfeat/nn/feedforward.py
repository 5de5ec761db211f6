"""Position-wise feed-forward block (Linear -> GELU -> Linear, dropout). `approximate="tanh"`: GPT-2's GELU
("gelu_new"); "none": the exact (erf) GELU."""

from __future__ import annotations

from torch import Tensor, nn

from genfeat.nn.dropout import Dropout


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, bias: bool = True, approximate: str = "none"):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_model, d_ff, bias=bias),
            nn.GELU(approximate=approximate),
            nn.Linear(d_ff, d_model, bias=bias),
            Dropout(dropout),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)
