"""SQuAD JSON / features / metrics / span head, RACE JSON / inputs, K-NRM: fixtures written in the real formats."""

from __future__ import annotations

import json

import pytest
import torch

from genfeat.data.race import load_race, race_inputs
from genfeat.data.squad import load_squad_json, squad_features, squad_predictions
from genfeat.data.tokenizers import SentencePieceTokenizer
from genfeat.errors import DataError
from genfeat.metrics.squad import exact_match, f1, normalize_answer, squad_scores
from genfeat.models.xlnet import XLNetConfig
from genfeat.models.xlnet.heads import XLNetForSquad, XLNetMultipleChoice
from genfeat.nn.task_heads import KNRM

CONTEXT = ("The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region "
           "in France. They were descended from Norse raiders and pirates from Denmark, Iceland and Norway.")


@pytest.fixture(scope="module")
def tok() -> SentencePieceTokenizer:
    lines = [CONTEXT, "In what country is Normandy located?", "When were the Normans in Normandy?",
             "Who gave their name to Normandy in the 1000s?", "What is the capital of Mars?"] * 20
    return SentencePieceTokenizer.train(lines, 120)


@pytest.fixture
def squad_file(tmp_path):
    data = {"version": "v2.0", "data": [{"title": "Normans", "paragraphs": [{"context": CONTEXT, "qas": [
        {"id": "q1", "question": "In what country is Normandy located?", "is_impossible": False,
         "answers": [{"text": "France", "answer_start": CONTEXT.index("France")}]},
        {"id": "q2", "question": "When were the Normans in Normandy?", "is_impossible": False,
         "answers": [{"text": "10th and 11th centuries", "answer_start": CONTEXT.index("10th")}]},
        {"id": "q3", "question": "What is the capital of Mars?", "is_impossible": True, "answers": [],
         "plausible_answers": [{"text": "Normandy", "answer_start": 77}]}]}]}]}
    p = tmp_path / "dev-v2.0.json"
    p.write_text(json.dumps(data))
    return p


def test_squad_loader_and_features_recover_the_answers(squad_file, tok):
    ex = load_squad_json(squad_file)
    assert [e.qid for e in ex] == ["q1", "q2", "q3"] and ex[2].is_impossible and ex[2].answers == []
    for max_len, stride in ((128, 128), (48, 8)):  # two windows; many overlapping windows
        feats = squad_features(ex, tok, max_len=max_len, doc_stride=stride, max_query=16)
        for f in feats:
            assert len(f.input_ids) == max_len and f.input_ids[f.cls_index] == tok.ids["<cls>"]
            assert f.p_mask[f.cls_index] == 0 and all(f.p_mask[k] == 0 for k in f.offsets)
            e = ex[f.example]
            if f.is_impossible:
                assert f.start_position == f.end_position == f.cls_index
            else:
                text = e.context[f.offsets[f.start_position][0]: f.offsets[f.end_position][1]].strip()
                assert text == e.answers[0][0]
        answerable = {ex[f.example].qid for f in feats if not f.is_impossible}
        assert answerable == {"q1", "q2"}
        if max_len == 48:
            assert len([f for f in feats if f.example == 0]) > 2


def test_squad_file_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"data": [{"paragraphs": [{"context": "abc", "qas": [
        {"id": "x", "question": "?", "answers": [{"text": "zz", "answer_start": 0}]}]}]}]}))
    with pytest.raises(DataError, match="not at 0"):
        load_squad_json(bad)
    bad.write_text("{}")
    with pytest.raises(DataError, match="not a SQuAD"):
        load_squad_json(bad)


def test_squad_metrics_by_hand():
    assert normalize_answer("The  Norman-Conquest, of 1066!") == "normanconquest of 1066"
    assert exact_match("the France", "France") == 1.0
    assert f1("10th and 11th", "10th and 11th centuries") == pytest.approx(2 * 1 * 0.75 / 1.75)
    assert f1("", "") == 1.0 and f1("x", "") == 0.0
    s = squad_scores({"a": "France", "b": "", "c": "Denmark"}, {"a": ["France", "in France"], "b": [], "c": ["Norway"]})
    assert s["exact"] == pytest.approx(200 / 3) and s["f1"] == pytest.approx(200 / 3)
    with pytest.raises(ValueError, match="no prediction"):
        squad_scores({}, {"a": ["x"]})


