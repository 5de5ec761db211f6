"""Spec §11.10 and §11.12: the released TSV's reader, the entailment metrics, and `genfeat eval entailment`."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score

from genfeat.cli import main
from genfeat.data.re_entailment import EntailmentPair, read_entailment_pairs
from genfeat.errors import DataError
from genfeat.metrics.entailment import direction_correct, entailment_metrics
from genfeat.tasks.pattern_entailment import PatternEntailment

VAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "re-entailment" / "RE_entailment_labels_val.tsv"


def test_reads_the_released_validation_split():
    pairs = read_entailment_pairs(VAL)
    assert len(pairs) == 285
    readme = (VAL.parent / "README.md").read_text()
    assert hashlib.sha256(VAL.read_bytes()).hexdigest() in readme
    counts = {lab: sum(p.label == lab for p in pairs) for lab in (">", "<", ":", "N")}
    assert counts == {">": 63, "<": 2, ":": 89, "N": 131}
    first = pairs[0]  # N v $ARG1 had $ARG2  $ARG1 hit $ARG2  395 1691 395 365.6
    assert (first.original, first.replaced, first.freq_original, first.freq_replaced) == \
        ("$ARG1 had $ARG2", "$ARG1 hit $ARG2", 1691.0, 395.0)
    assert first.inserted == ("hit",)


@pytest.mark.parametrize("line, message", [
    ("N\tv\t$ARG1 had $ARG2\t$ARG1 hit $ARG2\t1\t2\t3", "8"),
    ("E\tv\t$ARG1 had $ARG2\t$ARG1 hit $ARG2\t1\t2\t3\t4", "label"),
    ("N\tq\t$ARG1 had $ARG2\t$ARG1 hit $ARG2\t1\t2\t3\t4", "POS"),
    ("N\tv\t$ARG1 had $ARG2\t$ARG1 hit $ARG2\t1\tx\t3\t4", "numbers"),
])
def test_bad_lines_name_the_line(tmp_path, line, message):
    f = tmp_path / "pairs.tsv"
    f.write_text("N\tv\t$ARG1 a $ARG2\t$ARG1 b $ARG2\t1\t2\t3\t4\n" + line + "\n")
    with pytest.raises(DataError, match=rf"pairs.tsv:2: .*{message}"):
        read_entailment_pairs(f)


def test_direction_rules_ties_and_macro_groups():
    labels = [">", ">", "<", "<", ":", "N", ">"]
    diff = np.array([0.2, 0.0, -0.1, 0.3, 5.0, -5.0, -0.2])
    right = direction_correct(diff, labels)
    np.testing.assert_array_equal(right[[0, 1, 2, 3, 6]], [1, 0.5, 1, 0, 0])
    assert np.isnan(right[4]) and np.isnan(right[5])  # non-entailment pairs are left out
    groups = [("leader",), ("leader",), ("leader",), ("deal",), ("x",), ("y",), ("deal",)]
    score = np.array([0.9, 0.1, 0.5, 0.4, 0.8, 0.2, 0.3])
    m = entailment_metrics(score, diff, labels, groups)
    assert m["micro"] == pytest.approx(2.5 / 5)
    assert m["macro"] == pytest.approx(((1 + 0.5 + 1) / 3 + 0) / 2)
    y = [lab in "<>" for lab in labels]
    assert m["ap"] == average_precision_score(y, score)


def _pair(label, orig="$ARG1 a $ARG2", repl="$ARG1 b $ARG2", fo=1.0, fr=2.0):
    return EntailmentPair(label, "n", orig, repl, fo, fr)


def test_pattern_entailment_scores_in_the_labelled_direction():
    """A = {e1, e2} covers B = {e1}: Asym(A -> B) = 1, Asym(B -> A) = ½. A `>` pair (A original) and a `<` pair
    (B original) both score 1 in their labelled direction and get their directions right; an other pair scoring
    0.85 ranks below them (scored original -> replaced only, the `<` pair's ½ would rank under it); K = 1: 50 %."""
    e1, e2 = torch.eye(2)
    A, B = torch.stack([e1, e2]), torch.stack([e1, e1])  # two facets, one direction
    D = torch.stack([e1, (e1 + e2) / 2 ** 0.5])
    task = PatternEntailment([_pair(">"), _pair("<"), _pair("N")])
    orig, repl = (torch.stack([A, B, A]), None), (torch.stack([B, A, D]), None)
    m = task.evaluate(orig, repl)
    assert m["micro"] == 1.0 and m["macro"] == 1.0 and m["ap"] == 1.0
    assert m["ap_label_free"] == 1.0  # max of the two directions: 1, 1, 0.85
    single = task.evaluate((orig[0][:, 1:], None), (repl[0][:, 1:], None))
    assert single["micro"] == 0.5


def test_freq_diff_predicts_the_less_frequent_pattern_as_the_premise():
    task = PatternEntailment([_pair(">", fo=10, fr=40), _pair(">", fo=40, fr=10), _pair("<", fo=30, fr=5)])
    assert task.freq_diff()["micro"] == pytest.approx(2 / 3)
    r = task.random()
    assert r["micro"] == 0.5 and r["ap"] == 1.0  # every pair an entailment, all scores tied


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("entail")
    out = {}
    for name, args in (("k3", []), ("uschema", ["--model.kind", "uschema"])):
        out[name] = root / name
        assert main(["run", "universal_schema", "--preset", "tiny", "--train.max_steps", "20",
                     "--train.eval_every", "20", "--out", str(out[name]), *args]) == 0
    return out


def test_eval_entailment_cli(runs, capsys, tmp_path):
    capsys.readouterr()
    assert main(["eval", "entailment", str(runs["k3"]), "--pairs", str(VAL), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["labels"] == {">": 63, "<": 2, ":": 89, "N": 131}
    assert set(got["methods"]) >= {"Random", "Freq Diff"} and len(got["methods"]) == 3
    assert got["methods"]["Random"]["ap"] == pytest.approx(65 / 285)
    assert main(["eval", "entailment", str(runs["uschema"]), "--pairs", str(VAL)]) == 2  # cannot embed new text
    bad = tmp_path / "bad.tsv"
    bad.write_text("N\tv\tx\n")
    assert main(["eval", "entailment", str(runs["k3"]), "--pairs", str(bad)]) == 1
