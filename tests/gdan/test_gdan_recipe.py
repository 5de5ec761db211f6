"""`genfeat run gdan`: the methods run from the command line, GDAN resumes bit for bit across the generator phase's
boundary (inside D's phase: tests/test_recipe_matrix.py), and the summary carries the Q1 / Q2 figures."""

import dataclasses
import json
import shutil

import pytest
from tests.resume_check import assert_same, summary_numbers

from genfeat.cli import main
from genfeat.train.checkpoint import load_weights

SMALL = ["--preset", "tiny", "--data.synthetic.n_unlabelled", "80", "--data.synthetic.n_dev", "24",
         "--data.synthetic.n_test", "24", "--data.heldout", "20", "--data.batch_size", "8",
         "--generator_train.max_steps", "10", "--generator_train.eval_every", "5",
         "--train.max_steps", "10", "--train.eval_every", "5", "--adapt.t_d", "5"]


@pytest.mark.parametrize("method", ["gen_gan"])  # the other methods' Steps: tests/gdan/test_adaptation.py
def test_methods_run(method, tmp_path):
    out = tmp_path / method
    assert main(["run", "gdan", *SMALL, "--method", method, "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["method"] == method and 0 <= s["test_f1"] <= 100
    assert s["d_updates"] == 10  # D updates, for every method (2 rounds of 5 where G is trained)
    assert ("reward_mle" in s) == method.startswith("gen")
    assert (out / "phases" / "generator").is_dir() == method.startswith("gen")


def test_gdan_resumes_across_the_generator_phase(tmp_path, capsys):
    """Inside G's MLE phase and after it (a resume inside D's phase: tests/test_recipe_matrix.py)."""
    a = tmp_path / "a"
    assert main(["run", "gdan", *SMALL, "--out", str(a)]) == 0
    s = json.loads((a / "summary.json").read_text())
    for k in ("reward_mle", "reward_final", "generated_nll_last20", "health_mle", "health_final"):
        assert s[k] is not None
    assert len((a / "questions.jsonl").read_text().splitlines()) == 20
    inside = ["phases/generator/checkpoints/step_00000005", "phases/generator/metrics.jsonl",
              "phases/generator/model.safetensors"]
    for name, keep in (("inside", inside), ("after", ["phases/generator"])):
        b = tmp_path / name
        b.mkdir()
        shutil.copy(a / "config.yaml", b / "config.yaml")
        for k in keep:
            (shutil.copytree if (a / k).is_dir() else shutil.copy)(a / k, b / k)
        capsys.readouterr()
        assert main(["run", "--resume", str(b)]) == 0
        said = capsys.readouterr().out
        assert ("phase generator: resuming from" in said) if name == "inside" else \
            "phase generator: finished before" in said
        for part in ("model.safetensors", "phases/generator/model.safetensors"):
            assert_same(load_weights(a / part), load_weights(b / part), f"{name}: {part}")
        assert_same(summary_numbers(a), summary_numbers(b), f"{name}: summary")


def test_passage_only_blanks_every_question():
    from genfeat.recipes.gdan import load_world, tiny

    cfg = dataclasses.replace(tiny(), method="passage_only")
    data = load_world(cfg)
    assert all(e.question is None for k in ("labelled", "dev", "test") for e in data[k])
    assert all(e.question for e in load_world(tiny())["labelled"])


def test_gdan_refuses_several_ranks(monkeypatch, tmp_path, capsys):
    from genfeat.train import distributed as D

    monkeypatch.setattr(D, "setup", lambda device="auto": D.DistInfo(rank=0, world_size=2))
    assert main(["run", "gdan", *SMALL, "--out", str(tmp_path / "run")]) == 2
    assert "one process" in capsys.readouterr().err and not (tmp_path / "run" / "summary.json").exists()


def test_bad_method_is_one_line(tmp_path, capsys):
    assert main(["run", "gdan", "--preset", "tiny", "--method", "gan", "--out", str(tmp_path / "x")]) != 0
    assert "method must be one of" in capsys.readouterr().err
