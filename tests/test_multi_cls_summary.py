"""benchmarks/multi_cls_summary: the macro average is the mean of the task means over the pages of one setting."""

from __future__ import annotations

import json

import pytest
from benchmarks import common
from benchmarks import multi_cls_summary as S

SETTING = {"pretrain_steps": 150, "heads_lr": 1e-3, "labels": 100, "lrs": [1e-4], "finetune_steps": 200}


def page(tmp_path, name: str, task: str, acc: dict[str, list[float]], **setting) -> None:
    runs = [{"model": m, "seed": i, "lr": 1e-4, "valid_accuracy": 0.5, "test_accuracy": a,
             "pretrained": "minilm-l6" if m == "released" else f"runs/pretrain-{m}-seed0-steps150"}
            for m, accs in acc.items() for i, a in enumerate(accs)]
    record = {"name": name, "command": "c", "date": "d", "machine": {"cpu": "x"},
              "results": {"task": task, "runs": runs, **(SETTING | setting)}}
    (tmp_path / f"{name}.json").write_text(json.dumps(record))


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    monkeypatch.setattr(S, "RESULTS", tmp_path)
    return tmp_path


def test_the_macro_average_is_the_mean_of_the_task_means_of_one_setting(results):
    page(results, "multi_cls_a", "a", {"released": [0.2, 0.4], "k1": [0.3, 0.3], "k5": [0.5, 0.7]})
    page(results, "multi_cls_b", "b", {"released": [0.6], "k1": [0.5], "k5": [0.9]})
    page(results, "multi_cls_c_1k", "c", {"released": [0.1], "k1": [0.1], "k5": [0.1]}, labels=1000)
    out = S.collect()
    [macro] = out["macro"]  # task c alone at 1,000 labels: listed, not averaged
    assert macro["tasks"] == ["a", "b"]
    assert macro["mean"] == pytest.approx({"released": (0.3 + 0.6) / 2, "k1": (0.3 + 0.5) / 2, "k5": (0.6 + 0.9) / 2})
    assert [t["task"] for t in out["tasks"]] == ["a", "b", "c"]
    assert out["tasks"][0]["k5_minus_k1"]["diffs"] == pytest.approx([20.0, 40.0])


def test_a_long_fine_tuning_budget_is_a_setting_of_its_own(results):
    """A task's page at 2,500 fine-tuning updates beside its 500-update page is another setting, not a second page
    of one setting (which collect refuses); budgets up to SHORT_FINETUNE_STEPS average together."""
    page(results, "multi_cls_a", "a", {"released": [0.2], "k1": [0.3], "k5": [0.5]}, finetune_steps=250)
    page(results, "multi_cls_b", "b", {"released": [0.6], "k1": [0.5], "k5": [0.9]})
    page(results, "multi_cls_b_ft2500", "b", {"released": [0.7], "k1": [0.7], "k5": [0.7]}, finetune_steps=2500)
    out = S.collect()
    [macro] = out["macro"]  # b alone at 2,500 updates: listed, not averaged
    assert macro["tasks"] == ["a", "b"] and macro["mean"]["k5"] == pytest.approx(0.7)
    assert S.key(out["tasks"][2]["setting"]).endswith(", lr 0.0001, 2500 fine-tuning updates")
    assert S.key(out["tasks"][0]["setting"]).endswith(", lr 0.0001")


def test_a_task_recorded_twice_at_one_setting_is_not_averaged_twice(results):
    page(results, "multi_cls_a", "a", {"released": [0.2], "k1": [0.3], "k5": [0.5]})
    page(results, "multi_cls_a_rerun", "a", {"released": [0.9], "k1": [0.9], "k5": [0.9]})
    page(results, "multi_cls_b", "b", {"released": [0.6], "k1": [0.5], "k5": [0.9]})
    with pytest.raises(ValueError, match="multi_cls_a and multi_cls_a_rerun both record a"):
        S.collect()


def test_render_only_reads_the_recorded_summary_and_a_mistyped_flag_is_refused(results):
    page(results, "multi_cls_a", "a", {"released": [0.2], "k1": [0.3], "k5": [0.5]})
    page(results, "multi_cls_b", "b", {"released": [0.6], "k1": [0.5], "k5": [0.9]})
    common.summary_main(S.NAME, S.collect, S.markdown, [])
    written = (results / f"{S.NAME}.md").read_text()
    assert "**macro average**: a, b" in written

    def fails() -> dict:
        raise AssertionError("--render-only must not collect")

    (results / "multi_cls_a.json").unlink()  # the recorded summary, not the pages, is what a render reads
    common.summary_main(S.NAME, fails, S.markdown, ["--render-only"])
    assert (results / f"{S.NAME}.md").read_text() == written
    with pytest.raises(SystemExit):
        common.summary_main(S.NAME, fails, S.markdown, ["--render-onyl"])


def test_the_thesis_rows_follow_the_label_counts_of_the_table(results):
    page(results, "multi_cls_a", "a", {"released": [0.2], "k1": [0.3], "k5": [0.5]})
    page(results, "multi_cls_a_1k", "a", {"released": [0.2], "k1": [0.3], "k5": [0.5]}, labels=1000)
    common.summary_main(S.NAME, S.collect, S.markdown, [])
    thesis = [line for line in (results / f"{S.NAME}.md").read_text().splitlines() if line.startswith("| thesis")]
    assert thesis == [  # Table 5.1 (BERT-Base): Pretrained, MTL, Ours K = 1, Ours K = 5 λ 0.1; K = 5 - K = 1
        "| thesis, GLUE 100 (Table 5.1, BERT-Base) | 2 x 10^9 pretraining tokens | 55.71 | 59.29 | 57.84 | 61.80 | "
        "+3.96 |",
        "| thesis, GLUE 1k (Table 5.1, BERT-Base) | 2 x 10^9 pretraining tokens | 71.67 | 73.26 | 73.28 | 74.10 | "
        "+0.82 |"]


def test_rows_follow_each_task_through_its_label_counts_and_the_averages_follow_the_label_counts(results):
    """Page names sort a task's 1k and full pages before its 100-label page at a rate suffix, and BBC News's pages
    (no task in the name) around the others; the table follows each task from 100 labels to all, and the macro
    averages go by label count even where the first task has no 100-label page."""
    for size, labels in (("", 100), ("_1k", 1000), ("_full", 0)):
        page(results, f"multi_cls{size}_lr0.0001", "bbc", {"released": [0.6], "k1": [0.5], "k5": [0.9]},
             labels=labels)
        if labels != 100:
            page(results, f"multi_cls_a{size}_lr0.0001", "a", {"released": [0.2], "k1": [0.3], "k5": [0.5]},
                 labels=labels)
    page(results, "multi_cls_c_lr0.0001", "c", {"released": [0.2], "k1": [0.3], "k5": [0.5]})
    out = S.collect()
    assert [t["page"] for t in out["tasks"]] == [
        "multi_cls_a_1k_lr0.0001", "multi_cls_a_full_lr0.0001",
        "multi_cls_lr0.0001", "multi_cls_1k_lr0.0001", "multi_cls_full_lr0.0001", "multi_cls_c_lr0.0001"]
    assert [(m["setting"].split(" labels")[0], m["tasks"]) for m in out["macro"]] == [
        ("100", ["bbc", "c"]), ("1000", ["a", "bbc"]), ("all", ["a", "bbc"])]
