"""DOC, Direct Output Connection (Takase et al. 2018) as thesis C §2.3 compares it (Table 2.1): a mixture of
three softmaxes whose facets come from three different layers instead of one,

    f_k = L^f_k(h^{M-3+k}),  k = 1..3       (identity-initialised, d -> d)
    π   = softmax(L^π([h^{M-2} ⊕ h^{M-1} ⊕ h^M]))
    P(x | c_t) = Σ_k π_k softmax(f_k^T W)_x

h^M is the backbone's final output, h^{M-1}, h^{M-2} the outputs of the blocks below (`all_hidden[-2]`,
`all_hidden[-3]`). Shapes: hidden (B, T, d) -> log-probabilities (B, T, V). The mixture arithmetic (full and
target-only paths) is `MixtureHead`'s. Deviations: none.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from genfeat.heads.base import HeadNeeds, output_embedding, select_positions, upcast
from genfeat.heads.facets import identity_facet
from genfeat.heads.multi_facet import MixtureHead
from genfeat.nn.outputs import BackboneOutput


class DOCHead(MixtureHead):
    K = 3
    needs = HeadNeeds(all_hidden=True, targets=True, positions=True)

    def __init__(self, d_model: int, vocab_size: int, tied_embedding: nn.Embedding | None = None,
                 bias: bool = False):
        super().__init__()
        self.vocab_size = vocab_size
        self.weight = output_embedding(vocab_size, d_model, tied_embedding)
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None
        self.facets = nn.ModuleList([identity_facet(d_model, d_model) for _ in range(self.K)])  # facet k <- M-3+k
        self.prior = nn.Linear(3 * d_model, self.K)  # L^π on the three layers

    def _components(self, out: BackboneOutput, input_ids: Tensor | None, mem_ids: Tensor | None,
                    positions: Tensor | None = None, word_order: bool = True) -> tuple[list[Tensor], Tensor]:
        if out.all_hidden is None or len(out.all_hidden) < 3:
            raise ValueError("DOC needs the top 3 layers; call the backbone with output_all_hidden=True")
        hs = [select_positions(h, positions) for h in (out.all_hidden[-3], out.all_hidden[-2], out.hidden)]
        f = torch.stack([layer(h) for layer, h in zip(self.facets, hs, strict=True)], -2)  # (B, P, 3, d)
        return [self._logits(f)], torch.log_softmax(upcast(self.prior(torch.cat(hs, -1))), -1)
