"""GRU4Rec encoder (Hidasi et al. 2016) as RecBole implements it, the second encoder of thesis C §2.5
(spec sequential-recommendation.md §3.2).

    e_t = Dropout(E[i_t])   (embedding 64, dropout 0.3)  ->  GRU (hidden 128, 1 layer, no bias)  ->  dense 128 -> 64

The output lives in the item-embedding space (64-d), where the heads and the tied item embedding score it.
Returns `BackboneOutput(hidden, all_hidden=(hidden,))` (Mi reads H = 1 layer). Init as RecBole: Xavier-normal
embedding, Xavier-uniform GRU weights, PyTorch default for `dense`.

Deviations: none.
"""

from __future__ import annotations

from torch import Tensor, nn

from genfeat.nn.dropout import Dropout
from genfeat.nn.outputs import BackboneOutput


class GRU4RecEncoder(nn.Module):
    def __init__(self, n_items: int, d: int = 64, hidden_size: int = 128, num_layers: int = 1, dropout: float = 0.3):
        super().__init__()
        self.n_layers = 1  # layers visible to Mi: the dense output
        self.item_embedding = nn.Embedding(n_items + 1, d, padding_idx=0)
        self.drop = Dropout(dropout)
        self.gru = nn.GRU(d, hidden_size, num_layers, bias=False, batch_first=True)
        self.dense = nn.Linear(hidden_size, d)
        nn.init.xavier_normal_(self.item_embedding.weight)
        for name, p in self.gru.named_parameters():
            if name.startswith("weight"):
                nn.init.xavier_uniform_(p)

    def init_weights(self, m: nn.Module) -> None:
        """RecBole GRU4Rec leaves Linear layers (the head's too) at PyTorch's default init."""
        if isinstance(m, nn.Linear):
            m.reset_parameters()

    def forward(self, item_seq: Tensor) -> BackboneOutput:
        h, _ = self.gru(self.drop(self.item_embedding(item_seq)))
        h = self.dense(h)
        return BackboneOutput(h, all_hidden=(h,))
