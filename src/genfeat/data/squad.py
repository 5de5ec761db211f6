"""SQuAD 1.1 / 2.0 JSON and XLNet's span-extraction features (spec xlnet.md §2.12; reference `run_squad.py`).

    examples = load_squad_json("dev-v2.0.json")
    feats = squad_features(examples, tok, max_len=512, doc_stride=128, max_query=64)

Feature layout: [paragraph window, <sep>, question, <sep>, <cls>] right-padded; segment ids paragraph 0,
question 1, <cls> 2, padding 3; p_mask = 1 where an answer may not start or end (question, <sep>, padding; the
<cls> position is allowed: it is the "no answer" pointer). Long paragraphs are cut into windows `doc_stride`
tokens apart. Training positions: the answer's first and last piece when the answer lies inside the window,
else (unanswerable, or outside this window) both at <cls>.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from genfeat.data.tokenizers import SentencePieceTokenizer
from genfeat.errors import DataError

SEG_P, SEG_Q, SEG_CLS, SEG_PAD = 0, 1, 2, 3


@dataclass
class SquadExample:
    qid: str
    question: str
    context: str
    answers: list[tuple[str, int]]  # (text, character start in context); empty when unanswerable
    is_impossible: bool = False
    title: str = ""  # the article's title (its index when the file has none)


@dataclass
class SquadFeature:
    example: int  # index into the examples
    input_ids: list[int]
    token_type_ids: list[int]
    attention_mask: list[int]
    p_mask: list[int]
    cls_index: int
    start_position: int
    end_position: int
    is_impossible: bool  # no answer inside this window
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)  # feature position -> context char span


def load_squad_json(path: str | Path) -> list[SquadExample]:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise DataError(f"{path}: not a SQuAD JSON file ({e})") from None
    out = []
    for i, article in enumerate(data):
        title = str(article.get("title", i))
        for para in article["paragraphs"]:
            ctx = para["context"]
            for qa in para["qas"]:
                impossible = bool(qa.get("is_impossible", False))
                answers = [] if impossible else [(a["text"], int(a["answer_start"])) for a in qa["answers"]]
                for text, start in answers:
                    if ctx[start: start + len(text)] != text:
                        raise DataError(f"{path}: question {qa['id']}: answer {text!r} is not at {start}")
                out.append(SquadExample(qa["id"], qa["question"], ctx, answers, impossible, title))
    return out


def squad_features(examples: list[SquadExample], tok: SentencePieceTokenizer, max_len: int = 512,
                   doc_stride: int = 128, max_query: int = 64) -> list[SquadFeature]:
    sep, cls, pad = tok.ids["<sep>"], tok.ids["<cls>"], tok.ids["<pad>"]
    feats = []
    for ei, ex in enumerate(examples):
        q = tok.encode(ex.question)[:max_query]
        ctx_ids, offs = tok.encode_with_offsets(ex.context)
        room = max_len - len(q) - 3
        if room < 1:
            raise DataError(f"max_len {max_len} leaves no room for the paragraph of {ex.qid}")
        ans = None
        if ex.answers:
            text, a0 = ex.answers[0]
            a1 = a0 + len(text)
            toks = [i for i, (b, e) in enumerate(offs) if e > a0 and b < a1]
            ans = (toks[0], toks[-1]) if toks else None
        start = 0
        while True:
            window = range(start, min(start + room, len(ctx_ids)))
            ids = [ctx_ids[i] for i in window] + [sep] + q + [sep, cls]
            n_p = len(window)
            seg = [SEG_P] * n_p + [SEG_P] + [SEG_Q] * len(q) + [SEG_Q, SEG_CLS]
            p_mask = [0] * n_p + [1] * (len(q) + 2) + [0]
            cls_index = len(ids) - 1
            pad_n = max_len - len(ids)
            inside = ans is not None and ans[0] >= window.start and ans[1] < window.stop
            feats.append(SquadFeature(
                ei, ids + [pad] * pad_n, seg + [SEG_PAD] * pad_n, [1] * len(ids) + [0] * pad_n, p_mask + [1] * pad_n,
                cls_index, ans[0] - window.start if inside else cls_index,
                ans[1] - window.start if inside else cls_index, not inside,
                {k: offs[i] for k, i in enumerate(window)}))
            if window.stop >= len(ctx_ids):
                break
            start += min(room, doc_stride)  # the reference: never skip paragraph tokens
    return feats


def squad_predictions(examples: list[SquadExample], features: list[SquadFeature], outputs: dict,
                      max_answer_len: int = 64, null_threshold: float = 0.0) -> tuple[dict[str, str], dict[str, float]]:
    """Answer strings from `XLNetForSquad` inference outputs (tensors over the features, in order).

    Per example: the best span over its windows by start + end log-probability (start <= end, at most
    max_answer_len pieces, both inside the paragraph); the null score is the minimum answerability logit over the
    windows (the reference); the answer is "" when null score > null_threshold (the reference tunes the threshold
    on dev; 0 is the untuned default). Returns (qid -> text, qid -> null score)."""
    best: dict[int, tuple[float, str]] = {}
    null: dict[int, float] = {}
    s_lp, s_idx = outputs["start_top_log_probs"].tolist(), outputs["start_top_index"].tolist()
    e_lp, e_idx = outputs["end_top_log_probs"].tolist(), outputs["end_top_index"].tolist()
    ans = outputs["answer_logits"].tolist()
    for f, feat in enumerate(features):
        ex = examples[feat.example]
        null[feat.example] = min(null.get(feat.example, float("inf")), ans[f])
        for i, s in enumerate(s_idx[f]):
            for j, e in enumerate(e_idx[f][i]):
                if s not in feat.offsets or e not in feat.offsets or e < s or e - s + 1 > max_answer_len:
                    continue
                score = s_lp[f][i] + e_lp[f][i][j]
                if feat.example not in best or score > best[feat.example][0]:
                    text = ex.context[feat.offsets[s][0]: feat.offsets[e][1]].strip()
                    best[feat.example] = (score, text)
    preds, nulls = {}, {}
    for k, ex in enumerate(examples):
        nulls[ex.qid] = null.get(k, float("inf"))
        preds[ex.qid] = "" if nulls[ex.qid] > null_threshold or k not in best else best[k][1]
    return preds, nulls
