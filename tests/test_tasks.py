"""The task layer is encoder-agnostic: its classifier and span extractor train on a Hugging Face BERT as they do
on genfeat's XLNet (whose fine-tuning models are these task models; tests/xlnet checks them against HF)."""

from __future__ import annotations

import json

import pytest
import torch

from genfeat.api import HFBackbone
from genfeat.losses.classification import classification_loss
from genfeat.nn.task_heads import SequenceClassifier, SequenceSummary, SpanExtractor


def _bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=30, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=16), add_pooling_layer=False)


def _genfeat_bert():
    from genfeat.models.bert import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=30, d_model=32, n_layer=2, n_head=2, d_inner=64, max_len=16))


@pytest.mark.parametrize("encoder", [lambda: HFBackbone(_bert()), _genfeat_bert], ids=["hf", "genfeat"])
def test_sequence_classifier_learns_on_a_bert_encoder(encoder):
    """Label = whether token 7 occurs; the [CLS]-pooled (pool="first") classifier fits it, padding masked: on
    transformers' BERT and on genfeat's."""
    torch.manual_seed(0)
    x = torch.randint(8, 30, (32, 10))
    y = torch.arange(32) % 2
    x[y == 1, 4] = 7
    mask = torch.ones_like(x)
    mask[::3, 8:] = 0  # some padded rows
    x[:, 0] = 1  # a [CLS] stand-in at position 0 of every row
    model = SequenceClassifier(encoder(), 32, 2, dropout=0.0, pool="first")
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(60):
        loss = classification_loss(model(x, torch.zeros_like(x), mask), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    assert (model(x, torch.zeros_like(x), mask).argmax(-1) == y).float().mean() == 1.0


def test_span_extractor_runs_on_a_bert_encoder():
    model = SpanExtractor(HFBackbone(_bert()), 32, start_n_top=3, end_n_top=2)
    x = torch.randint(1, 30, (2, 12))
    p_mask = torch.zeros_like(x)
    p_mask[:, :3] = 1  # the question: never part of an answer
    out = model(x, torch.zeros_like(x), torch.ones_like(x), p_mask, torch.zeros(2, dtype=torch.long),
                torch.tensor([4, 5]), torch.tensor([6, 5]), torch.tensor([0, 1]))
    out["loss"].backward()
    model.eval()
    beam = model(x, torch.zeros_like(x), torch.ones_like(x), p_mask, torch.zeros(2, dtype=torch.long))
    assert beam["start_top_index"].shape == (2, 3) and beam["end_top_index"].shape == (2, 3, 2)
    assert (beam["start_top_index"] >= 3).all()  # masked positions are never proposed


def test_summary_pools():
    h = torch.arange(2 * 3 * 4, dtype=torch.float).view(2, 3, 4)
    for pool, expected in (("first", h[:, 0]), ("last", h[:, -1]), ("mean", h.mean(1))):
        s = SequenceSummary(4, 0.0, pool)
        torch.nn.init.eye_(s.summary.weight)
        torch.nn.init.zeros_(s.summary.bias)
        assert torch.allclose(s(h), torch.tanh(expected)), pool
    with pytest.raises(ValueError, match="pool"):
        SequenceSummary(4, pool="max")


# ----------------------------------------------------------------------------------------- the task contract
def _toy_rows(n: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, 20, (n, 6), generator=g)
    labels = (ids[:, 0] >= 10).long()  # the first token decides the class
    return {"input_ids": ids, "token_type_ids": torch.zeros_like(ids), "attention_mask": torch.ones_like(ids),
            "labels": labels}


class _BagClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(20, 8)
        self.out = torch.nn.Linear(8, 2)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        return self.out(self.emb(input_ids[:, 0]))


def test_sequence_classification_task_scores_and_loss():
    from genfeat.tasks.classification import SequenceClassification

    task = SequenceClassification({"train": _toy_rows(40, 0), "valid": _toy_rows(30, 1), "test": _toy_rows(30, 2)},
                                  glue_task="CoLA")
    model = _BagClassifier()
    loss, n = task.loss(model, task.train_rows)
    assert n == 40
    torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(model(task.train_rows["input_ids"]),
                                                                       task.train_rows["labels"]))
    got = task.evaluate(model, "test")
    assert task.splits == ("valid", "test") and task.metric == "accuracy"
    logits = model(task.data["test"]["input_ids"]).detach()
    hat, y = logits.argmax(-1), task.data["test"]["labels"]
    tp, tn = float(((hat == 1) & (y == 1)).sum()), float(((hat == 0) & (y == 0)).sum())
    fp, fn = float(((hat == 1) & (y == 0)).sum()), float(((hat == 0) & (y == 1)).sum())
    den = ((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)) ** 0.5
    assert got["test_accuracy"] == pytest.approx(float((hat == y).float().mean()))
    assert got["test_mcc"] == pytest.approx((tp * tn - fp * fn) / den if den else 0.0)
    with pytest.raises(KeyError, match="no split 'dev'"):
        task.evaluate(model, "dev")


