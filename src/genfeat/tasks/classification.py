"""Sequence (and sequence-pair) classification and regression, and multiple choice, as tasks (`tasks.base`).

Rows: the encoder's inputs (`input_ids`, `token_type_ids`, `attention_mask`; (N, T), or (N, C, T) for multiple
choice) and `labels` (N,) (class ids; floats for regression). The model is called as
model(input_ids, token_type_ids, attention_mask) and returns logits (N, n_labels), (N,) for regression, or (N, C)
for multiple choice (`nn.task_heads.SequenceClassifier`, `MultipleChoice`). Metrics: `metrics.classification`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.losses.classification import classification_loss
from genfeat.metrics.calibration import ece
from genfeat.metrics.classification import classification_scores
from genfeat.models.bert.tokenizer import encode
from genfeat.tasks.base import Rows, Task, predict_rows, to_device

INPUTS = ("input_ids", "token_type_ids", "attention_mask")


def encode_rows(tok: Any, pairs: list[tuple[str, str | None]], y: np.ndarray, idx: np.ndarray,
                max_len: int) -> Rows:
    """The rows of the examples `idx` of (text_a, text_b | None) pairs and labels `y` (`data.labelled`): BERT's
    [CLS] A [SEP] B [SEP] inputs cut to `max_len` tokens, and "labels"."""
    b = None if pairs[0][1] is None else [pairs[i][1] for i in idx]
    return encode(tok, [pairs[i][0] for i in idx], b, max_len=max_len) | {"labels": torch.from_numpy(y[idx])}


class SequenceClassification(Task):
    """`data`: {split: rows}; "train" is trained on, the others evaluated. `glue_task` adds GLUE's own metric
    (CoLA MCC, MRPC / QQP F1) and the expected calibration error (`metrics.calibration.ece`, percent); regression
    (float labels) is scored by Pearson (primary) and Spearman.
    `trim_padding`: evaluate with dynamic padding (`tasks.base.predict_rows`; right-padded (N, T) rows only)."""

    def __init__(self, data: Mapping[str, Rows], glue_task: str | None = None, batch: int = 32,
                 trim_padding: bool = False):
        self.data, self.glue_task, self.batch = dict(data), glue_task, batch
        self.trim_padding = trim_padding
        self.train_rows = self.data.get("train")
        self.splits = tuple(k for k in self.data if k != "train")
        labels = next(iter(self.data.values()))["labels"]
        self.regression = labels.is_floating_point()
        self.metric = "pearson" if self.regression else "accuracy"

    @staticmethod
    def _call(model: nn.Module, rows: Rows) -> Tensor:
        return model(*(rows[k] for k in INPUTS if k in rows))

    def loss(self, model: nn.Module, batch: Rows) -> tuple[Tensor, int]:
        batch = to_device(batch, next(model.parameters()).device)
        logits = self._call(model, batch)
        return classification_loss(logits, batch["labels"]), len(logits)

    def predict(self, model: nn.Module, split: str) -> Tensor:
        return predict_rows(model, {k: v for k, v in self.data[split].items() if k in INPUTS}, self.batch,
                            self.trim_padding)

    def score(self, pred: Tensor, split: str) -> dict[str, float]:
        labels = self.data[split]["labels"].numpy()
        out = classification_scores(pred.float().numpy(), labels, self.glue_task)
        if not self.regression:  # calibration of the softmax probabilities (Eq. D.1, percent)
            out["ece"] = ece(torch.softmax(pred.float(), -1).numpy(), labels)
        return out


class MultipleChoice(SequenceClassification):
    """Rows (N, C, T) with the index of the right option as the label (RACE); accuracy, and `accuracy_by` a
    grouping of the split's rows (RACE's middle / high school)."""

    def score(self, pred: Tensor, split: str) -> dict[str, float]:
        return {"accuracy": float((pred.argmax(-1) == self.data[split]["labels"]).float().mean())}

    def accuracy_by(self, pred: Tensor, split: str, groups: list[str]) -> dict[str, float]:
        """{group: accuracy over the split's rows in it}, for every group of `groups` (one name per row)."""
        right = pred.argmax(-1) == self.data[split]["labels"]
        names = np.array(groups)
        return {g: float(right[torch.from_numpy(names == g)].float().mean()) for g in dict.fromkeys(groups)}
