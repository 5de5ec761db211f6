"""Pretraining objectives on the XLNet backbone (thesis Y §2.2.2, Eq. 2.2 vs Eq. 2.5).

    PLM   -Σ_{targets} log p(x_{z_t} | x_{z<t}) / #targets, read from the query stream at the target positions
          under the permutation masks of `genfeat.data.plm` (the content stream sees the true tokens)
    MLM   BERT's denoising objective on the same backbone without a query stream (Table 2.19 row 2, "DAE +
          Transformer-XL"): targets replaced by <mask> 80% / a random token 10% / kept 10%, each target
          predicted independently from the fully bidirectional content stream

Both take a batch dict with input_ids (B, T) and the `plm_inputs` fields (perm_mask, target_pos, labels;
labels -100 are ignored), optionally token_type_ids / attention_mask / mems, and return (mean NLL, #targets).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from genfeat.heads.base import HeadOutput
from genfeat.losses.nll import nll
from genfeat.models.xlnet.model import XLNetOutput


def _extra(batch: dict[str, Tensor]) -> dict[str, Tensor]:
    return {k: batch[k] for k in ("token_type_ids", "attention_mask", "mems") if k in batch}


def plm_forward(lm: nn.Module, batch: dict[str, Tensor]) -> tuple[HeadOutput, XLNetOutput]:
    """Query-stream scores at the targets under the permutation masks."""
    return lm(batch["input_ids"], perm_mask=batch["perm_mask"], target_pos=batch["target_pos"], **_extra(batch))


def mlm_forward(lm: nn.Module, batch: dict[str, Tensor]) -> tuple[HeadOutput, XLNetOutput]:
    """Content-stream scores at the targets of an already corrupted input (`mlm_corrupt`); no perm mask."""
    return lm(batch["input_ids"], positions=batch["target_pos"], **_extra(batch))


def plm_loss(lm: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, int]:
    out, _ = plm_forward(lm, batch)
    return nll(out, batch["labels"]), int((batch["labels"] != -100).sum())


def mlm_loss(lm: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, int]:
    out, _ = mlm_forward(lm, batch)
    return nll(out, batch["labels"]), int((batch["labels"] != -100).sum())


def mlm_corrupt(tokens: Tensor, target_pos: Tensor, mask_id: int, vocab_size: int,
                generator: torch.Generator | None = None, probs: tuple[float, float] = (0.8, 0.1)) -> Tensor:
    """BERT corruption of the targets: <mask> with probs[0], a uniformly random token with probs[1], else kept."""
    u = torch.rand(target_pos.shape, generator=generator).to(tokens.device)
    rand = torch.randint(0, vocab_size, target_pos.shape, generator=generator).to(tokens.device)
    orig = tokens.gather(1, target_pos)
    new = torch.where(u < probs[0], torch.full_like(orig, mask_id), torch.where(u < sum(probs), rand, orig))
    return tokens.scatter(1, target_pos, new)