def test_squad_head_loss_and_beam(squad_file, tok):
    torch.manual_seed(0)
    cfg = XLNetConfig(vocab_size=tok.vocab_size, n_layer=1, d_model=16, n_head=2, d_head=8, d_inner=32,
                      dropout=0.0, dropatt=0.0)
    model = XLNetForSquad(cfg, start_n_top=3, end_n_top=2)
    ex = load_squad_json(squad_file)
    feats = squad_features(ex, tok, max_len=128, doc_stride=64, max_query=16)
    batch = {k: torch.tensor([getattr(f, k) for f in feats]) for k in
             ("input_ids", "token_type_ids", "attention_mask", "p_mask", "cls_index")}
    gold = {k: torch.tensor([getattr(f, k) for f in feats])
            for k in ("start_position", "end_position", "is_impossible")}
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(60):
        out = model(**batch, start_positions=gold["start_position"], end_positions=gold["end_position"],
                    is_impossible=gold["is_impossible"])
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
        losses.append(out["loss"].item())
    assert losses[-1] < 0.3 * losses[0]  # the model can fit three questions
    model.eval()
    with torch.no_grad():
        inf = model(**batch)
    assert inf["start_top_index"].shape == (len(feats), 3) and inf["end_top_index"].shape == (len(feats), 3, 2)
    assert not batch["p_mask"].gather(1, inf["start_top_index"]).any()  # never a question / pad position
    assert inf["answer_logits"].shape == (len(feats),)


def test_squad_predictions_from_a_known_beam(squad_file, tok):
    """Post-processing by hand: the beam's best valid span per question across its windows, abstaining when the
    minimum answerability logit exceeds the threshold."""
    ex = load_squad_json(squad_file)
    feats = squad_features(ex, tok, max_len=128, doc_stride=64, max_query=16)
    n = len(feats)
    s_idx, e_idx = torch.zeros(n, 2, dtype=torch.long), torch.zeros(n, 2, 2, dtype=torch.long)
    s_lp, e_lp = torch.full((n, 2), -5.0), torch.full((n, 2, 2), -5.0)
    answer = torch.full((n,), 3.0)
    for f, feat in enumerate(feats):
        if not feat.is_impossible:  # put the gold span first, and a worse or invalid one second
            s_idx[f] = torch.tensor([feat.start_position, feat.end_position])
            e_idx[f, 0] = torch.tensor([feat.end_position, feat.start_position - 1])  # second: end < start
            e_idx[f, 1] = torch.tensor([feat.end_position, feat.end_position])
            s_lp[f], e_lp[f] = torch.tensor([-0.1, -1.0]), torch.tensor([[-0.1, -0.01], [-2.0, -2.0]])
            answer[f] = -2.0
        else:
            s_idx[f], e_idx[f] = feat.cls_index, feat.cls_index  # <cls> is not a paragraph position
    out = {"start_top_log_probs": s_lp, "start_top_index": s_idx, "end_top_log_probs": e_lp,
           "end_top_index": e_idx, "answer_logits": answer}
    preds, nulls = squad_predictions(ex, feats, out, null_threshold=0.0)
    assert preds == {"q1": "France", "q2": "10th and 11th centuries", "q3": ""}
    assert nulls == {"q1": -2.0, "q2": -2.0, "q3": 3.0}
    assert squad_scores(preds, {e.qid: [a for a, _ in e.answers] for e in ex})["exact"] == 100.0
    assert squad_predictions(ex, feats, out, null_threshold=5.0)[0]["q3"] == ""  # no valid span at all


@pytest.fixture
def race_dir(tmp_path):
    d = tmp_path / "RACE" / "dev" / "middle"
    d.mkdir(parents=True)
    (d / "1.txt").write_text(json.dumps({
        "answers": ["B", "A"],
        "options": [["Denmark", "France", "Mars", "Iceland"], ["Norse", "Roman", "Greek", "Moor"]],
        "questions": ["Where is Normandy?", "Who were the Normans descended from?"], "article": CONTEXT,
        "id": "middle1.txt"}))
    return tmp_path / "RACE"


def test_race_loader_and_inputs(race_dir, tok):
    ex = load_race(race_dir)
    assert [(e.qid, e.label, e.level) for e in ex] == [("middle1.txt-0", 1, "middle"), ("middle1.txt-1", 0, "middle")]
    x = race_inputs(ex, tok, max_len=40, max_qa=8)
    assert x["input_ids"].shape[:2] == (2, 4) and x["input_ids"].size(2) <= 40
    assert (x["input_ids"][..., -1] == tok.ids["<cls>"]).all() and x["labels"].tolist() == [1, 0]
    cfg = XLNetConfig(vocab_size=tok.vocab_size, n_layer=1, d_model=16, n_head=2, d_head=8, d_inner=32)
    logits = XLNetMultipleChoice(cfg)(x["input_ids"], x["token_type_ids"], x["attention_mask"])
    assert logits.shape == (2, 4)
    (race_dir / "dev" / "middle" / "2.txt").write_text(json.dumps({"answers": ["E"], "options": [["a", "b"]],
                                                                   "questions": ["?"], "article": "x"}))
    with pytest.raises(DataError, match="not a RACE file"):
        load_race(race_dir)


