"""Exact resume: k steps + checkpoint + (N - k) steps == N steps, bitwise, on CPU."""

import shutil

import pytest
import torch

from genfeat.errors import CheckpointError
from genfeat.train import checkpoint as C
from genfeat.train.logging import read_metrics
from genfeat.train.loop import TrainConfig, build_optimizer, fit
from tests.train.helpers import evaluate, lm_loss, make, rehash


@pytest.mark.parametrize("iterator", ["ordered", "shuffled"])
def test_resume_is_bitwise_exact(tmp_path, iterator):
    cfg = TrainConfig(max_steps=12, lr=3e-3, warmup_steps=3, eval_every=5, log_every=2, keep_last=10,
                      grad_accum=2)
    lm_a, data_a = make(iterator=iterator)  # dropout on: RNG state must be restored too
    fit(lm_a, lm_loss, data_a, cfg, tmp_path / "a", evaluate=evaluate)

    # a second run that only has the step-5 checkpoint of the first, then resumes to step 12
    (tmp_path / "b" / "checkpoints").mkdir(parents=True)
    shutil.copytree(tmp_path / "a/checkpoints/step_00000005", tmp_path / "b/checkpoints/step_00000005")
    torch.manual_seed(1234)  # different RNG and a fresh model: everything must come from the checkpoint
    lm_b, data_b = make(seed=99, iterator=iterator)
    res = fit(lm_b, lm_loss, data_b, cfg, tmp_path / "b", evaluate=evaluate,
              resume_from=C.latest_checkpoint(tmp_path / "b"))
    assert res.step == 12
    for (name, pa), pb in zip(lm_a.state_dict().items(), lm_b.state_dict().values(), strict=True):
        assert torch.equal(pa, pb), name
    a = C.load_trainer_state(tmp_path / "a/checkpoints/step_00000012")
    b = C.load_trainer_state(tmp_path / "b/checkpoints/step_00000012")
    assert a["data"] == b["data"] and a["count"] == b["count"] and a["best_step"] == b["best_step"]
    assert len(a["data"]["train"]) == 1 and a["data"]["train"][0]["epoch"] >= 0  # one entry per rank
    # the log window open at the checkpoint (step 5 of the window 5-6) continues: the rows after it are the same
    rows_a, rows_b = ([{k: v for k, v in r.items() if not k.endswith("_per_s")} for r in read_metrics(tmp_path / d)]
                      for d in "ab")
    assert [r for r in rows_a if r["step"] > 5] == [r for r in rows_b if r["step"] > 5]


def test_resume_without_the_rng_state_differs(tmp_path):
    """The exactness test can fail: skipping the RNG restore (dropout masks) changes the weights."""
    cfg = TrainConfig(max_steps=6, lr=3e-3, warmup_steps=1, eval_every=3, keep_last=10)
    lm_a, data_a = make()
    fit(lm_a, lm_loss, data_a, cfg, tmp_path / "a", evaluate=evaluate)
    lm_b, data_b = make()
    original = C.set_rng_state
    try:
        C.set_rng_state = lambda s: None
        fit(lm_b, lm_loss, data_b, cfg, tmp_path / "a", evaluate=evaluate,
            resume_from=tmp_path / "a/checkpoints/step_00000003")
    finally:
        C.set_rng_state = original
    assert not all(torch.equal(p, q) for p, q in zip(lm_a.parameters(), lm_b.parameters(), strict=True))


def _with_unused_parameter(seed: int = 0):
    lm, data = make(seed=seed)
    lm.unused = torch.nn.Parameter(torch.ones(3))  # trainable, never reached by the loss: no optimizer state
    return lm, data


def test_resume_with_a_parameter_that_never_had_a_gradient(tmp_path):
    """XLNet under masked-LM never uses its query-stream vector; its run must still resume, exactly."""
    cfg = TrainConfig(max_steps=6, lr=3e-3, warmup_steps=1, eval_every=3, keep_last=10)
    lm_a, data_a = _with_unused_parameter()
    fit(lm_a, lm_loss, data_a, cfg, tmp_path / "a", evaluate=evaluate)
    state = C.load_trainer_state(tmp_path / "a/checkpoints/step_00000003")
    assert "unused" not in state["optimizers"]["model"]["state"]
    lm_b, data_b = _with_unused_parameter(seed=99)
    res = fit(lm_b, lm_loss, data_b, cfg, tmp_path / "a", evaluate=evaluate,
              resume_from=tmp_path / "a/checkpoints/step_00000003")
    assert res.step == 6 and torch.equal(lm_b.unused, torch.ones(3))
    for (name, pa), pb in zip(lm_a.state_dict().items(), lm_b.state_dict().values(), strict=True):
        assert torch.equal(pa, pb), name


@pytest.mark.parametrize("change", ["one parameter frozen", "groups swapped"])
def test_resume_into_an_optimizer_over_other_parameters_is_refused(tmp_path, change):
    cfg = TrainConfig(max_steps=3, lr=3e-3, warmup_steps=1, eval_every=3, keep_last=10)
    lm, data = make()
    fit(lm, lm_loss, data, cfg, tmp_path / "a", evaluate=evaluate)
    lm_b, _ = make()
    if change == "one parameter frozen":  # same two groups, one parameter fewer in the second
        next(p for p in lm_b.parameters() if p.dim() == 1).requires_grad_(False)
    opt = build_optimizer(lm_b, cfg)
    if change == "groups swapped":  # the same parameters, each in the other group
        opt.param_groups.reverse()
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    with pytest.raises(CheckpointError, match="parameter groups differ"):
        C.restore_checkpoint(tmp_path / "a/checkpoints/step_00000003", lm_b, {"model": opt}, {"model": sched})


