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


def test_passage_only_blanks_every_question(tmp_path, monkeypatch):
    from genfeat.data.qa_worlds import load_world
    from genfeat.recipes import gdan

    data = load_world(gdan.tiny().data, 0, blank_questions=True)
    assert all(e.question is None for k in ("labelled", "dev", "test") for e in data[k])
    assert all(e.question for e in load_world(gdan.tiny().data, 0)["labelled"])
    seen = {}

    def spy(*args, **kw):
        seen[kw.get("blank_questions", False)] = out = load_world(*args, **kw)
        return out

    monkeypatch.setattr(gdan, "load_world", spy)
    for method in ("passage_only", "sl"):
        assert main(["run", "gdan", *SMALL, "--method", method, "--out", str(tmp_path / method)]) == 0
    assert set(seen) == {True, False}  # the control's run, and only it, reads the blanked world
    assert all(e.question is None for e in seen[True]["labelled"])


def test_gdan_refuses_several_ranks(monkeypatch, tmp_path, capsys):
    from genfeat.train import distributed as D

    monkeypatch.setattr(D, "setup", lambda device="auto": D.DistInfo(rank=0, world_size=2))
    assert main(["run", "gdan", *SMALL, "--out", str(tmp_path / "run")]) == 2
    assert "one process" in capsys.readouterr().err and not (tmp_path / "run" / "summary.json").exists()


def test_bad_method_is_one_line(tmp_path, capsys):
    assert main(["run", "gdan", "--preset", "tiny", "--method", "gan", "--out", str(tmp_path / "x")]) != 0
    assert "method must be one of" in capsys.readouterr().err


def squad_fixture(root, n_articles, prefix):
    arts = []
    for a in range(n_articles):
        ctx = (f"In 19{a:02d}, the Grand Hotel of Town{a} opened near the old river. It had {a + 3} floors and "
               f"a large garden. Maria Lopez{a} ran it until 19{(a + 40) % 100:02d}.")
        qas = [{"id": f"{prefix}{a}a", "question": f"When did the Grand Hotel of Town{a} open?",
                "answers": [{"text": f"19{a:02d}", "answer_start": 3}]},
               {"id": f"{prefix}{a}b", "question": "Who ran the hotel?",
                "answers": [{"text": f"Maria Lopez{a}", "answer_start": ctx.index("Maria")}]}]
        arts.append({"title": f"{prefix} {a}", "paragraphs": [{"context": ctx, "qas": qas}]})
    root.mkdir(exist_ok=True)
    (root / f"{prefix}-v1.1.json").write_text(json.dumps({"version": "1.1", "data": arts}))


def test_squad_preset_runs_the_thesis_protocol_on_squad_files(tmp_path):
    from genfeat.data.qa_worlds import load_world
    from genfeat.recipes.gdan import squad

    root = tmp_path / "squad"
    squad_fixture(root, 40, "train")
    squad_fixture(root, 5, "dev")
    cfg = squad()
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, root=str(root), rate=0.5, heldout=5))
    data = load_world(cfg.data, cfg.seed)
    assert len(data["labelled"]) == 40  # floor(0.5 · 80 original questions), from the 90 % pool
    assert {e.article for e in data["test"]}.isdisjoint({e.article for e in data["labelled"]})
    assert len(data["test"]) == 8 and len(data["dev"]) == 10
    asked = {e.paragraph for e in data["labelled"]}
    unl = data["unlabelled"] + data["heldout"]
    assert unl and all(e.question is None and e.paragraph not in asked for e in unl)
    assert {e.paragraph for e in unl}.isdisjoint({e.paragraph for e in data["test"]})  # test articles stay unseen
    assert {e.answer_type for e in unl} <= {"date", "other_numeric", "entity", "common_noun_phrase"}
    out = tmp_path / "run"
    assert main(["run", "gdan", "--preset", "squad", "--data.root", str(root), "--data.rate", "0.5",
                 "--data.heldout", "5", "--data.batch_size", "8", "--method", "gen_domain",
                 "--model.d_embed", "8", "--model.reader_hidden", "8", "--model.generator_hidden", "8",
                 "--generator_train.max_steps", "4", "--generator_train.eval_every", "2",
                 "--train.max_steps", "4", "--train.eval_every", "2", "--out", str(out)]) == 0
    assert "SQuAD" in (out / "report.md").read_text()


def test_squad_needs_its_files(tmp_path, capsys):
    assert main(["run", "gdan", "--preset", "squad", "--out", str(tmp_path / "x")]) != 0
    assert "--data.root" in capsys.readouterr().err
