"""`genfeat run seqrec` end to end on a small file in the RecBole atomic format, every encoder."""

from __future__ import annotations

import json

import numpy as np
import pytest

from genfeat.cli import main


@pytest.mark.parametrize("args", [["--model.head", "c+mi"], ["--model.encoder", "gru4rec", "--model.head", "mos3-max"],
                                  ["--model.encoder", "repeatnet"], ["--model.head", "c+mi", "--data.stride", "3"],
                                  ["--model.encoder", "repeatnet", "--data.stride", "3"]])
def test_seqrec_recipe_runs(inter_file, tmp_path, args):
    out = tmp_path / "run"
    assert main(["run", "seqrec", "--preset", "tiny", "--data.dataset", f"atomic:{inter_file}", "--out", str(out),
                 *args]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["dataset"]["users"] == 60 and s["dataset"]["repeat_rate_valid"] > 0
    for split in ("valid", "test"):
        assert 0.0 <= s[f"{split}_ndcg@10"] <= s[f"{split}_hit@10"] <= 1.0
        assert np.isfinite(s[f"{split}_loss"])
    assert (out / "report.md").read_text().startswith("# ")
    if "--data.stride" in args:  # windows: fewer rows than the prefix examples
        assert s["stride"] == 3 and 0 < s["train_rows"] < sum(len(x) - 3 for x in _sequences(inter_file))


def _sequences(path):
    from genfeat.data.seqrec import build_sequences, load_atomic_inter

    return build_sequences(load_atomic_inter(path), 3)[0]


def test_seqrec_bad_dataset(tmp_path):
    assert main(["run", "seqrec", "--preset", "tiny", "--data.dataset", "nope", "--out", str(tmp_path / "x")]) != 0


@pytest.mark.parametrize("args", [["--eval.ties", "random"], ["--eval.ks", "0"]])
def test_seqrec_bad_eval_settings_fail_before_training(tmp_path, args, capsys):
    """A typo in the evaluation settings fails when the config is built, not at the first evaluation."""
    assert main(["run", "seqrec", "--preset", "tiny", "--data.dataset", "nope", "--out", str(tmp_path / "x"),
                 *args]) != 0
    assert "eval." in capsys.readouterr().err and not (tmp_path / "x").exists()


@pytest.mark.parametrize("args", [["--data.stride", "11"], ["--data.stride", "2", "--model.readout", "last_slot"]])
def test_seqrec_bad_stride(inter_file, tmp_path, args):
    assert main(["run", "seqrec", "--preset", "tiny", "--data.dataset", f"atomic:{inter_file}",
                 "--out", str(tmp_path / "x"), *args]) != 0


def test_seqrec_resumes_with_a_longer_epoch_budget(inter_file, tmp_path):
    """seqrec budgets in epochs (unless train.max_steps is given), so --resume with more epochs continues."""
    out = tmp_path / "run"
    assert main(["run", "seqrec", "--preset", "tiny", "--data.dataset", f"atomic:{inter_file}", "--out", str(out),
                 "--epochs", "2", "--train.patience", "0"]) == 0
    assert main(["run", "--resume", str(out), "--epochs", "3"]) == 0
    assert json.loads((out / "summary.json").read_text())["epochs"] == 3
    assert main(["run", "--resume", str(out), "--epochs", "3"]) == 2  # nothing left to train: said, not ignored


def test_seqrec_honours_train_max_steps(inter_file, tmp_path, capsys):
    """train.max_steps, when given, is the step budget (the same spelling as every other recipe, and what the run
    says it trains for); without it the budget is epochs x steps per epoch."""
    out = tmp_path / "run"
    assert main(["run", "seqrec", "--preset", "tiny", "--data.dataset", f"atomic:{inter_file}", "--out", str(out),
                 "--train.max_steps", "5", "--train.patience", "0"]) == 0
    assert json.loads((out / "summary.json").read_text())["steps"] == 5
    said = capsys.readouterr().out
    assert "5 steps (train.max_steps: " in said and "up to" not in said


@pytest.mark.dist
@pytest.mark.parametrize("extra", [["--data.stride", "3"], ["--model.encoder", "repeatnet"]])
def test_torchrun_seqrec_matches_one_process(inter_file, tmp_path, extra):
    """Two CPU ranks (gloo, DDP through the model's forward), each with its part of every global batch (the
    remainder batch and the windows' uneven target counts included): the weights and logged losses of one
    process."""
    import torch

    from genfeat.train.checkpoint import latest_checkpoint, load_trainer_state, load_weights
    from genfeat.train.logging import read_metrics
    from tests.dist_run import torchrun_genfeat

    args = ["run", "seqrec", "--preset", "tiny", "--data.dataset", f"atomic:{inter_file}", "--model.dropout", "0",
            "--model.attn_dropout", "0", "--data.batch_size", "15", *extra]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    torchrun_genfeat([*args, "--out", str(tmp_path / "two")])
    last = [latest_checkpoint(tmp_path / run) for run in ("one", "two")]
    assert last[0].name == last[1].name
    one, two = (load_weights(d / "model.safetensors") for d in last)
    for k, v in one.items():
        if k.endswith(("repeat.v.bias", "explore.v.bias")):  # a shift before a softmax: its true gradient is 0,
            continue  # Adam turns the rounding noise into steps, which differ with the order of the sums
        torch.testing.assert_close(two[k], v, rtol=1e-4, atol=1e-5)
    losses = [[r["loss"] for r in read_metrics(tmp_path / run) if "loss" in r] for run in ("one", "two")]
    assert len(losses[0]) > 2 and losses[1] == pytest.approx(losses[0], rel=1e-4)
    seen = [load_trainer_state(d)["count"] for d in last]  # the ranks split the targets: one process's count
    assert seen[0] == seen[1]
    assert json.loads((tmp_path / "two/summary.json").read_text())["world_size"] == 2
