"""Multi-facet universal schema (thesis C §3.3.1, Eqs. 3.8-3.9, Figure 3.5, Appendix B.1-B.2; spec
multi-facet-universal-schema.md §4-5) and its two baselines, one class each. A row (a sentence pattern such as
"$ARG1 is a plugin for $ARG2", or a KB relation written as a one-token sentence) -> K facets in the entity-pair
space; a trainable entity-pair table.

    MultiFacetSchema        the §3.2 facet network (`models.facets`, transformer or bi-LSTM encoder, transformer
                            decoder) with max(K, K_rel) slots, patterns using the first K and KB relations all K_rel
                            (`FacetConfig.row_k`); H for Ω (Eq. B.2), a linear map from the fixed word vectors into
                            the entity-pair space. K = K_rel = 1 is the single-facet ablation ("Ours (Single-*)")
    USchema                 Riedel et al. 2013: a lookup embedding per row; cannot score an unseen pattern
    CompositionalSchema     Verga et al. 2016 (CUSchema): a bi-LSTM over the row's tokens -> one embedding

Every model has `row_facets(rows) -> (facets (B, K, d), slot mask (B, K) or None)` (K = 1 for the baselines)
and maps a training batch to `RowOutput`: the rows' facets (B, K, d) and slot mask (B, K) (K = 1 for the
baselines), and the entity-pair embeddings the batch names (pair_ids (B, N) and, for the logistic loss,
random_pair_ids (B, N)), so one forward covers everything a loss differentiates (DDP sees it).

Batch keys: input_ids (B, T) left-padded "tokens <eos>", row_types (B,) 0 = pattern / 1 = KB relation, row_ids
(B,), pair_ids (B, N), pair_mask (B, N), and optionally random_pair_ids (B, N), sif (B, d_word) (Eq. B.2's
s^aw of each row).
Deviations: the entity-pair width and USchema's training are not in the thesis (the reference reads them from an
embedding file): here both are `d_target`, USchema trained by the recipe's first phase. CUSchema trains with
USchema's logistic loss (Verga et al.'s own loss and hyper-parameter search are not reproduced), its LSTM as
`models.facets.encoders.LSTMEncoder` (hidden = d_model per direction; the reference's multi-facet LSTM: 100).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from genfeat.models.facets.config import FacetConfig
from genfeat.models.facets.encoders import LSTMEncoder
from genfeat.models.facets.model import FacetModel
from genfeat.models.universal_schema.config import UniversalSchemaConfig


@dataclass
class RowOutput:
    facets: Tensor  # (B, K, d), free norms, 0 at masked slots
    facet_mask: Tensor | None  # (B, K) True = a real facet; None: all real
    pairs: Tensor  # (B, N, d) the embeddings of the batch's pair_ids
    random_pairs: Tensor | None = None  # (B, N, d) of random_pair_ids (the logistic loss's negatives)
    targets: Tensor | None = None  # (B, d) H s^aw (Ω's targets), when the batch has sif and the model H


class PairTable(nn.Module):
    """The entity-pair embeddings, shared by every model's output. `scores_new_rows`: whether the model can
    embed a row it was not trained on (a pattern's tokens; USchema's lookup cannot)."""

    scores_new_rows = True

    def __init__(self, n_pairs: int, d: int, std: float):
        super().__init__()
        self.pairs = nn.Embedding(n_pairs, d)
        nn.init.normal_(self.pairs.weight, std=std)

    def lookup(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor | None]:
        rand = batch.get("random_pair_ids")
        return self.pairs(batch["pair_ids"]), None if rand is None else self.pairs(rand)


class MultiFacetSchema(PairTable):
    def __init__(self, cfg: UniversalSchemaConfig, n_pairs: int, d_word: int = 0,
                 init_embedding: Tensor | None = None):
        """`d_word` > 0: the width of Ω's fixed word vectors (H maps them into the entity-pair space)."""
        super().__init__(n_pairs, cfg.d_target, cfg.pair_init_std)
        self.cfg = cfg
        self.net = FacetModel(cfg.facet_config(), init_embedding)
        self.H = nn.Linear(d_word, cfg.d_target, bias=False) if d_word else None
        if self.H is not None:
            nn.init.normal_(self.H.weight)  # N(0, 1): the reference's

    def row_facets(self, rows: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        mask = self.net.row_slot_mask(rows["row_types"])
        return self.net(rows["input_ids"], mask), mask

    def forward(self, batch: dict[str, Tensor]) -> RowOutput:
        facets, mask = self.row_facets(batch)
        pairs, rand = self.lookup(batch)
        targets = self.H(batch["sif"]) if self.H is not None and "sif" in batch else None
        return RowOutput(facets, mask, pairs, rand, targets)


class USchema(PairTable):
    scores_new_rows = False

    def __init__(self, cfg: UniversalSchemaConfig, n_rows: int, n_pairs: int):
        super().__init__(n_pairs, cfg.d_target, cfg.pair_init_std)
        self.cfg = cfg
        self.rows = nn.Embedding(n_rows, cfg.d_target)
        nn.init.normal_(self.rows.weight, std=cfg.pair_init_std)

    def row_facets(self, rows: dict[str, Tensor]) -> tuple[Tensor, None]:
        return self.rows(rows["row_ids"])[:, None], None  # (B, 1, d)

    def forward(self, batch: dict[str, Tensor]) -> RowOutput:
        pairs, rand = self.lookup(batch)
        return RowOutput(*self.row_facets(batch), pairs, rand)


class CompositionalSchema(PairTable):
    def __init__(self, cfg: UniversalSchemaConfig, n_pairs: int, init_embedding: Tensor | None = None):
        super().__init__(n_pairs, cfg.d_target, cfg.pair_init_std)
        self.cfg = cfg
        enc_cfg = FacetConfig(**{f: getattr(cfg, f) for f in FacetConfig.__dataclass_fields__} | {"encoder": "lstm"})
        self.encoder = LSTMEncoder(enc_cfg, init_embedding)
        self.out = nn.Linear(cfg.d_model, cfg.d_target)

    def row_facets(self, rows: dict[str, Tensor]) -> tuple[Tensor, None]:
        return self.out(self.encoder(rows["input_ids"]).pooled)[:, None], None  # (B, 1, d)

    def forward(self, batch: dict[str, Tensor]) -> RowOutput:
        pairs, rand = self.lookup(batch)
        return RowOutput(*self.row_facets(batch), pairs, rand)


def build_model(cfg: UniversalSchemaConfig, n_rows: int, n_pairs: int, d_word: int = 0,
                init_embedding: Tensor | None = None) -> nn.Module:
    """The model `cfg.kind` names."""
    if cfg.kind == "uschema":
        return USchema(cfg, n_rows, n_pairs)
    if cfg.kind == "cuschema":
        return CompositionalSchema(cfg, n_pairs, init_embedding)
    return MultiFacetSchema(cfg, n_pairs, d_word, init_embedding)


@torch.no_grad()
def all_row_facets(model: nn.Module, rows: dict[str, Tensor], batch: int = 512) -> tuple[Tensor, Tensor | None]:
    """`row_facets` of many rows (input_ids, row_types, row_ids) in eval mode, on the CPU: (n, K, d), (n, K) or
    None."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    n = rows["row_ids"].size(0)
    facets, masks = [], []
    for a in range(0, n, batch):
        f, m = model.row_facets({k: v[a: a + batch].to(device) for k, v in rows.items()})
        facets.append(f.cpu())
        masks.append(None if m is None else m.cpu())
    model.train(was)
    return torch.cat(facets), None if masks[0] is None else torch.cat(masks)
