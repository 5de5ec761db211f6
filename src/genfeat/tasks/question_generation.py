"""Question generation from (paragraph, answer) pairs (thesis Y §3.2.4: GDAN's generator pretrained by maximum
likelihood on the labelled set), as a task, and the health figures of generated questions.

Rows: `data.qa.qa_rows`. The model is a `models.gdan.QuestionGenerator`: called with paragraph, paragraph_mask,
answer_mask, question, question_mask it returns the mean negative log-likelihood per question (<eos> included).

    loss      that mean (teacher forcing)
    score     nll: the split's negative log-likelihood per target token (<eos> included), the selection metric (min)

    question_health(generated, paragraphs, n_vocab, unk_id)   unk_rate (share of <unk> tokens), repeat_rate (share
                                                              of a question's bigrams that repeat an earlier one of
                                                              it), copy_rate (share of tokens only copying can make:
                                                              paragraph words outside the output vocabulary),
                                                              mean_length
    generated(model, generator, rows, vocab, seed)            one sampled question a row, its reward under the
                                                              reader (d_true), its words and copy flags, tokens/s
    compare_generators(model, mle_state, examples, vocab, seed)   the MLE generator (its state `mle_state`) and the
                                                              final one on the same pairs under the final D: the
                                                              summary's reward_mle / reward_final (Q1), health and
                                                              speed, and the first `n_shown` pairs' questions
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from genfeat.data.qa import QAExample, QAVocab, qa_rows, trim_rows
from genfeat.models.gdan import GDAN, QuestionGenerator
from genfeat.models.gdan.reader import answer_log_likelihood
from genfeat.tasks.base import Task
from genfeat.tasks.word_span_qa import reader_inputs

INPUTS = ("paragraph", "paragraph_mask", "answer_mask", "question", "question_mask")


class QuestionGeneration(Task):
    metric = "nll"
    mode = "min"
    unit = "questions"

    def __init__(self, splits: Mapping[str, Sequence[QAExample]], vocab: QAVocab, train: Sequence[QAExample],
                 batch: int = 64):
        self.vocab, self.batch = vocab, batch
        self.rows = {k: qa_rows(v, vocab) for k, v in splits.items()}
        self.train_rows = qa_rows(train, vocab)
        self.splits = tuple(splits)

    def loss(self, model: nn.Module, batch: Mapping[str, Tensor]) -> tuple[Tensor, int]:
        device = next(model.parameters()).device
        rows = trim_rows({k: v.to(device) for k, v in batch.items()})
        return model(**{k: rows[k] for k in INPUTS}), len(rows["start"])

    @torch.no_grad()
    def predict(self, model: nn.Module, split: str) -> tuple[float, int]:
        """(summed negative log-likelihood, target tokens) over the split."""
        was = model.training
        model.eval()
        device = next(model.parameters()).device
        total, count = 0.0, 0
        rows = self.rows[split]
        for a in range(0, len(rows["start"]), self.batch):
            r = trim_rows({k: v[a:a + self.batch].to(device) for k, v in rows.items()})
            enc = model.encode(r["paragraph"], r["paragraph_mask"], r["answer_mask"])
            tgt, mask = model.targets(enc, r["question"], r["question_mask"])
            total -= float(model.token_log_probs(enc, tgt, mask).sum())
            count += int(mask.sum())
        model.train(was)
        return total, count

    def score(self, pred: tuple[float, int], split: str) -> dict[str, float]:
        total, count = pred
        return {"nll": total / max(count, 1)}


def question_health(questions: Sequence[Sequence[str]], copied: Sequence[Sequence[bool]], unk: str = "<unk>"
                    ) -> dict[str, float]:
    """questions: generated token lists; copied: per token, whether only copying could produce it."""
    tokens = sum(len(q) for q in questions)
    bigrams = repeats = 0
    for q in questions:
        seen = set()
        for bg in zip(q, q[1:], strict=False):
            bigrams += 1
            repeats += bg in seen
            seen.add(bg)
    return {"unk_rate": sum(t == unk for q in questions for t in q) / max(tokens, 1),
            "repeat_rate": repeats / max(bigrams, 1),
            "copy_rate": sum(c for cs in copied for c in cs) / max(tokens, 1),
            "mean_length": tokens / max(len(questions), 1)}


@torch.no_grad()
def generated(model: GDAN, generator: QuestionGenerator, rows: dict, vocab: QAVocab, seed: int, batch: int = 100
              ) -> dict[str, Any]:
    """Sample one question per row with `generator`; their rewards under D (d_true), tokens and copy flags."""
    gen = torch.Generator().manual_seed(seed)
    rewards, questions, copied, n_tok, secs = [], [], [], 0, 0.0
    was = model.training
    model.eval()
    for a in range(0, len(rows["start"]), batch):
        r = trim_rows({k: v[a:a + batch] for k, v in rows.items()})
        t0 = time.perf_counter()
        enc = generator.encode(r["paragraph"], r["paragraph_mask"], r["answer_mask"])
        s = generator.sample(enc, generator=gen)
        secs += time.perf_counter() - t0
        n_tok += int(s.target_mask.sum())
        q = {**r, "question": s.questions, "question_mask": s.question_mask}
        out = model.read(**reader_inputs(q), tag="true")
        rewards.append(answer_log_likelihood(out, r))
        for ids, mask, ext in zip(s.questions.tolist(), s.question_mask.tolist(), s.targets.tolist(), strict=True):
            n = sum(mask)
            questions.append(vocab.decode(ids[:n]))
            copied.append([e >= generator.cfg.out_vocab for e in ext[:n]])
    model.train(was)
    return {"reward": float(torch.cat(rewards).mean()), "questions": questions, "copied": copied,
            "tokens_per_s": n_tok / max(secs, 1e-9)}


def compare_generators(model: GDAN, mle_state: Mapping[str, Tensor], examples: Sequence[QAExample], vocab: QAVocab,
                       seed: int, n_shown: int = 20) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """(details, rows): one question sampled per pair by the MLE generator and by `model.generator` as it is, both
    under the model's reader; `model.generator` is left as it was. rows: paragraph, answer, mle, final."""
    held = qa_rows(examples, vocab)
    final = {k: v.clone() for k, v in model.generator.state_dict().items()}
    model.generator.load_state_dict(mle_state)
    mle = generated(model, model.generator, held, vocab, seed)
    model.generator.load_state_dict(final)
    last = generated(model, model.generator, held, vocab, seed)
    details = {"reward_mle": mle["reward"], "reward_final": last["reward"],
               "generator_tokens_per_s": last["tokens_per_s"],
               "health_mle": question_health(mle["questions"], mle["copied"]),
               "health_final": question_health(last["questions"], last["copied"])}
    rows = [{"paragraph": " ".join(e.paragraph), "answer": e.answer, "mle": " ".join(a), "final": " ".join(b)}
            for e, a, b in zip(examples[:n_shown], mle["questions"], last["questions"], strict=False)]
    return details, rows