def test_regression_task_selects_on_pearson():
    import numpy as np

    from genfeat.tasks.classification import SequenceClassification

    rows = _toy_rows(20, 0) | {"labels": torch.linspace(0, 1, 20)}
    task = SequenceClassification({"train": rows, "valid": rows})
    assert task.regression and task.metric == "pearson"
    pred = torch.linspace(0, 1, 20) ** 2
    got = task.score(pred, "valid")
    assert got["pearson"] == pytest.approx(np.corrcoef(pred.numpy(), rows["labels"].numpy())[0, 1])
    assert got["spearman"] == pytest.approx(1.0)


def test_similarity_task_correlations_and_low_half():
    import numpy as np

    from genfeat.tasks.similarity import Similarity

    gold = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    pairs = [(i, i) for i in range(8)]
    pred = np.array([0.2, 0.1, 0.4, 0.3, 0.9, 0.8, 0.7, 0.6])  # right halves, each half misordered its own way
    task = Similarity({"test": (pairs, gold)})
    got = task.evaluate(lambda ps: pred[[a for a, _ in ps]], "test")
    assert got["test_pearson"] == pytest.approx(np.corrcoef(pred, gold)[0, 1])
    low = gold < np.median(gold)
    assert got["test_low_pearson"] == pytest.approx(np.corrcoef(pred[low], gold[low])[0, 1])
    assert got["test_low_spearman"] == pytest.approx(0.6)  # ranks [2, 1, 4, 3] vs [1, 2, 3, 4]
    assert task.train_rows is None
    with pytest.raises(ValueError, match="shape"):
        task.evaluate(lambda ps: np.zeros(3), "test")
    with pytest.raises(ValueError, match="pairs"):
        Similarity({"test": (pairs, gold[:5])})


def test_fit_task_keeps_the_best_weights_and_evaluates_every_split(tmp_path):
    import numpy as np

    from genfeat.data.batches import EpochBatches
    from genfeat.paradigms import fit_task
    from genfeat.tasks.classification import SequenceClassification
    from genfeat.train.loop import TrainConfig

    torch.manual_seed(0)
    task = SequenceClassification({"train": _toy_rows(64, 0), "valid": _toy_rows(40, 1), "test": _toy_rows(40, 2)})
    model = _BagClassifier()
    cfg = TrainConfig(max_steps=30, lr=0.05, warmup_steps=0, schedule="constant", log_every=5, eval_every=5,
                      patience=0, precision="fp32", clip_norm=0.0)
    passes, evaluate = [], task.evaluate
    task.evaluate = lambda m, split: passes.append(split) or evaluate(m, split)
    res, scores = fit_task(model, task, EpochBatches(task.train_rows, 16, np.random.default_rng(0)), cfg, tmp_path)
    assert passes == ["valid"] * 6 + ["test"]  # every 5 steps, then test alone: the kept weights' valid is known
    assert set(scores) >= {"valid_accuracy", "test_accuracy", "valid_macro_f1"} and list(scores)[0] == "valid_accuracy"
    assert {k: v for k, v in scores.items() if k.startswith("valid_")} == task.evaluate(model, "valid")  # the same
    best = max(reversed(res.evals), key=lambda e: e["valid_accuracy"])  # the last of the ties, as fit keeps it
    assert res.best_step == best["step"] and scores["valid_accuracy"] == pytest.approx(best["valid_accuracy"])
    assert scores["test_accuracy"] > 0.8  # the toy task is learnable
    # a classifier's loss counts examples, and the logs say so: 30 steps of 16 rows
    assert res.unit == "examples" and res.count == 30 * 16
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in logged if "examples" in r]
    assert trained[-1]["examples"] == 30 * 16 and all("tokens" not in r for r in logged)
    assert all(r["examples_per_s"] > 0 for r in trained)