def test_throughput_covers_the_whole_run_across_a_resume(tmp_path):
    """tokens / s of a resumed run counts every token and every second in training steps since step 0, not only
    this call's (a run resumed at its last step would otherwise report its whole token count over seconds)."""
    cfg = TrainConfig(max_steps=6, lr=3e-3, warmup_steps=1, eval_every=3, keep_last=10, reschedule=True)
    lm, data = make()
    first = fit(lm, lm_loss, data, TrainConfig(**{**cfg.__dict__, "max_steps": 3}), tmp_path, evaluate=evaluate)
    ckpt = tmp_path / "checkpoints/step_00000003"
    state = C.load_trainer_state(ckpt)
    assert state["train_time"] == first.train_time
    torch.save({**state, "train_time": 1000.0}, ckpt / C.STATE)  # as if the first part had taken 1,000 s
    rehash(ckpt)
    lm, data = make()
    res = fit(lm, lm_loss, data, cfg, tmp_path, evaluate=evaluate, resume_from=ckpt)
    assert res.count == 2 * first.count and 1000.0 < res.train_time < 1100.0
    assert res.count_per_s == res.count / res.train_time


def test_extending_a_run_never_jumps_its_learning_rate_silently(tmp_path, capsys):
    """A 20-step cosine run resumed with a 40-step budget would move the rate at step 20 (the decay recomputed over
    40 steps): refused with the two rates named, unless train.reschedule; a constant schedule extends as it is."""
    from genfeat.config import ConfigError

    cfg = TrainConfig(max_steps=20, lr=1e-3, warmup_steps=2, eval_every=10, log_every=1, schedule="cosine")
    lm, data = make()
    fit(lm, lm_loss, data, cfg, tmp_path / "cos", evaluate=evaluate)
    ckpt = tmp_path / "cos/checkpoints/step_00000020"
    longer = TrainConfig(**{**cfg.__dict__, "max_steps": 40})
    lm, data = make()
    with pytest.raises(ConfigError, match=r"at step 20 goes from 0\.0001 to 0\.0005.*--train\.reschedule true"):
        fit(lm, lm_loss, data, longer, tmp_path / "cos", evaluate=evaluate, resume_from=ckpt)
    lm, data = make()
    fit(lm, lm_loss, data, TrainConfig(**{**longer.__dict__, "reschedule": True}), tmp_path / "cos",
        evaluate=evaluate, resume_from=ckpt)
    assert "train.reschedule: the learning rate at step 20 goes from 0.0001 to 0.0005" in capsys.readouterr().out
    flat = TrainConfig(**{**cfg.__dict__, "schedule": "constant"})
    lm, data = make()
    fit(lm, lm_loss, data, flat, tmp_path / "flat", evaluate=evaluate)
    lm, data = make()
    fit(lm, lm_loss, data, TrainConfig(**{**flat.__dict__, "max_steps": 40}), tmp_path / "flat", evaluate=evaluate,
        resume_from=tmp_path / "flat/checkpoints/step_00000020")
    lrs = [r["lr"] for r in read_metrics(tmp_path / "flat") if "lr" in r]
    assert len(lrs) == 40 and lrs[19] == lrs[20] == 1e-3


def test_a_run_stopped_before_its_final_evaluation_evaluates_on_resume(tmp_path):
    """A budget shorter than eval_every evaluates once, after the last checkpoint: a run stopped there (SIGTERM in
    the finishing work) resumes at its budget into that evaluation, and keeps its weights (else no
    model.safetensors: seqrec under 1 epoch)."""
    cfg = TrainConfig(max_steps=4, lr=3e-3, warmup_steps=1, eval_every=10, ckpt_every=4, log_every=1)
    lm, data = make()
    first = fit(lm, lm_loss, data, cfg, tmp_path, evaluate=evaluate)
    assert [e["step"] for e in first.evals] == [4] and C.load_trainer_state(
        tmp_path / "checkpoints/step_00000004")["last_eval"] == 0  # the checkpoint came before the evaluation
    (tmp_path / C.WEIGHTS).unlink()  # as if stopped right after the checkpoint
    lm, data = make()
    again = fit(lm, lm_loss, data, cfg, tmp_path, evaluate=evaluate, resume_from=tmp_path / "checkpoints/step_00000004")
    assert [e["step"] for e in again.evals] == [4] and (tmp_path / C.WEIGHTS).is_file()
    assert again.best_metric == first.best_metric


def test_a_run_evaluated_at_its_last_checkpoint_does_not_evaluate_again_on_resume(tmp_path):
    cfg = TrainConfig(max_steps=4, lr=3e-3, warmup_steps=1, eval_every=4, log_every=1)
    lm, data = make()
    assert [e["step"] for e in fit(lm, lm_loss, data, cfg, tmp_path, evaluate=evaluate).evals] == [4]
    lm, data = make()
    again = fit(lm, lm_loss, data, cfg, tmp_path, evaluate=evaluate, resume_from=tmp_path / "checkpoints/step_00000004")
    assert again.evals == []  # its evaluation at step 4 is in the checkpoint's state
