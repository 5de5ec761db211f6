import json
import math
import shutil

import pytest
import torch

from genfeat.errors import DivergenceError
from genfeat.train import checkpoint as C
from genfeat.train.logging import read_metrics
from genfeat.train.loop import TrainConfig, build_optimizer, fit, lr_lambda
from genfeat.train.step import Step, Update
from tests.train.helpers import evaluate, lm_loss, make


def test_lr_schedules():
    cos = lr_lambda(TrainConfig(max_steps=110, warmup_steps=10, schedule="cosine", min_lr_ratio=0.1))
    assert cos(0) == pytest.approx(0.1) and cos(9) == pytest.approx(1.0)
    assert cos(60) == pytest.approx(0.1 + 0.9 * 0.5)  # halfway through the decay
    assert cos(110) == pytest.approx(0.1)
    inv = lr_lambda(TrainConfig(warmup_steps=4, schedule="inverse_sqrt"))
    assert inv(15) == pytest.approx(math.sqrt(4 / 16))
    lin = lr_lambda(TrainConfig(max_steps=22, warmup_steps=2, schedule="linear", min_lr_ratio=0.0))
    assert lin(12) == pytest.approx(0.5)
    assert lr_lambda(TrainConfig(warmup_steps=0, schedule="constant"))(500) == 1.0


def test_a_shortened_run_warms_up_for_at_most_a_fifth_of_it():
    """A preset's warm-up of 200 steps on a run cut to 100 steps would never reach the peak learning rate: the
    warm-up is at most a fifth of max_steps (20 here), and unchanged when the run is long enough."""
    short = lr_lambda(TrainConfig(max_steps=100, warmup_steps=200, schedule="cosine", min_lr_ratio=0.0))
    assert short(0) == pytest.approx(0.05) and short(19) == pytest.approx(1.0) and short(99) < 0.01
    long = lr_lambda(TrainConfig(max_steps=3200, warmup_steps=200, schedule="cosine"))
    assert long(99) == pytest.approx(0.5) and long(199) == pytest.approx(1.0)
    assert lr_lambda(TrainConfig(max_steps=6, warmup_steps=2, schedule="constant"))(0) == pytest.approx(1.0)