def test_fit_task_evaluates_the_kept_weights_in_eval_mode(tmp_path):
    """The final splits are scored as fit scores the selection split: dropout off, whatever the task's predict
    does (a language model's NLL pass does not switch modes itself); the model's mode is restored after."""
    import numpy as np

    from genfeat.models.gpt import GPTConfig, build_gpt_lm
    from genfeat.models.nll_passes import segment_nll
    from genfeat.paradigms import fit_task
    from genfeat.tasks.language_modeling import LanguageModeling
    from genfeat.train.loop import TrainConfig

    torch.manual_seed(0)
    lm = build_gpt_lm(GPTConfig(vocab_size=20, n_layer=1, n_head=2, d_model=16, max_len=8, dropout=0.5))
    rng = np.random.default_rng(0)
    streams = {k: rng.integers(0, 20, size=65) for k in ("train", "valid", "test")}
    task = LanguageModeling(streams, lambda m, toks, split: segment_nll(m, toks, 1, 8, split))
    x = torch.from_numpy(streams["train"]).long()
    batches = iter(lambda: (x[None, :8], x[None, 1:9]), None)
    cfg = TrainConfig(max_steps=4, lr=1e-3, warmup_steps=0, eval_every=2, log_every=2, precision="fp32")
    _, scores = fit_task(lm, task, batches, cfg, tmp_path, method=task.loss)
    assert lm.training  # as fit left it
    lm.eval()
    assert scores["test_loss"] == task.evaluate(lm, "test")["test_loss"]  # not a dropout draw


def test_language_model_is_selected_on_the_metric_it_names():
    import numpy as np

    from genfeat.errors import ConfigError
    from genfeat.tasks.language_modeling import LanguageModeling

    streams = {"valid": np.zeros(9, dtype=np.int64)}
    assert LanguageModeling(streams, None).metric == "loss"
    assert LanguageModeling(streams, None, metric="ppl").metric == "ppl"
    assert LanguageModeling(streams, None, per_char=True, metric="bpc").metric == "bpc"
    with pytest.raises(ConfigError, match="bpc"):
        LanguageModeling(streams, None, metric="bpc")  # a word-level model has no bits per character


def test_node_classification_predicts_once_for_every_split():
    import numpy as np

    from genfeat.tasks.node_classification import NodeClassification

    labels = np.array([0, 1, 1, 0, 2, 2])
    calls = []

    def predictor(_):
        calls.append(1)
        return torch.tensor([0, 1, 0, 0, 2, 1])  # right on nodes 0, 1, 3, 4

    task = NodeClassification(labels, {"train": np.array([0, 1]), "valid": np.array([2, 3]),
                                       "test": np.array([4, 5])}, predictor)
    assert task.evaluate_all(torch.nn.Linear(1, 1)) == {"train_acc": 1.0, "valid_acc": 0.5, "test_acc": 0.5}
    assert len(calls) == 1 and task.metric == "acc" and task.mode == "max"
    assert task.evaluate(torch.nn.Linear(1, 1), "valid") == {"valid_acc": 0.5}


