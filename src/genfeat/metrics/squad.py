"""SQuAD exact match and F1 with the official evaluation script's semantics (spec xlnet.md §5.4): lower case,
punctuation and the articles a / an / the removed, whitespace collapsed; token-bag F1; the maximum over the gold
answers; unanswerable questions have the empty string as their only gold answer. Scores ×100."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence

_PUNCT = set(string.punctuation)


def normalize_answer(s: str) -> str:
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not p or not g:  # the empty answer: 1 if both are empty
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def squad_scores(predictions: Mapping[str, str], gold: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """predictions: qid -> text ("" = no answer); gold: qid -> answer texts ([] = unanswerable). Every gold question
    must have a prediction."""
    missing = [q for q in gold if q not in predictions]
    if missing:
        raise ValueError(f"{len(missing)} questions have no prediction (e.g. {missing[0]!r})")
    em = f = 0.0
    for qid, answers in gold.items():
        answers = list(answers) or [""]
        em += max(exact_match(predictions[qid], a) for a in answers)
        f += max(f1(predictions[qid], a) for a in answers)
    n = max(len(gold), 1)
    return {"exact": 100 * em / n, "f1": 100 * f / n, "total": len(gold)}


def best_null_threshold(span_predictions: Mapping[str, str], null_scores: Mapping[str, float],
                        gold: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """The reference's dev-tuned abstention (`find_all_best_thresh_v2`): answer "" when the null score exceeds a
    threshold; sweep every threshold at once (sorted null scores, cumulative sums) and return the scores at the one
    that maximises F1. span_predictions: the best non-null answer per question ("" when there is none)."""
    qids = sorted(gold, key=lambda q: null_scores[q])
    em_a, f1_a, em_e, f1_e = [], [], [], []
    for q in qids:
        answers = list(gold[q]) or [""]
        em_a.append(max(exact_match(span_predictions[q], a) for a in answers))
        f1_a.append(max(f1(span_predictions[q], a) for a in answers))
        em_e.append(float(answers == [""]))
        f1_e.append(float(answers == [""]))
    # threshold below the k-th smallest null score: the first k questions answered, the rest abstain
    import numpy as np

    ans_em, ans_f1 = np.concatenate([[0.0], np.cumsum(em_a)]), np.concatenate([[0.0], np.cumsum(f1_a)])
    emp_em = np.concatenate([[0.0], np.cumsum(em_e[::-1])])[::-1]
    emp_f1 = np.concatenate([[0.0], np.cumsum(f1_e[::-1])])[::-1]
    f1_tot, em_tot = ans_f1 + emp_f1, ans_em + emp_em
    k = int(np.argmax(f1_tot))
    nulls = [null_scores[q] for q in qids]
    th = float("-inf") if k == 0 else nulls[k - 1]
    n = max(len(qids), 1)
    return {"exact": 100 * float(em_tot[k]) / n, "f1": 100 * float(f1_tot[k]) / n, "threshold": th}
