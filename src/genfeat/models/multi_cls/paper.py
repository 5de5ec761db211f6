"""Multi²SPE, the multi-CLS paper encoder (thesis C §5.3.1, Fig. 5.5, Eqs. 5.5 and 5.7; spec multi2spe.md §3): a
`MultiCLSEncoder` with [CLS] as facet 1 (`cls_facet`), mean-subtracted maps with bias after the chosen blocks and
after the last one (`mean_subtract`, `insert_bias`, the last block in `insert_after`), then an optional tanh:

    c_k = act(L_{L,k}(h^c_{L,k}))        facet embeddings, (B, K, D)
    c   = Σ_k c_k                        the paper embedding that is stored and searched (§5.3.1.3), (B, D)

The SPECTER-style baseline is the same class at K = 1 with no inserted map and no activation: the last [CLS] state.

Deviations: the reference's tanh (`--add_extra_facet_nonlinearity`) is `activation="tanh"`, the thesis's equations
show none (`"none"`); the BERT body is genfeat's (`models.bert`), loaded from a SciBERT / MiniLM directory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from genfeat.errors import ConfigError
from genfeat.models.bert import BertModel
from genfeat.models.multi_cls.model import MultiCLSConfig, MultiCLSEncoder, facet_token_ids

ACTIVATIONS = ("tanh", "none")


class PaperEncoder(nn.Module):
    def __init__(self, encoder: MultiCLSEncoder, activation: str = "tanh"):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ConfigError(f"model.activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
        if not encoder.cfg.cls_facet:
            raise ConfigError("a paper encoder reads [CLS] as facet 1: build the encoder with cls_facet=True")
        self.encoder, self.activation = encoder, activation

    @property
    def k(self) -> int:
        return self.encoder.cfg.k

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None) -> Tensor:
        """Ordinary BERT inputs ([CLS] title [SEP] abstract [SEP]) -> facet embeddings c_k (B, K, D)."""
        h = self.encoder.facet_states(self.encoder(input_ids, token_type_ids, attention_mask).hidden)
        return torch.tanh(h) if self.activation == "tanh" else h

    def encode(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
               attention_mask: Tensor | None = None) -> Tensor:
        """The paper embedding c = Σ_k c_k (B, D)."""
        return self(input_ids, token_type_ids, attention_mask).sum(1)


def build_paper_encoder(bert: BertModel, k: int, insert_after: Sequence[int], mean_subtract: bool = True,
                        activation: str = "tanh", token_to_id: Callable[[str], int | None] | None = None
                        ) -> PaperEncoder:
    """Multi²SPE on a BERT body: [CLS] and K - 1 facet tokens ([unused1].. looked up with `token_to_id`; default
    bert-base-uncased's ids), identity-started mean-subtracted maps with bias after `insert_after` (the last block
    among them gives the output map)."""
    lookup = token_to_id if token_to_id is not None else BERT_UNUSED.get
    cfg = MultiCLSConfig(k=k, insert_after=tuple(insert_after), cls_facet=True, insert_bias=True,
                         mean_subtract=mean_subtract, insert_init="eye", facet_ids=facet_token_ids(lookup, k - 1))
    return PaperEncoder(MultiCLSEncoder(bert, cfg), activation)


BERT_UNUSED = {f"[unused{j}]": 1 + j for j in range(994)}  # bert-base-uncased: [unused0] = 1 ..