def test_node_classification_trains_a_full_graph_network_on_the_training_nodes_only():
    """Without a predictor the network is full-graph (model() -> (N, C) logits): the loss is the mean
    cross-entropy over the training nodes, computed by hand, and the prediction its argmax."""
    import numpy as np

    from genfeat.tasks.node_classification import NodeClassification

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.z = torch.nn.Parameter(torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 3.0],
                                                      [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 2.0, 0.0]]))

        def forward(self):
            return self.z

    labels = np.array([0, 2, 1, 0, 2, 2])
    task = NodeClassification(labels, {"train": np.array([0, 1, 5]), "valid": np.array([2, 3]),
                                       "test": np.array([4])})
    net = Logits()
    loss, n = task.loss(net, None)
    z = net.z.detach()
    by_hand = -(torch.log_softmax(z, -1)[[0, 1, 5], [0, 2, 2]]).mean()
    assert n == 3 and loss.item() == pytest.approx(by_hand.item(), abs=1e-6)
    loss.backward()
    assert net.z.grad[[2, 3, 4]].abs().sum() == 0 and net.z.grad[[0, 1, 5]].abs().sum() > 0
    assert task.evaluate_all(net) == {"train_acc": pytest.approx(1 / 3), "valid_acc": 0.5, "test_acc": 1.0}


def test_image_classification_counts_errors():
    from genfeat.tasks.image_classification import SemiSupervisedImageClassification

    torch.manual_seed(0)
    x, y = torch.randn(2500, 1, 2, 2), torch.randint(0, 3, (2500,))
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 3))
    task = SemiSupervisedImageClassification({"valid": {"x": x[:1200], "y": y[:1200]}, "test": {"x": x, "y": y}})
    with torch.no_grad():
        wrong = int((net(x).argmax(-1) != y).sum())
    got = task.evaluate_all(net)
    assert got["test_errors"] == wrong and got["test_accuracy"] == pytest.approx(1 - wrong / 2500)
    assert task.errors(net, "valid") == int((net(x[:1200]).argmax(-1) != y[:1200]).sum())
    assert net.training  # evaluation leaves the mode as it was


def test_language_modeling_task_scores_a_gpt():
    """Task loss / ppl against a direct computation; char-level adds bits per character."""
    import math

    import numpy as np

    from genfeat.models.gpt import GPTConfig, build_gpt_lm
    from genfeat.models.nll_passes import segment_nll
    from genfeat.tasks.language_modeling import LanguageModeling

    torch.manual_seed(0)
    lm = build_gpt_lm(GPTConfig(vocab_size=20, n_layer=1, n_head=2, d_model=16, max_len=8)).eval()
    tokens = np.random.default_rng(0).integers(0, 20, size=33)  # 4 segments of 8 targets, one stream

    def nll_pass(m, toks, split):
        return segment_nll(m, toks, 1, 8, split)

    task = LanguageModeling({"valid": tokens}, nll_pass)
    x = torch.from_numpy(tokens).long()
    with torch.no_grad():
        total = -sum(torch.log_softmax(lm(x[a: a + 8][None])[0].scores[0], -1)[torch.arange(8), x[a + 1: a + 9]].sum()
                     for a in range(0, 32, 8)).item()
    got = task.evaluate_all(lm)
    assert got["valid_loss"] == pytest.approx(total / 32, rel=1e-6)
    assert got["valid_ppl"] == pytest.approx(math.exp(total / 32), rel=1e-6) and task.mode == "min"
    chars = LanguageModeling({"valid": tokens}, nll_pass, per_char=True).evaluate(lm, "valid")
    assert chars["valid_bpc"] == pytest.approx(total / 32 / math.log(2), rel=1e-6)
    loss, n = task.loss(lm, (x[None, :8], x[None, 1:9]))
    assert n == 8 and loss.item() == pytest.approx(
        -torch.log_softmax(lm(x[None, :8])[0].scores[0], -1)[torch.arange(8), x[1:9]].mean().item(), rel=1e-6)


