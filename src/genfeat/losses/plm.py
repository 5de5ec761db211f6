"""Pretraining objectives on the XLNet backbone (thesis Y §2.2.2, Eq. 2.2 vs Eq. 2.5).

    PLM   -Σ_{targets} log p(x_{z_t} | x_{z<t}) / #targets, read from the query stream at the target positions
          under the permutation masks of `genfeat.data.plm` (the content stream sees the true tokens)
    MLM   BERT's denoising objective on the same backbone without a query stream (Table 2.19 row 2, "DAE +
          Transformer-XL"): targets replaced by <mask> 80% / a random token 10% / kept 10%, each target
          predicted independently from the fully bidirectional content stream

Both take a batch dict with input_ids (B, T) and the `plm_inputs` fields (perm_mask, target_pos, labels;
labels -100 are ignored), optionally token_type_ids / attention_mask / mems, and return (mean NLL, #targets). The
model is any LM with XLNet's call signature (`models.xlnet.XLNetLM`: perm_mask / target_pos / positions); its
second output is the backbone's (`XLNetOutput`).
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from genfeat.heads.base import HeadOutput
from genfeat.losses.nll import nll


def _extra(batch: dict[str, Tensor]) -> dict[str, Tensor]:
    return {k: batch[k] for k in ("token_type_ids", "attention_mask", "mems") if k in batch}


def plm_forward(lm: nn.Module, batch: dict[str, Tensor]) -> tuple[HeadOutput, Any]:
    """Query-stream scores at the targets under the permutation masks."""
    return lm(batch["input_ids"], perm_mask=batch["perm_mask"], target_pos=batch["target_pos"], **_extra(batch))


def mlm_forward(lm: nn.Module, batch: dict[str, Tensor]) -> tuple[HeadOutput, Any]:
    """Content-stream scores at the targets of an already corrupted input (`data.plm.mlm_corrupt`); no perm mask."""
    return lm(batch["input_ids"], positions=batch["target_pos"], **_extra(batch))


def plm_loss(lm: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, int]:
    out, _ = plm_forward(lm, batch)
    return nll(out, batch["labels"]), int((batch["labels"] != -100).sum())


def mlm_loss(lm: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, int]:
    out, _ = mlm_forward(lm, batch)
    return nll(out, batch["labels"]), int((batch["labels"] != -100).sum())


class PretrainingLoss:
    """XLNet pretraining's loss for `train.fit`: PLM or MLM on consecutive batches of a `data.plm.PretrainStream`,
    carrying the backbone's (detached) memory of each batch's reuse part into the next (thesis Y §2.2.3's segment
    recurrence). The memory is the loss's state, checkpointed with the run, so a resume is exact."""

    def __init__(self, objective: str):
        if objective not in ("plm", "mlm"):
            raise ValueError(f"objective must be plm or mlm, got {objective!r}")
        self.forward = plm_forward if objective == "plm" else mlm_forward
        self.mems: tuple[Tensor, ...] | None = None

    def __call__(self, model: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, int]:
        device = next(model.parameters()).device
        batch = {k: v.to(device) for k, v in batch.items()}
        if self.mems is not None:
            batch["mems"] = tuple(m.to(device) for m in self.mems)
        out, o = self.forward(model, batch)
        self.mems = o.mems
        return nll(out, batch["labels"]), int((batch["labels"] != -100).sum())

    def state_dict(self) -> dict[str, Any]:
        return {"mems": [m.cpu() for m in self.mems] if self.mems is not None else []}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.mems = tuple(state["mems"]) or None
