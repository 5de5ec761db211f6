"""A narrower head input: any head reads the backbone's states through one linear map to d_head dimensions.

Thesis C §2.2 (the softmax bottleneck, after Yang et al. 2018): a softmax over the context states H (N, d) and
an output embedding W (|V|, d) gives log-probabilities H W^T - lse(H W^T) of rank at most d + 1, so where the data's
log-probability matrix needs a higher rank than the head's input width, no softmax fits it and a mixture (MoS,
MFS) can. This module sets that width without changing the backbone: every state the head reads, the last layer's
`hidden` and, for multiple input states (Mi), the lower layers' `all_hidden`, goes through the same
P (d_model -> d_head, no bias), and the wrapped head is built for d_head with its own output embedding (the
backbone's token embedding has d_model columns, so it cannot be tied):

    h'_t = P h_t        (B, T, d_model) -> (B, T, d_head)
    head(h'), with W (|V|, d_head)

`benchmarks.heads_bottleneck` sweeps d_head for Softmax, MoS(3), MFS and Softmax + C + Mi on PTB (issue: where
the bottleneck binds). Deviation: the thesis varies the model, not a projection in front of a fixed one.
"""

from __future__ import annotations

from torch import nn

from genfeat.heads.base import HeadOutput
from genfeat.nn.outputs import BackboneOutput


class HeadInputBottleneck(nn.Module):
    def __init__(self, head: nn.Module, d_model: int, d_head: int):
        super().__init__()
        self.proj = nn.Linear(d_model, d_head, bias=False)  # P
        self.head = head
        self.needs = head.needs  # it reads what the wrapped head reads

    def forward(self, out: BackboneOutput, **head_kwargs) -> HeadOutput:
        p = self.proj
        narrow = BackboneOutput(hidden=p(out.hidden),  # (B, T, d_head)
                                all_hidden=tuple(p(h) for h in out.all_hidden) if out.all_hidden else None,
                                mems=out.mems, mem_ids=out.mem_ids)
        return self.head(narrow, **head_kwargs)