def test_predict_rows_dynamic_padding():
    """trim_padding: every chunk cut to its longest row, visited shortest first, returned in the rows' order; the
    outputs equal the fully padded pass to float rounding; left-padded rows are refused."""
    from genfeat.tasks.base import predict_rows

    model = SequenceClassifier(_genfeat_bert(), 32, 3, pool="first")
    g = torch.Generator().manual_seed(1)
    lengths = torch.tensor([3, 16, 5, 2, 9, 16, 4, 7, 12, 6, 3])
    mask = (torch.arange(16)[None] < lengths[:, None]).long()  # right-padded
    rows = {"input_ids": torch.randint(3, 30, (11, 16), generator=g) * mask,
            "token_type_ids": torch.zeros(11, 16, dtype=torch.long), "attention_mask": mask}
    full = predict_rows(model, rows, batch=4)
    seen = []
    model.register_forward_pre_hook(lambda m, a, kw: seen.append(kw["input_ids"].shape[1]), with_kwargs=True)
    trimmed = predict_rows(model, rows, batch=4, trim_padding=True)
    torch.testing.assert_close(trimmed, full, atol=1e-5, rtol=1e-5)
    assert seen == [4, 9, 16]  # sorted lengths 2 3 3 4 | 5 6 7 9 | 12 16 16
    assert not torch.allclose(full[0], full[1])  # the rows differ, so the order is checked
    with pytest.raises(ValueError, match="right-padded"):
        predict_rows(model, rows | {"attention_mask": mask.flip(1)}, batch=4, trim_padding=True)


def test_classification_scores_include_calibration():
    from genfeat.metrics.calibration import ece
    from genfeat.tasks.classification import SequenceClassification

    g = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(50, 4, generator=g) * 3, torch.randint(0, 4, (50,), generator=g)
    task = SequenceClassification({"valid": {"input_ids": torch.zeros(50, 2, dtype=torch.long), "labels": labels}})
    s = task.score(logits, "valid")
    assert s["ece"] == ece(torch.softmax(logits, -1).numpy(), labels.numpy()) and s["ece"] > 0
    reg = SequenceClassification({"valid": {"input_ids": torch.zeros(50, 2, dtype=torch.long),
                                            "labels": torch.randn(50, generator=g)}})
    assert "ece" not in reg.score(torch.randn(50, generator=g), "valid")


def test_next_token_sets_score_ce_and_top_s_by_group():
    """Two rows with targets {0, 1}: the first puts ½ : ½ on them (CE log 2, both in its top 2), the second ¼ on
    each of four tokens (CE log 4; token 2 ties into its top 2 before token 1)."""
    import math

    from genfeat.tasks.token_sets import NextTokenSet

    rows = {"input_ids": torch.zeros(2, 3, dtype=torch.long), "targets": torch.tensor([[0, 1], [0, 1]]),
            "diagonal": torch.tensor([True, False])}
    task = NextTokenSet(rows, group="diagonal")
    logp = torch.log(torch.tensor([[0.5, 0.5, 1e-9, 1e-9], [0.25, 0.24, 0.26, 0.25]]))
    s = task.score(logp, "train")
    assert s["ce_group"] == pytest.approx(math.log(2), abs=1e-6) and s["top_s_group"] == 1.0
    assert s["ce_other"] == pytest.approx(-0.5 * (math.log(0.25) + math.log(0.24)), abs=1e-6)
    task2 = NextTokenSet(rows | {"diagonal": torch.tensor([False, True])}, group="diagonal")
    assert task2.score(logp, "train")["top_s_group"] == 0.0


def test_dependency_batches_split_one_global_batch_over_ranks():
    from genfeat.data.plm_synthetic import DependencyBatches

    for study, objective in (("new_york", "plm"), ("new_york", "mlm"), ("right_context", "plm"),
                             ("right_context", "ar")):
        one = next(DependencyBatches(study, objective, 8, 12, seed=3))
        parts = [next(DependencyBatches(study, objective, 8, 12, seed=3, rank=r, world_size=2)) for r in range(2)]
        assert all(torch.equal(torch.cat([p[k] for p in parts]), v) for k, v in one.items())
    with pytest.raises(ValueError, match="trains plm or ar"):
        DependencyBatches("right_context", "mlm", 8, 12, seed=0)