def test_grad_accumulation_matches_one_big_batch(tmp_path):
    """2 micro-batches of 2 rows == 1 batch of 4 rows (ordered streams: same tokens, no dropout).
    SGD, because Adam's m/sqrt(v) turns float noise in near-zero gradients into full-size steps."""
    cfg = TrainConfig(max_steps=4, lr=0.5, warmup_steps=0, eval_every=0, clip_norm=0.0, schedule="constant")

    def sgd(m):
        return torch.optim.SGD(m.parameters(), lr=cfg.lr)

    big, data_big = make(dropout=0.0, batch=4)
    fit(big, lm_loss, data_big, cfg, tmp_path / "big", optimizer=sgd(big))
    small, _ = make(dropout=0.0, batch=4)
    halves = [make(dropout=0.0, batch=4, rank=r, world=2)[1] for r in range(2)]

    def alternating():
        while True:
            for h in halves:
                yield next(h)

    fit(small, lm_loss, alternating(), TrainConfig(**{**cfg.__dict__, "grad_accum": 2}), tmp_path / "small",
        optimizer=sgd(small))
    for a, b in zip(big.parameters(), small.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    bad, data_bad = make(dropout=0.0, batch=4)  # and the check can fail: one micro-batch is not the same
    fit(bad, lm_loss, halves[0], cfg, tmp_path / "bad", optimizer=sgd(bad))
    assert not all(torch.allclose(a, b, atol=1e-5) for a, b in zip(big.parameters(), bad.parameters(), strict=True))


def test_logs_metrics_and_stops_early(tmp_path):
    lm, data = make()
    calls = []

    def worsening(model):
        calls.append(1)
        return {"valid_loss": float(len(calls)), "valid_ppl": 1.0}

    res = fit(lm, lm_loss, data, TrainConfig(max_steps=50, eval_every=2, patience=2, log_every=1), tmp_path,
              evaluate=worsening)
    assert res.stopped_early and res.step == 6 and res.best_step == 2 and len(calls) == 3
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert {"step", "loss", "lr", "tokens_per_s"} <= set(rows[0])
    assert [r["step"] for r in rows if "valid_loss" in r] == [2, 4, 6]
    assert (tmp_path / "loss_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert res.count == 6 * 4 * 16


def test_nan_loss_stops_and_keeps_last_good_checkpoint(tmp_path):
    lm, data = make()
    step = {"n": 0}

    def explodes_at_step_5(model, batch):
        step["n"] += 1
        loss, n = lm_loss(model, batch)
        return (loss * float("nan") if step["n"] == 5 else loss), n

    with pytest.raises(DivergenceError, match=r"loss became nan at step 5;.*step_00000004 \(step 4\)"):
        fit(lm, explodes_at_step_5, data, TrainConfig(max_steps=10, eval_every=2), tmp_path, evaluate=evaluate)
    assert C.latest_checkpoint(tmp_path).name == "step_00000004"
    lm2, data2 = make()
    with pytest.raises(DivergenceError, match="no checkpoint was written yet"):
        fit(lm2, lambda m, b: (torch.tensor(float("inf"), requires_grad=True), 1), data2,
            TrainConfig(max_steps=3, eval_every=0), tmp_path / "other")


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_ctrl_c_finishes_step_checkpoints_and_says_how_to_resume(tmp_path, sig):
    """Ctrl-C and SIGTERM (timeout, SLURM, Kubernetes) alike: finish the step, checkpoint, say how to resume."""
    import os
    import signal

    from genfeat.errors import GenfeatError

    sig = getattr(signal, sig)
    lm, data = make()
    calls = {"n": 0}
    before = signal.getsignal(sig)  # SIG_IGN when the suite runs as a background job

    def interrupt_during_step_3(model, batch):
        calls["n"] += 1
        if calls["n"] == 3:
            os.kill(os.getpid(), sig)
        return lm_loss(model, batch)

    with pytest.raises(GenfeatError, match=f"interrupted at step 3; .*--resume {tmp_path}"):
        fit(lm, interrupt_during_step_3, data, TrainConfig(max_steps=10, eval_every=0), tmp_path, evaluate=evaluate)
    assert C.latest_checkpoint(tmp_path).name == "step_00000003"
    assert signal.getsignal(sig) is before  # handler restored


def test_cpu_training_flushes_subnormals(tmp_path):
    """fit turns on flush-to-zero on CPU: subnormal operands (exp of log-probabilities below about -87) count as
    zero instead of taking the slow path."""
    torch.set_flush_denormal(False)  # an earlier fit in this process may have turned it on
    sub = torch.tensor([1e-39])  # made with flushing off (a conversion under flush-to-zero gives 0)
    assert (sub * 1.0).item() > 0
    lm, data = make()
    fit(lm, lm_loss, data, TrainConfig(max_steps=1, eval_every=0), tmp_path)
    try:
        if torch.set_flush_denormal(True):  # False where the CPU has no flush-to-zero
            assert (sub * 1.0).item() == 0.0
            torch.set_flush_denormal(False)
            fit(lm, lm_loss, data, TrainConfig(max_steps=1, eval_every=0), tmp_path / "again")
            assert (sub * 1.0).item() == 0.0
    finally:
        torch.set_flush_denormal(False)


def test_thread_choice_counts_free_cpus(monkeypatch):
    """One thread per CPU that nothing else keeps busy (train/threads.py); the user's setting wins."""
    import torch

    from genfeat.train import threads as T

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("GENFEAT_THREADS", raising=False)
    real_runnable, real_cpus = T.other_runnable, T.available_cpus
    assert real_runnable(samples=2, interval=0.0) >= 0 and real_cpus() >= 1
    monkeypatch.setattr(T, "available_cpus", lambda: 4)
    monkeypatch.setattr(T, "other_runnable", lambda: 1)
    assert T.default_threads() == 3
    monkeypatch.setattr(T, "other_runnable", lambda: 9)
    assert T.default_threads() == 1
    before = torch.get_num_threads()
    try:
        monkeypatch.setattr(T, "other_runnable", lambda: 1)
        assert T.configure_threads() == 3 and torch.get_num_threads() == 3
        assert T.configure_threads(recorded=2) == 2  # a resumed run keeps its count
        monkeypatch.setenv("GENFEAT_THREADS", "1")
        assert T.configure_threads(recorded=2) == 1  # the user's choice wins
        monkeypatch.delenv("GENFEAT_THREADS")
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        torch.set_num_threads(2)
        assert T.configure_threads(recorded=3) == 2  # torch follows OMP_NUM_THREADS itself; left alone
    finally:
        torch.set_num_threads(before)


def test_a_tie_with_the_best_keeps_the_later_weights_but_is_no_improvement(tmp_path):
    """Validation accuracy on a small split ties often: the later of two equal evaluations is selected (its weights
    trained longer), and ties still count towards `patience`."""
    from genfeat.train.checkpoint import WEIGHTS, load_model_weights

    lm, data = make()
    scores = iter([0.5, 0.7, 0.7, 0.7, 0.7])
    saved = {}

    def accuracy(model):
        value = next(scores)
        saved[value] = [p.detach().clone() for p in model.parameters()]
        return {"valid_accuracy": value}

    cfg = TrainConfig(max_steps=50, eval_every=2, patience=3, log_every=1, early_stop_metric="valid_accuracy",
                      early_stop_mode="max")
    res = fit(lm, lm_loss, data, cfg, tmp_path, evaluate=accuracy)
    assert res.stopped_early and res.step == 10 and res.best_step == 10 and res.best_metric == 0.7
    fresh, _ = make()
    load_model_weights(fresh, tmp_path / WEIGHTS)
    assert all(torch.equal(a, b) for a, b in zip(fresh.parameters(), saved[0.7], strict=True))  # step 10's weights


def test_a_parameter_without_gradient_resumes_without_optimizer_state(tmp_path):
    """A trained parameter the loss never reaches has no AdamW state; a resume must not give it one (loading an
    optimizer state first makes a state for every parameter): the resumed optimizer equals the uninterrupted."""
    import shutil

    from tests.resume_check import assert_same

    def run(out, resume=None):
        lm, data = make()
        lm.unused = torch.nn.Parameter(torch.zeros(3))  # trained, never in the loss
        cfg = TrainConfig(max_steps=4, eval_every=0, ckpt_every=2, keep_last=2)
        fit(lm, lm_loss, data, cfg, out, resume_from=resume)
        return lm

    run(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    shutil.rmtree(tmp_path / "b" / "checkpoints" / "step_00000004")
    run(tmp_path / "b", resume=tmp_path / "b" / "checkpoints" / "step_00000002")
    a, b = (C.load_trainer_state(tmp_path / r / "checkpoints" / "step_00000004") for r in ("a", "b"))
    assert "unused" not in a["optimizers"]["model"]["state"]
    assert_same(a["optimizers"], b["optimizers"], "optimizers")


class _TwoOptimizers(Step):
    """One loss, one backward, an Adam network and an SGD table (universal schema's update)."""

    def __init__(self, model, loss_fn):
        self.optimizers = {"net": torch.optim.Adam(model.net.parameters(), lr=1e-2),
                           "table": torch.optim.SGD(model.table.parameters(), lr=1.0)}
        self._updates = [Update(loss_fn, optimizer=("net", "table"))]

    def updates(self, step):
        return self._updates


def _net_and_table(seed=0):
    torch.manual_seed(seed)
    return torch.nn.ModuleDict({"net": torch.nn.Linear(4, 3), "table": torch.nn.Embedding(5, 3)})


def _pairs():
    g = torch.Generator().manual_seed(1)
    while True:
        yield torch.randn(8, 4, generator=g), torch.randint(0, 5, (8,), generator=g)


def test_one_update_steps_several_optimizers_on_one_backward(tmp_path):
    forwards = []

    def loss_fn(model, batch):
        forwards.append(1)
        x, ids = batch
        return ((model["net"](x) - model["table"](ids)) ** 2).mean(), 8

    model = _net_and_table()
    fit(model, _TwoOptimizers(model, loss_fn), _pairs(), TrainConfig(max_steps=3, eval_every=0, clip_norm=0.0),
        tmp_path)
    assert len(forwards) == 3  # one forward per step, both optimizers stepped on it

    ref = _net_and_table()  # by hand: Adam on the network, SGD at lr 1 on the table, one backward each step
    adam_, sgd = torch.optim.Adam(ref.net.parameters(), lr=1e-2), torch.optim.SGD(ref.table.parameters(), lr=1.0)
    data = _pairs()
    for _ in range(3):
        x, ids = next(data)
        ((ref["net"](x) - ref["table"](ids)) ** 2).mean().backward()
        adam_.step(), sgd.step()
        adam_.zero_grad(), sgd.zero_grad()
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def _scripted(values, start=0):
    """An evaluation that reports `values` in turn (from the `start`-th on), as a resumed run would see them."""
    it = iter(values[start:])
    return lambda model: {"valid_loss": next(it)}


def test_plateau_factor_divides_every_learning_rate_after_an_evaluation_without_improvement(tmp_path):
    values = [1.0, 2.0, 0.5, 0.5, 3.0]  # worse, better, a tie (no improvement), worse
    cfg = TrainConfig(max_steps=10, lr=1e-3, schedule="constant", warmup_steps=0, eval_every=2, log_every=1,
                      plateau_factor=0.25, keep_last=10)
    lm, data = make()
    opt = build_optimizer(lm, cfg)
    used = []  # the learning rate each step trains with

    def loss_fn(model, batch):
        used.append(opt.param_groups[0]["lr"])
        return lm_loss(model, batch)

    fit(lm, loss_fn, data, cfg, tmp_path / "a", evaluate=_scripted(values), optimizer=opt)
    assert used == pytest.approx([1e-3] * 4 + [2.5e-4] * 4 + [6.25e-5] * 2, rel=1e-12)  # from the next step on
    lrs = {r["step"]: r["lr"] for r in read_metrics(tmp_path / "a") if "lr" in r}

    # resumed after the first decay (step 4's checkpoint): the same weights and learning rates, bitwise
    (tmp_path / "b" / "checkpoints").mkdir(parents=True)
    shutil.copytree(tmp_path / "a/checkpoints/step_00000004", tmp_path / "b/checkpoints/step_00000004")
    lm_b, data_b = make(seed=5)
    fit(lm_b, lm_loss, data_b, cfg, tmp_path / "b", evaluate=_scripted(values, 2),
        resume_from=tmp_path / "b/checkpoints/step_00000004")
    assert {r["step"]: r["lr"] for r in read_metrics(tmp_path / "b") if "lr" in r} == \
        {s: lr for s, lr in lrs.items() if s > 4}
    for (name, a), b in zip(lm.state_dict().items(), lm_b.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_plateau_factor_must_lower_the_learning_rate():
    with pytest.raises(ValueError, match="plateau_factor"):
        TrainConfig(plateau_factor=4.0)
