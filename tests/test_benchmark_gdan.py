"""benchmarks/gdan.py's CBT table: cells accumulate across sweeps, the no-training baselines, the rendering."""

import json

from benchmarks import gdan as B
from benchmarks.common import RESULTS

from genfeat.data import cbt_books as cbt
from genfeat.data.qa import QAExample


def cell(row, seed, acc, rate=0.1):
    return {"row": row, "rate": rate, "seed": seed, "test_accuracy": acc, "dev_accuracy": acc, "wall_s": 60.0,
            "train_s": 50.0}


def test_a_cell_measured_again_replaces_its_record_and_the_others_stay():
    kept = [cell("sl", 0, 20.0), cell("sl", 1, 21.0), cell("gdan", 0, 22.0)]
    out = B.merged(kept, [cell("sl", 0, 30.0), cell("context", 0, 25.0)])
    assert len(out) == 4
    assert {(r["row"], r["seed"]): r["test_accuracy"] for r in out} == {
        ("sl", 0): 30.0, ("sl", 1): 21.0, ("gdan", 0): 22.0, ("context", 0): 25.0}


def test_baselines_pick_the_most_frequent_candidate_in_the_passage(monkeypatch):
    p = ("a", "b", "b", "c", "c", "c", "d")
    test = [QAExample(p, ("q",), (5, 5), candidates=("a", "b", "c")),  # c: the most frequent, right
            QAExample(p, ("q",), (0, 0), candidates=("a", "b", "c")),  # wrong
            QAExample(("a", "b", "a", "b"), ("q",), (0, 0), candidates=("a", "b"))]  # a tie: the first, right
    monkeypatch.setattr(cbt, "cbt_books", lambda: cbt.ClozeSet("x", {"train": [], "valid": [], "test": test}))
    base = B.cbt_baselines()
    assert abs(base["most_frequent"] - 200 / 3) < 1e-9 and base["random"] == 100 / 3 and base["n_test"] == 3


def test_the_table_marks_small_samples_and_missing_cells():
    rec = json.loads((RESULTS / "gdan.json").read_text())
    health = {"unk_rate": 0.0, "repeat_rate": 0.1, "copy_rate": 0.2, "mean_length": 20.0}
    resumed = {"wall_s": 6.0}  # a resumed run's wall time: its last invocation only, below its train_s
    rec["results"] |= {"cbt_runs": [cell("sl", 0, 30.0), cell("sl", 1, 32.0), cell("sl", 2, 34.0) | resumed,
                                    cell("gdan", 0, 40.0) | {"health_mle": health, "health_final": health}],
                       "cbt_baselines": {"random": 10.0, "most_frequent": 25.0, "n_test": 9}}
    md = B.markdown(rec)
    assert "| SL | 32.00 ± 2.00 | 38.15 |" in md
    assert "minutes a run: SL 1 ± 0," in md  # the two runs not resumed
    assert "| Gen + domain + adv (GDAN) | 40.00 (n = 1) | 48.02 |" in md
    assert "| Gen + GAN | – | 43.73 | – |" in md
    assert "| GDAN final (RL) | 0.000 | 0.100 | 0.200 | 20.000 |" in md
