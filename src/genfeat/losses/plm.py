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

from genfeat.losses.nll import nll
from genfeat.nn.outputs import BackboneOutput


def plm_loss(lm: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, int]:
    extra = {k: batch[k] for k in ("token_type_ids", "attention_mask", "mems") if k in batch}
    out, _ = lm(batch["input_ids"], perm_mask=batch["perm_mask"], target_pos=batch["target_pos"], **extra)
    labels = batch["labels"]
    return nll(out, labels), int((labels != -100).sum())


def mlm_corrupt(tokens: Tensor, target_pos: Tensor, mask_id: int, vocab_size: int,
                generator: torch.Generator | None = None, probs: tuple[float, float] = (0.8, 0.1)) -> Tensor:
    """BERT corruption of the targets: <mask> with probs[0], a uniformly random token with probs[1], else kept."""
    u = torch.rand(target_pos.shape, generator=generator).to(tokens.device)
    rand = torch.randint(0, vocab_size, target_pos.shape, generator=generator).to(tokens.device)
    orig = tokens.gather(1, target_pos)
    new = torch.where(u < probs[0], torch.full_like(orig, mask_id), torch.where(u < sum(probs), rand, orig))
    return tokens.scatter(1, target_pos, new)


def mlm_loss(lm: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, int]:
    """batch["input_ids"] already corrupted (`mlm_corrupt`); no perm mask, no query stream."""
    extra = {k: batch[k] for k in ("token_type_ids", "attention_mask", "mems") if k in batch}
    o = lm.transformer(batch["input_ids"], **extra)
    out = lm.head(BackboneOutput(hidden=o.hidden), positions=batch["target_pos"])  # only the target rows
    labels = batch["labels"]
    return nll(out, labels), int((labels != -100).sum())
