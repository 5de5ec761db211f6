"""Extractive question answering with unanswerable questions (SQuAD 2.0; thesis Y §2.3.2), as a task
(`tasks.base`).

Per split: the questions (`data.squad.SquadExample`) and their windows over the paragraph
(`data.squad.squad_features`: max_len pieces, doc_stride overlap). Rows: the encoder's inputs per window
(`input_ids`, `token_type_ids`, `attention_mask`), `p_mask` (1 where no answer may start: the question and the
separators) and `cls_index`; training rows add `start_positions`, `end_positions` and `is_impossible`. The model
is a span extractor (`nn.task_heads.SpanExtractor`, `models.xlnet.heads.XLNetForSquad`) called with those keyword
arguments: with the positions it returns {"loss": ...}, without them the start / end log-probabilities and the
answerability logit of every window.

Evaluation: per question, the best span over its windows (`data.squad.squad_predictions`); "" when the null score
exceeds the threshold. Metrics (`metrics.squad`, the official script's normalisation): exact match and F1 at the
null threshold 0 (`exact`, `f1`, the primary one), and at the threshold that maximises F1 on the split
(`exact_best_threshold`, `f1_best_threshold`, the reference's reported setting) with that threshold
(`null_threshold`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor, nn

from genfeat.data.squad import SquadExample, SquadFeature, squad_predictions
from genfeat.metrics.squad import best_null_threshold, squad_scores
from genfeat.tasks.base import Task, predict_rows, to_device

INPUTS = ("input_ids", "token_type_ids", "attention_mask", "p_mask", "cls_index")
TARGETS = (("start_positions", "start_position"), ("end_positions", "end_position"),
           ("is_impossible", "is_impossible"))


def feature_rows(features: Sequence[SquadFeature], targets: bool = False) -> dict[str, Tensor]:
    rows = {n: torch.tensor([getattr(f, n) for f in features]) for n in INPUTS}
    if targets:
        rows |= {n: torch.tensor([getattr(f, a) for f in features]) for n, a in TARGETS}
    return rows


class SpanQA(Task):
    metric = "f1"
    mode = "max"
    unit = "features"  # the loss counts windows of the contexts, not questions

    def __init__(self, examples: Mapping[str, list[SquadExample]], features: Mapping[str, list[SquadFeature]],
                 max_answer: int = 64, batch: int = 32):
        self.examples, self.features, self.max_answer, self.batch = dict(examples), dict(features), max_answer, batch
        self.train_rows = feature_rows(self.features["train"], targets=True) if "train" in self.features else None
        self.splits = tuple(k for k in self.features if k != "train")

    def loss(self, model: nn.Module, batch: Mapping[str, Tensor]) -> tuple[Tensor, int]:
        return model(**to_device(batch, next(model.parameters()).device))["loss"], len(batch["input_ids"])

    def predict(self, model: nn.Module, split: str) -> dict[str, Tensor]:
        return predict_rows(model, feature_rows(self.features[split]), self.batch)

    def answers(self, outputs: Mapping[str, Tensor], split: str, null_threshold: float = 0.0
                ) -> tuple[dict[str, str], dict[str, float]]:
        """qid -> answer text ("" = no answer) and qid -> null score, from the model's outputs on the split."""
        return squad_predictions(self.examples[split], self.features[split], outputs, self.max_answer, null_threshold)

    def score(self, outputs: Mapping[str, Tensor], split: str) -> dict[str, float]:
        gold = {e.qid: [a for a, _ in e.answers] for e in self.examples[split]}
        preds, nulls = self.answers(outputs, split)
        at0 = squad_scores(preds, gold)
        best = best_null_threshold(self.answers(outputs, split, float("inf"))[0], nulls, gold)
        return {"exact": at0["exact"], "f1": at0["f1"], "exact_best_threshold": best["exact"],
                "f1_best_threshold": best["f1"], "null_threshold": best["threshold"]}