def test_knrm_kernels_by_hand():
    knrm = KNRM()
    assert [round(m, 4) for m in knrm.mu.tolist()] == [1.0, 0.9, 0.7, 0.5, 0.3, 0.1, -0.1, -0.3, -0.5, -0.7, -0.9]
    q = torch.tensor([[[1.0, 0.0]]])
    d = torch.tensor([[[2.0, 0.0], [0.0, 1.0]]])  # cos 1 (an exact match) and cos 0
    phi = knrm.features(q, torch.ones(1, 1), d, torch.ones(1, 2))
    expect = 0.01 * torch.log(torch.exp(-((1 - knrm.mu) ** 2) / (2 * knrm.sigma**2))
                              + torch.exp(-((0 - knrm.mu) ** 2) / (2 * knrm.sigma**2))).clamp_min(-23.0259)
    assert torch.allclose(phi[0], expect, atol=1e-6)
    masked = knrm.features(q, torch.ones(1, 1), d, torch.tensor([[1.0, 0.0]]))  # the cos-0 word masked out
    assert masked[0, 5] < phi[0, 5]  # μ = 0.1 kernel lost its match
    assert KNRM.loss(torch.tensor([0.9]), torch.tensor([0.2])).item() == pytest.approx(0.3)


def test_best_null_threshold_by_hand():
    from genfeat.metrics.squad import best_null_threshold

    spans = {"a": "France", "b": "Mars", "c": "wrong"}
    gold = {"a": ["France"], "b": [], "c": ["Norway"]}
    nulls = {"a": -1.0, "b": 2.0, "c": 0.5}
    best = best_null_threshold(spans, nulls, gold)  # answer a only: a right, b abstains (right), c abstains (0)
    assert best["f1"] == pytest.approx(200 / 3) and -1.0 <= best["threshold"] < 0.5
    assert best["f1"] >= squad_scores({"a": "France", "b": "", "c": ""}, gold)["f1"]


def test_span_qa_task_scores_and_trains(squad_file, tok):
    """`tasks.span_qa.SpanQA` on a model whose outputs are fixed: the gold spans give EM = F1 = 100 at threshold 0;
    an abstention on an answerable question costs a third, and the threshold sweep (the reference's setting)
    recovers it. Training rows carry the window's gold positions and reach the model as keyword arguments."""
    from genfeat.tasks.span_qa import SpanQA

    ex = load_squad_json(squad_file)
    feats = squad_features(ex, tok, max_len=128, doc_stride=64, max_query=16)
    n = len(feats)
    s_idx, e_idx = torch.zeros(n, 1, dtype=torch.long), torch.zeros(n, 1, 1, dtype=torch.long)
    answer = torch.full((n,), 3.0)
    for f, feat in enumerate(feats):
        s_idx[f, 0], e_idx[f, 0, 0] = feat.start_position, feat.end_position
        if not feat.is_impossible:
            answer[f] = -2.0 if ex[feat.example].qid == "q1" else -3.0

    class Fixed(torch.nn.Module):
        def __init__(self, answer):
            super().__init__()
            self.w, self.answer, self.seen = torch.nn.Parameter(torch.zeros(())), answer, []

        def forward(self, **rows):
            self.seen.append(sorted(rows))
            if "start_positions" in rows:
                return {"loss": self.w * 0 + rows["start_positions"].float().mean()}
            i = len(rows["input_ids"])
            return {"start_top_log_probs": torch.zeros(i, 1), "start_top_index": s_idx[:i],
                    "end_top_log_probs": torch.zeros(i, 1, 1), "end_top_index": e_idx[:i],
                    "answer_logits": self.answer[:i]}

    task = SpanQA({"train": ex, "dev": ex}, {"train": feats, "dev": feats}, max_answer=64)
    assert task.splits == ("dev",) and task.metric == "f1"
    got = task.score(task.predict(Fixed(answer), "dev"), "dev")
    assert got["exact"] == got["f1"] == 100.0
    abstains = answer.clone()
    abstains[[f for f, feat in enumerate(feats) if ex[feat.example].qid == "q1"]] = 1.0  # above 0: "" for q1
    got = task.score(task.predict(Fixed(abstains), "dev"), "dev")
    assert got["exact"] == pytest.approx(200 / 3) and got["f1_best_threshold"] == 100.0
    assert 1.0 <= got["null_threshold"] < 3.0  # answers q1 and q2 (null scores 1, -3), abstains on q3 (3)
    model = Fixed(answer)
    loss, count = task.loss(model, {k: v[:2] for k, v in task.train_rows.items()})
    assert count == 2 and loss.item() == float(task.train_rows["start_positions"][:2].float().mean())
    assert {"start_positions", "end_positions", "is_impossible", "p_mask", "cls_index"} <= set(model.seen[-1])