def test_dependency_study_scores_each_target_with_its_context():
    """tasks.plm_dependency on a stub LM that returns uniform scores over V tokens and records its masks: every
    NLL is log V per target (joint: 2 log V); the PLM's joint order lets the second slot token see the first and
    not the reverse, the fill-in target sees every other token, the AR fill-in only the tokens to its left."""
    import math

    from genfeat.heads.base import HeadOutput
    from genfeat.tasks.plm_dependency import fill_in_nll, joint_nll_mlm, joint_nll_plm

    V, seen = 7, []

    class Stub(torch.nn.Module):
        def forward(self, ids, perm_mask=None, target_pos=None, positions=None, **_):
            seen.append(perm_mask)
            n = (target_pos if target_pos is not None else positions).size(1)
            return HeadOutput(torch.zeros(ids.size(0), n, V)), None

    ids = torch.randint(0, V, (3, 6))
    d = {"input_ids": ids, "target_pos": torch.tensor([[1, 2]] * 3)}
    assert joint_nll_plm(Stub(), d, first=0) == pytest.approx(2 * math.log(V))
    pm = seen[-1][0]  # (T, T) True = row may not attend column
    assert not pm[2, 1] and pm[1, 2] and pm[1, 1] and not pm[1, 0]  # b after a; a sees the context, not b
    joint_nll_plm(Stub(), d, first=1)
    assert pm is not seen[-1] and not seen[-1][0][1, 2] and seen[-1][0][2, 1]
    assert fill_in_nll(Stub(), d, identity=False) == pytest.approx(math.log(V))
    pm = seen[-1][0]
    assert pm[2, 2] and not pm[2, [0, 1, 3, 4, 5]].any()  # the target alone hidden, from itself
    fill_in_nll(Stub(), d, identity=True)
    pm = seen[-1][0]
    assert not pm[2, [0, 1]].any() and pm[2, 2:].all()  # left to right: only the tokens before it
    assert joint_nll_mlm(Stub(), d) == pytest.approx(2 * math.log(V))


def test_density_estimation_scores_bits_per_dimension():
    """The loss through the forward and the split score are the model's own bits per dimension (PixelCNN)."""
    from genfeat.models.gan_ssl.pixelcnn import PixelCNN
    from genfeat.tasks.density_estimation import DensityEstimation

    torch.manual_seed(0)
    net = PixelCNN(1, filters=8, n_blocks=1, n_mix=2).eval()
    x = torch.rand(10, 1, 6, 6) * 2 - 1
    task = DensityEstimation({"test": x}, batch=5)
    loss, n = task.loss(net, x)
    with torch.no_grad():
        assert n == 10 and loss.item() == pytest.approx(net.bits_per_dim(x).mean().item(), rel=1e-5)
        by_hand = (-net.log_prob(x) / (36 * torch.log(torch.tensor(2.0)))).mean().item()
    assert task.evaluate(net, "test")["test_bits_per_dim"] == pytest.approx(by_hand, rel=1e-5)
    assert (task.metric, task.mode, task.unit) == ("bits_per_dim", "min", "images")


def test_multiple_choice_accuracy_by_group():
    from genfeat.tasks.classification import MultipleChoice

    labels = torch.tensor([0, 1, 2, 0, 1])
    task = MultipleChoice({"test": {"input_ids": torch.zeros(5, 3, 2, dtype=torch.long), "labels": labels}})
    pred = torch.tensor([[9, 0, 0], [0, 0, 9], [0, 0, 9], [0, 9, 0], [0, 9, 0.]])  # right: rows 0, 2, 4
    by = task.accuracy_by(pred, "test", ["middle", "high", "high", "middle", "high"])
    assert by == {"middle": 0.5, "high": pytest.approx(2 / 3)} and list(by) == ["middle", "high"]
    assert task.score(pred, "test")["accuracy"] == pytest.approx(0.6)
