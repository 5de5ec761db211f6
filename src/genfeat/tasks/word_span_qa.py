"""Extractive QA over word tokens for any reader (thesis Y §3.2; spec gdan.md §2.3, §4.2), as a task
(`tasks.base`): the span-QA task without a subword encoder's input layout.

Rows: `data.qa.qa_rows` (paragraph, question and their masks, start / end, answer_mask; candidates for the cloze
format). The model is called as model(paragraph=, paragraph_mask=, question=, question_mask=) and returns
start_log_probs / end_log_probs (B, T) (`models.gdan.GatedAttentionReader`, or a module that applies one with the
test-time domain tag).

    loss      -mean_b [log P_s(j_b) + log P_e(k_b)]; cloze: -mean_b log Σ_{i: p_i = a_b} P_s(i) (attention-sum)
    predict   the best span with j <= k < j + max_span (`models.gdan.reader.best_spans`); in the cloze format the
              candidate with the largest attention-sum
    score     SQuAD exact match and F1 (`metrics.squad`, the official normalisation, ×100) of the span's text against
              the gold answer; cloze: accuracy (×100)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor, nn

from genfeat.data.qa import QAExample, QAVocab, qa_rows, trim_rows
from genfeat.metrics.squad import squad_scores
from genfeat.models.gdan.reader import answer_log_likelihood, best_spans, candidate_log_probs
from genfeat.tasks.base import Task

INPUTS = ("paragraph", "paragraph_mask", "question", "question_mask")


def reader_inputs(rows: Mapping[str, Tensor]) -> dict[str, Tensor]:
    return {k: rows[k] for k in INPUTS}


def span_nll(model: nn.Module, rows: Mapping[str, Tensor], **kw) -> Tensor:
    """-log P(a | p, q) per row (B,) under model(**inputs, **kw) (`models.gdan.reader.answer_log_likelihood`: the
    span's, or the answer word's attention-sum in the cloze format)."""
    return -answer_log_likelihood(model(**reader_inputs(rows), **kw), rows)


class WordSpanQA(Task):
    metric = "f1"
    mode = "max"

    def __init__(self, splits: Mapping[str, Sequence[QAExample]], vocab: QAVocab, train: Sequence[QAExample] = (),
                 max_span: int = 15, batch: int = 64):
        self.vocab, self.max_span, self.batch = vocab, max_span, batch
        self.examples = {k: list(v) for k, v in splits.items()}
        self.rows = {k: qa_rows(v, vocab) for k, v in self.examples.items()}
        self.cloze = any("candidates" in r for r in self.rows.values())
        if self.cloze:
            self.metric = "accuracy"
        self.train_rows = qa_rows(train, vocab) if train else None
        self.splits = tuple(self.examples)

    def loss(self, model: nn.Module, batch: Mapping[str, Tensor]) -> tuple[Tensor, int]:
        device = next(model.parameters()).device
        batch = trim_rows({k: v.to(device) for k, v in batch.items()})
        return span_nll(model, batch).mean(), len(batch["start"])

    @torch.no_grad()
    def predict(self, model: nn.Module, split: str) -> Tensor:
        """(N, 2) predicted spans (start, end); cloze: (N,) the chosen candidates' indices."""
        was = model.training
        model.eval()
        device = next(model.parameters()).device
        rows, outs = self.rows[split], []
        n = len(rows["start"])
        for a in range(0, n, self.batch):
            chunk = trim_rows({k: v[a:a + self.batch].to(device) for k, v in rows.items()})
            out = model(**reader_inputs(chunk))
            if self.cloze:
                outs.append(candidate_log_probs(chunk["paragraph"], out["start_log_probs"],
                                                chunk["candidates"]).argmax(1).cpu())
            else:
                outs.append(best_spans(out["start_log_probs"], out["end_log_probs"], self.max_span).cpu())
        model.train(was)
        return torch.cat(outs)

    def answers(self, pred: Tensor, split: str) -> dict[str, str]:
        out = {}
        for e, p in zip(self.examples[split], pred.tolist(), strict=True):
            out[e.qid] = e.candidates[p] if self.cloze else " ".join(e.paragraph[p[0]:p[1] + 1])
        return out

    def score(self, pred: Tensor, split: str) -> dict[str, float]:
        if self.cloze:
            gold = torch.tensor([e.candidates.index(e.answer) for e in self.examples[split]])
            return {"accuracy": 100 * float((pred == gold).float().mean())}
        s = squad_scores(self.answers(pred, split), {e.qid: [e.answer] for e in self.examples[split]})
        return {"exact": s["exact"], "f1": s["f1"]}
