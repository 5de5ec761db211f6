"""benchmarks/multi_cls.uncertainty (Table 5.4's overlaps, Table 5.2's ensembles) on stand-in predictions: which
runs it reads and the arithmetic of its rows."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest
import torch
from benchmarks import multi_cls as B
from benchmarks.sweep import Sweep


def test_overlaps_and_ensembles(tmp_path, monkeypatch):
    args = argparse.Namespace(task="wordnet-wic", max_len=64, pretrain_steps=4, heads_lr=1e-3, labels=20,
                              finetune_steps=2, seeds=[0, 1, 2], pretrain_seeds=[0, 1], runs=str(tmp_path))
    sweep = Sweep(tmp_path)
    pre_jobs = [B.pretrain(k, p, args) for p in args.pretrain_seeds for k in (1, 5)]
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 2, (50,), generator=g)
    calls = []

    def fake_predict(run_dir, split="test", dropout_passes=0, seed=0, pretrained=None):
        calls.append((run_dir.name, dropout_passes))
        k = 5 if "-k5-" in run_dir.name else 1
        out = {"probs": torch.softmax(torch.randn(50, 2, generator=g), -1), "labels": labels}
        if k == 5:
            out["facet_emb"] = torch.randn(50, 5, 8, generator=g)
        if dropout_passes:
            out["dropout_probs"] = torch.softmax(torch.randn(dropout_passes, 50, 2, generator=g), -1)
        return out

    monkeypatch.setattr(B, "predict_run", fake_predict)
    for j in pre_jobs:
        for seed in args.seeds:
            ft = B.finetune(f"k{j.tags['k']}", str(sweep.path(j)), seed,
                            B.source_tag(j.tags["k"], j.tags["pretrain_seed"], args), args)
            if seed == 2 and j.tags["pretrain_seed"] == 1:
                continue  # an unfinished run is left out
            sweep.path(ft).mkdir(parents=True)
            (sweep.path(ft) / "summary.json").write_text(json.dumps({}))
            (sweep.path(ft) / "model.safetensors").write_bytes(b"weights")
    u = B.uncertainty(sweep, pre_jobs, args)
    assert len(calls) == 2 * 3 + 2 * 2  # every finished fine-tuning run, once
    assert sum(d for _, d in calls) == 2 * 5  # dropout passes: the K = 1 model of the first seed, per pretraining
    assert [o["pretrain_seed"] for o in u["overlap"]] == [0, 1]
    for o in u["overlap"]:
        assert all(0 <= o[k] <= 100 for k in ("multi_cls_vs_ens", "dropout_vs_ens", "least_vs_ens"))
    assert 0 <= u["ens_vs_ens"] <= 100
    ens = [e for e in u["ensembles"] if e["pretrain_seed"] == 1]
    assert [e["members"] for e in ens] == [2, 2, 5] and all(0 <= e["test_accuracy"] <= 1 for e in ens)
    assert "ens_scores" not in u
    md = B.uncertainty_md(u)
    assert "| Multi-CLS vs ENS |" in md and "| ENS vs ENS (two pretraining seeds) |" in md
    calls.clear()  # at another (dev-selected) rate it reads that rate's runs: none finished here
    assert B.uncertainty(sweep, pre_jobs, args, {"k1": 1e-4, "k5": 1e-4})["overlap"] == [] and calls == []
    assert B.uncertainty(sweep, pre_jobs, args) == u and calls == []  # a re-collect reads the kept predictions
    ft = next(sweep.root.glob("ft-wordnet-wic-k5-*"))
    (ft / "model.safetensors").write_bytes(b"retrained weights")
    B.uncertainty(sweep, pre_jobs, args)
    assert calls == [(ft.name, 0)]  # new weights: that run is predicted again, the others are not


def test_no_uncertainty_section_without_runs():
    assert B.uncertainty_md(None) == "" and B.uncertainty_md({"overlap": []}) == ""
    with pytest.raises(KeyError):
        B.uncertainty_md({"overlap": [{}], "ensembles": []})


def test_ablation_jobs(tmp_path):
    """--ablations adds Table 5.2's three K = 5 rows: two pretraining variants (their own runs) and the sum pooler
    fine-tuned from the default K = 5 run; the default runs keep their names (finished runs are reused)."""
    args = argparse.Namespace(task="wordnet-lexnames", max_len=64, pretrain_steps=4, heads_lr=1e-3, labels=20,
                              finetune_steps=2, seeds=[0, 1], pretrain_seeds=[0, 1], ablations=False, lrs=[3e-5],
                              ablation_pretrain_seeds=1)
    sweep = Sweep(tmp_path)
    base_pre, base_ft = B.jobs(sweep, args)
    pre, ft = B.jobs(sweep, argparse.Namespace(**vars(args) | {"ablations": True}))
    assert [j.name for j in pre[:len(base_pre)]] == [j.name for j in base_pre]
    assert [j.name for j in ft[:len(base_ft)]] == [j.name for j in base_ft]
    extra = {j.tags["variant"]: j.cfg for j in pre[len(base_pre):]}
    assert set(extra) == {"nohard", "noinsert"} and all(c.seed == 0 and c.model.k == 5 for c in extra.values())
    assert not extra["nohard"].data.hard_negatives and extra["nohard"].model.insert_after is None
    assert extra["noinsert"].data.hard_negatives and extra["noinsert"].model.insert_after == ()
    assert all(j.cfg.data.hard_negatives and j.cfg.model.insert_after is None
               for j in base_pre)
    rows = {}
    for j in ft[len(base_ft):]:
        rows.setdefault(j.tags["model"], []).append(j)
    assert sorted(rows) == ["k5-nohard", "k5-noinsert", "k5-sum"] and all(len(v) == 2 for v in rows.values())
    default_k5 = str(sweep.path(B.pretrain(5, 0, args)))
    for model, js in rows.items():
        cfg = js[0].cfg
        assert cfg.aggregation == ("sum" if model == "k5-sum" else "reparam")
        assert (cfg.pretrained == default_k5) == (model == "k5-sum")
        assert js[0].needs == (Path(cfg.pretrained),)
    assert all(j.cfg.aggregation == "reparam" for j in base_ft)


def test_learning_rate_selected_on_validation():
    runs = [{"lr": 1e-5, "valid_accuracy": 0.5, "test_accuracy": 0.9}, {"lr": 1e-5, "valid_accuracy": 0.6},
            {"lr": 1e-4, "valid_accuracy": 0.7, "test_accuracy": 0.1}, {"lr": 1e-4, "valid_accuracy": 0.5},
            {"valid_accuracy": 0.4}]  # recorded without a rate: the preset's
    lr, chosen = B.selected_lr(runs)
    assert lr == 1e-4 and chosen == runs[2:4]  # 0.60 > 0.55 > 0.40, whatever the test accuracy
    assert B.selected_lr(runs[4:]) == (B.DEFAULT_LR, runs[4:]) and B.selected_lr([]) == (B.DEFAULT_LR, [])
    args = argparse.Namespace(task="bbc", max_len=64, labels=20, finetune_steps=2)
    assert B.finetune("k1", "x", 0, "k1-pre0", args).name == "ft-k1-pre0-seed0-labels20-steps2"
    other = B.finetune("k1", "x", 0, "k1-pre0", args, lr=1e-4)
    assert other.name.endswith("-lr0.0001") and other.cfg.train.lr == 1e-4 and other.tags["lr"] == 1e-4


def test_label_count_sets_batch_and_page():
    """The thesis's fine-tuning batch per label count (4 / 8 / 16 for 100 / 1k / all), an explicit --batch-size
    over it, and one page per (task, label count); a 100-label run keeps its name."""
    base = dict(task="wordnet-wic", max_len=64, finetune_steps=2)
    for labels, batch, page in ((100, 4, "multi_cls_wordnet-wic"), (1000, 8, "multi_cls_wordnet-wic_1k"),
                                (0, 16, "multi_cls_wordnet-wic_full"), (500, 8, "multi_cls_wordnet-wic_500")):
        args = argparse.Namespace(**base, labels=labels, batch_size=0)
        job = B.finetune("k5", "x", 1, "k5-pre0", args)
        assert job.cfg.batch_size == batch and B.page_name(args.task, labels) == page
        assert job.name.endswith(f"-labels{labels}-steps2" + ("" if batch == 4 else f"-b{batch}"))
    args = argparse.Namespace(**base, labels=1000, batch_size=4)
    assert B.finetune("k5", "x", 1, "k5-pre0", args).cfg.batch_size == 4
    assert B.page_name("bbc", 100) == "multi_cls" and B.page_name("bbc", 1000) == "multi_cls_1k"


def test_a_longer_pretraining_budget_names_its_own_runs_and_page():
    """Fine-tuning runs from a 1,000-step encoder must not reuse those from the default 150-step one (the sweep
    reuses any finished run of the same name), and they get their own page."""
    def names(steps):
        args = argparse.Namespace(task="wordnet-wic", max_len=64, pretrain_steps=steps, heads_lr=1e-3, labels=100,
                                  batch_size=0, finetune_steps=2, seeds=[0], pretrain_seeds=[0], lrs=[B.DEFAULT_LR],
                                  ablations=True, ablation_pretrain_seeds=1)
        pre, fts = B.jobs(Sweep(Path("runs")), args)
        return [j.name for j in pre + fts]
    short, long = names(B.PRETRAIN_STEPS), names(1000)
    assert "ft-wordnet-wic-k5-pre0-seed0-labels100-steps2" in short  # the recorded runs keep their names
    assert "ft-wordnet-wic-k5-pre0-steps1000-seed0-labels100-steps2" in long
    assert "ft-wordnet-wic-k5-nohard-pre0-steps1000-seed0-labels100-steps2" in long
    assert set(short) & set(long) == {"ft-wordnet-wic-released-seed0-labels100-steps2"}  # only the released encoder
    assert B.page_name("wordnet-wic", 100, [3e-5], 1000) == "multi_cls_wordnet-wic_pre1000"
    assert B.page_name("wordnet-wic", 100, [3e-5], B.PRETRAIN_STEPS) == "multi_cls_wordnet-wic"


def test_a_sweep_at_one_other_rate_writes_its_own_page():
    """A single rate other than the preset's (3e-5) must not overwrite the preset rate's page."""
    assert B.DEFAULT_LR == 3e-5
    assert B.page_name("debian-sections", 100, [1e-4]) == "multi_cls_debian-sections_lr0.0001"
    assert B.page_name("wordnet-lexnames", 100, [1e-4], 1000) == "multi_cls_wordnet-lexnames_pre1000_lr0.0001"
    assert B.page_name("debian-sections", 100, [3e-5]) == "multi_cls_debian-sections"


def test_a_long_fine_tuning_budget_writes_its_own_page_and_validates_every_500_updates():
    """2,500 updates at 1k labels (the thesis's 20 epochs at batch 8) must not replace the 500-update page; the
    short budgets of the recorded pages keep their names and their validation interval (a third of the run)."""
    assert B.page_name("wordnet-lexnames", 1000, [1e-4], B.PRETRAIN_STEPS, 2500) == \
        "multi_cls_wordnet-lexnames_1k_ft2500_lr0.0001"
    assert B.page_name("wordnet-lexnames", 1000, [1e-4], B.PRETRAIN_STEPS, 500) == \
        "multi_cls_wordnet-lexnames_1k_lr0.0001"
    assert B.page_name("bbc", 100, [3e-5], B.PRETRAIN_STEPS, 250) == "multi_cls"
    args = argparse.Namespace(task="wordnet-lexnames", max_len=64, labels=1000, batch_size=0)
    for steps, every in ((200, 66), (500, 166), (1500, 500), (2500, 500), (2, 1)):
        args.finetune_steps = steps
        assert B.finetune_cfg("x", 0, args).train.eval_every == every


def test_paired_differences_match_pretraining_and_fine_tuning_seeds():
    def run(k, p, seed, acc):
        return {"model": f"k{k}", "seed": seed, "test_accuracy": acc,
                "pretrained": f"/runs/pretrain-k{k}-seed{p}-steps150-hlr0.001"}
    k5 = [run(5, 0, 0, 0.50), run(5, 0, 1, 0.40), run(5, 1, 0, 0.70), run(5, 1, 1, 0.30)]
    k1 = [run(1, 1, 0, 0.60), run(1, 0, 0, 0.45), run(1, 0, 1, 0.42)]  # no (1, 1) partner
    out = B.paired(k5, k1)
    assert out["diffs"] == pytest.approx([5.0, -2.0, 10.0]) and out["wins"] == 2
    assert B.pretrain_seed({"pretrained": "/r/pretrain-k5-noinsert-seed3-steps9"}) == 3
    assert B.pretrain_seed({"pretrained": "minilm-l6"}) is None and B.paired(k5, []) is None
    assert B.pretrain_seed({"pretrained": "/r/pretrain-mtl-seed1-steps150-hlr0.001"}) == 1  # the MTL baseline
    assert B.page_name("wordnet-wic", 100, [3e-5, 1e-4]) == "multi_cls_wordnet-wic_lr-selected"
    assert B.page_name("wordnet-wic", 1000, [3e-5]) == "multi_cls_wordnet-wic_1k"


def test_page_lists_every_rate_and_the_paired_difference():
    def run(m, p, seed, lr, valid, test):
        return {"model": m, "seed": seed, "lr": lr, "valid_accuracy": valid, "test_accuracy": test, "test_ece": 5.0,
                "pretrained": f"/r/pretrain-{m}-seed{p}-steps4" if m != "released" else "minilm-l6"}
    runs = [run("released", None, 0, 1e-4, 0.5, 0.5)]
    for m, bonus in (("k1", 0.0), ("k5", 0.1)):
        runs += [run(m, 0, 0, 3e-5, 0.2, 0.9), run(m, 0, 0, 1e-4, 0.4 + bonus, 0.3 + bonus)]
    record = {"name": "multi_cls_x", "results": {"runs": runs, "pretraining": [], "labels": 100, "finetune_steps": 2,
                                                 "pretrain_steps": 4, "task": "bbc", "lrs": [3e-5, 1e-4]}}
    page = B.markdown(record)
    assert "Each ablation" not in page  # no ablation runs, no ablation table
    record["results"]["runs"] += [dict(run("k5", 0, 0, 1e-4, 0.9, 0.25), model="k5-sum")]
    ablated = B.markdown(record)
    assert "| K = 5, sum aggregation | -15.00 | 0 of 1 |" in ablated  # 0.25 - 0.40, the same seeds
    k1 = "| Ours, K = 1 (facet token, inserted maps, MCQT)"
    assert f"{k1} | 3e-05 | 1 | 20.00 | 90.00 |" in page  # the unselected rate is listed too
    assert "| Ours, K = 5 | 0.0001 | 1 | 40.00 | 5.00 | 62.62 |" in page  # the selected rate's row
    assert "K = 5 - K = 1 = 10.00 points" in page and "K = 5 ahead in 1 of 1 pairs" in page
    record["results"]["labels"] = 1000  # the thesis's column and footer follow the label count
    page_1k = " ".join(B.markdown(record).split())
    assert "thesis, GLUE 1k (Table 5.2)" in page_1k and "| 40.00 | 5.00 | 74.49 |" in page_1k
    assert "GLUE 1k, Table 5.1): Pretrained 71.67" in page_1k and "61.80" not in page_1k
    record["results"]["labels"] = 0  # all labels: every run trains on the whole split, no subset to draw
    page_full = " ".join(B.markdown(record).split())
    assert "with all training examples" in page_full and "every run the whole training split" in page_full
    assert "own all training examples" not in page_full
    assert "thesis, GLUE Full (Table 5.1)" in page_full and "| 40.00 | 5.00 | 83.47 |" in page_full  # no Full in 5.2


def test_a_collect_without_the_options_of_the_recorded_sections_is_refused():
    """A page recorded with Table 5.4's overlaps or Table 5.2's ablation rows keeps them: a collect that would not
    compute them again names what it would drop (main refuses to write then)."""
    runs = [{"model": "k5", "seed": 0}, {"model": "k5-sum", "seed": 0}]
    recorded = {"results": {"runs": runs, "uncertainty": {"overlap": [{"pretrain_seed": 0}]}}}
    plain = argparse.Namespace(uncertainty=False, ablations=False)
    assert len(B.dropped_sections(recorded, plain)) == 2
    assert "--ablations" in B.dropped_sections(recorded, argparse.Namespace(uncertainty=True, ablations=False))[0]
    assert B.dropped_sections(recorded, argparse.Namespace(uncertainty=True, ablations=True)) == []
    assert B.dropped_sections({"results": {"runs": runs[:1], "uncertainty": None}}, plain) == []
    assert B.dropped_sections(None, plain) == []


def test_main_refuses_a_collect_that_would_drop_the_recorded_overlaps(tmp_path, monkeypatch):
    from benchmarks import common

    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    common.write_results("multi_cls", {"runs": [{"model": "k5"}], "uncertainty": {"overlap": [{"pretrain_seed": 0}]}},
                         "{header}")
    monkeypatch.setattr(sys, "argv", ["multi_cls", "--collect", "--runs", str(tmp_path / "runs")])
    with pytest.raises(SystemExit, match="multi_cls.json records Table 5.4's overlaps"):
        B.main()


def test_main_refuses_another_setting_before_the_uncertainty_passes(tmp_path, monkeypatch):
    from benchmarks import common

    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    common.write_results("multi_cls", {"task": "bbc", "max_len": 64, "runs": []}, "{header}")
    monkeypatch.setattr(B, "uncertainty", lambda *a, **k: pytest.fail("predicted before refusing"))
    monkeypatch.setattr(sys, "argv", ["multi_cls", "--collect", "--uncertainty", "--runs", str(tmp_path / "runs")])
    with pytest.raises(ValueError, match=r"records another setting \(max_len 64 recorded, 128 now\)"):
        B.main()


def test_a_collect_records_each_runs_validation_course(tmp_path, monkeypatch):
    """main --collect on finished runs (summary.json + metrics.jsonl): every run's record carries its validation
    accuracy at each evaluation (a row logged again after a resume counts once) and the page shows the mean
    course of each model."""
    from benchmarks import common

    monkeypatch.setattr(common, "RESULTS", tmp_path / "results")
    argv = ["multi_cls", "--collect", "--runs", str(tmp_path / "runs"), "--task", "wordnet-lexnames", "--labels",
            "1000", "--finetune-steps", "1000", "--lrs", "1e-4", "--seeds", "0", "1", "--max-len", "64"]
    args = argparse.Namespace(task="wordnet-lexnames", max_len=64, pretrain_steps=B.PRETRAIN_STEPS, heads_lr=0.0,
                              labels=1000, batch_size=0, finetune_steps=1000, seeds=[0, 1], pretrain_seeds=[0],
                              lrs=[1e-4], ablations=False, ablation_pretrain_seeds=1)
    sweep = Sweep(tmp_path / "runs")
    pre, fts = B.jobs(sweep, args)
    for j in pre:
        sweep.path(j).mkdir(parents=True)
        (sweep.path(j) / "summary.json").write_text(json.dumps(
            {"steps": 150, "valid_mcqt": 4.0, "valid_positive_first": 0.3, "valid_mlm": 7.0}))
    for i, j in enumerate(fts):  # released, K = 1, K = 5, MTL; seeds 0, 1 each
        sweep.path(j).mkdir(parents=True)
        (sweep.path(j) / "summary.json").write_text(json.dumps(
            {"test_accuracy": 0.5 + i / 100, "test_ece": 5.0, "valid_accuracy": 0.4, "data_sha256": "ab" * 32,
             "pretrained": str(j.needs[0]) if j.needs else "minilm-l6"}))
        rows = [{"step": 10, "loss": 1.0}, {"step": 333, "valid_accuracy": 0.2 + i / 10},
                {"step": 666, "valid_accuracy": 0.3}, {"step": 666, "valid_accuracy": 0.3},  # re-logged on resume
                {"step": 999, "valid_accuracy": 0.4 + i / 10}]
        (sweep.path(j) / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    def short(m, seed, acc, lr=1e-4):
        pre = "minilm-l6" if m == "released" else f"/r/pretrain-{m}-seed0-steps150-hlr0.001"
        return {"model": m, "seed": seed, "lr": lr, "test_accuracy": acc, "test_ece": 1.0, "pretrained": pre}
    common.write_results(B.page_name("wordnet-lexnames", 1000, [1e-4]), {"finetune_steps": 500, "runs": [
        short("released", 0, 0.40), short("released", 1, 0.45), short("k1", 0, 0.50), short("k5", 0, 0.50),
        short("k5", 1, 0.60), short("k5", 0, 0.99, lr=3e-5), short("k5", 2, 0.10)]}, "{header}")
    monkeypatch.setattr(sys, "argv", argv)
    B.main()
    name = B.page_name("wordnet-lexnames", 1000, [1e-4], B.PRETRAIN_STEPS, 1000)
    assert name == "multi_cls_wordnet-lexnames_1k_ft1000_lr0.0001"
    runs = json.loads((tmp_path / "results" / f"{name}.json").read_text())["results"]["runs"]
    assert [r["valid_course"] for r in runs] == [{"333": 0.2 + i / 10, "666": 0.3, "999": 0.4 + i / 10}
                                                 for i in range(8)]
    page = (tmp_path / "results" / f"{name}.md").read_text()
    assert "| model | @ 333 | @ 666 | @ 999 |" in page
    assert "| Ours, K = 5 | 65.00 | 30.00 | 85.00 |" in page  # the mean of its two runs (i = 4, 5)
    assert "1000 updates of batch 8 (8 epochs; the thesis: 20" in page
    # against the 500-update page: the pairs of the same model, rate and seeds (not its other rate nor seed 2)
    assert ("| MiniLM as released (plain BERT) | 2 | 42.50 ± 2.50 | 50.50 ± 0.50 | +8.00 ± 2.00 | 2 of 2 | 1.00 ± 0.00 "
            "| 5.00 ± 0.00 |") in page
    assert "| Ours, K = 1 (facet token, inserted maps, MCQT) | 1 | 50.00 | 52.00 | +2.00 | 1 of 1 | 1.00 | 5.00 |" \
        in page
    assert "| Ours, K = 5 | 2 | 55.00 ± 5.00 | 54.50 ± 0.50 | -0.50 ± 4.50 | 1 of 2 | 1.00 ± 0.00 |" in page
    assert ("at 500 updates 0.00 points, K = 5 ahead in 0 of 1; at 1000 updates 2.00 points, K = 5 ahead in 1 of 1"
            in page)  # over seed 0 alone: the 500-update page has no K = 1 run of seed 1
