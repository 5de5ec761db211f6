"""Bring-your-own labelled text (`data/labelled.py`): TSV / CSV / JSONL split files, quoting, column names,
genfeat's own built-task TSVs, the validation split carved when absent, and one clear error for each bad input
(the classification recipes read them through `--task dir:PATH`: tests/recipes/test_multi_cls_recipes.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from genfeat.data.labelled import check_options, evenly_limited, load_labelled, read_labelled_dir
from genfeat.errors import ConfigError, DataError


def _write(d, name, text):
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text, encoding="utf-8")


def test_tsv_csv_and_jsonl_read_the_same(tmp_path):
    rows = [("a good film", "pos"), ("a dull, \"long\" film", "neg"), ("fine\tenough", "pos"), ("bad", "neg")] * 5
    tsv = "text\tlabel\n" + "".join('"' + t.replace('"', '""') + f'"\t{y}\n' for t, y in rows)
    csv = "label,text\n" + "".join(f'{y},"' + t.replace('"', '""') + '"\n' for t, y in rows)
    jsonl = "".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in rows)
    got = {}
    for ext, body in ((".tsv", tsv), (".csv", csv), (".jsonl", jsonl)):
        d = tmp_path / ext[1:]
        for split in ("train", "valid", "test"):
            _write(d, f"{split}{ext}", body)
        got[ext] = read_labelled_dir(d)
    for ext in (".csv", ".jsonl"):
        assert got[ext][1] == got[".tsv"][1]
        for k in ("train", "valid", "test"):
            (pairs, y), (ref_pairs, ref_y) = got[ext][0][k], got[".tsv"][0][k]
            assert pairs == ref_pairs and y.tolist() == ref_y.tolist()
    splits, classes = got[".csv"]
    assert classes == ["neg", "pos"]
    assert splits["test"][0][1] == ('a dull, "long" film', None)  # quotes are CSV quoting, not text
    assert splits["test"][0][2] == ("fine\tenough", None)
    assert splits["test"][1].tolist()[:4] == [1, 0, 1, 0]


def test_pairs_custom_columns_numeric_classes_and_a_carved_validation_split(tmp_path):
    body = "premise\thypothesis\tgold\n" + "".join(f"p{i}\th{i}\t{i % 3 * 5}\n" for i in range(60))
    _write(tmp_path, "train.tsv", body)
    _write(tmp_path, "test.tsv", body)
    splits, classes = read_labelled_dir(tmp_path, ("premise", "hypothesis", "gold"), split_seed=1)
    assert classes == ["0", "5", "10"]  # integer labels in numeric order
    assert len(splits["valid"][1]) == 6 and len(splits["train"][1]) == 54  # a stratified tenth of train
    assert splits["test"][0][0] == ("p0", "h0")
    assert not {p for p, _ in splits["valid"][0]} & {p for p, _ in splits["train"][0]}


def test_genfeats_own_built_task_files_read_the_same_way(tmp_path):
    import numpy as np

    from genfeat.data.built_task import BuiltTask, write_tsv

    pairs = [(f"text {i}", None) for i in range(10)]
    task = BuiltTask("t", {k: (pairs, np.arange(10) % 2) for k in ("train", "valid", "test")}, ["x", "y"], "none")
    write_tsv(task, tmp_path)
    splits, classes = read_labelled_dir(tmp_path)
    assert classes == ["x", "y"] and splits["train"][0] == pairs and splits["test"][1].tolist() == [0, 1] * 5


@pytest.mark.parametrize("files, message", [
    ({"train.tsv": "text\tlabel\na\tx\n"}, "no test.tsv"),
    ({"train.tsv": "text\tlabel\na\tx\n", "test.tsv": "text\tlabel\nb\tz\n"}, "labels not in the training"),
    ({"train.tsv": "sentence\tlabel\na\tx\n", "test.tsv": "sentence\tlabel\nb\tx\n"}, "no 'text' column"),
    ({"train.tsv": "text\tlabel\na\tx\n", "train.csv": "text,label\na,x\n", "test.tsv": "text\tlabel\na\tx\n"},
     "both hold the train split"),
    ({"train.jsonl": '{"text": "a", "label": "x"}\n[1]\n', "test.jsonl": '{"text": "a", "label": "x"}\n'},
     "train.jsonl:2: not a JSON object"),
    ({"train.tsv": "text\tlabel\n\tx\n", "test.tsv": "text\tlabel\na\tx\n"}, "train.tsv:2: an empty"),
])
def test_bad_files_fail_with_one_line_naming_the_file(tmp_path, files, message):
    for name, body in files.items():
        _write(tmp_path, name, body)
    with pytest.raises(DataError, match=message):
        read_labelled_dir(tmp_path)


def test_options_a_task_does_not_read_are_refused():
    check_options("bbc", "")
    check_options("dir:x", "", ("sentence", "text_b", "label"))
    for task, data_dir, cols, message in (("polarity", "", None, "unknown task"), ("bbc", "d", None, "data_dir"),
                                          ("SST-2", "", None, "needs data_dir"), ("dir:", "", None, "path"),
                                          ("bbc", "", ("sentence", "text_b", "label"), "dir:PATH only")):
        with pytest.raises(ConfigError, match=message):
            check_options(task, data_dir, cols or ("text", "text_b", "label"))
    with pytest.raises(DataError, match="no such folder"):
        load_labelled("dir:/nonexistent/genfeat")


def test_evenly_limited_spreads_over_the_split():
    pairs = [(f"t{i}", None) for i in range(10)]
    out = evenly_limited({"train": (pairs, np.arange(10)), "test": (pairs[:3], np.arange(3))}, 4)
    assert list(out["train"][1]) == [0, 3, 6, 9] and [p[0] for p in out["train"][0]] == ["t0", "t3", "t6", "t9"]
    assert list(out["test"][1]) == [0, 1, 2]  # shorter than the limit: as it is
    eleven = [(f"t{i}", None) for i in range(11)]
    assert list(evenly_limited({"train": (eleven, np.arange(11))}, 4)["train"][1]) == [0, 3, 7, 10]  # rounded
    assert list(evenly_limited({"train": (pairs, np.arange(10))}, 0)["train"][1]) == list(range(10))
