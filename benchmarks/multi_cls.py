"""Multi-CLS BERT against its baselines with 100, 1k or all training examples (thesis C Table 5.1's protocol, small
scale):
the released MiniLM-L6 fine-tuned as plain BERT, MiniLM continued with the multi-task objective and K = 1 ("Ours
(K=1)"), and with K = 5 facets (λ = 0.1, hard negatives), on BBC News topics or a built task (`--task`:
debian-sections, wordnet-lexnames, wordnet-wic; `genfeat data build`).

    python -m benchmarks.multi_cls [--task bbc] [--pretrain-steps 150] [--heads-lr 0] [--finetune-steps 300]
                                   [--pretrain-seeds 0] [--seeds 0 1 2] [--labels 100] [--max-len 128]
                                   [--batch-size 0]   # 0: the thesis's batch for --labels (4 / 8 / 16)
    python -m benchmarks.multi_cls --train-only --only pretrain:5 ...   # one worker's share (parallel workers)
    python -m benchmarks.multi_cls --lrs 1e-5 3e-5 1e-4 ...   # every rate; rows at the dev-selected one
    python -m benchmarks.multi_cls --ablations ...   # and Table 5.2's K = 5 ablations (groups pretrain:5-nohard,
                                                     #   pretrain:5-noinsert, finetune:k5-nohard / -noinsert / -sum)

Each run is a `genfeat run` recipe call kept in --runs by the sweep harness (resumable; a finished run is reused):
    multi_cls_pretrain --preset minilm_bbc --model.k K --seed P --train.max_steps S [--heads_lr H]
    multi_cls_classify --preset bbc --task T --pretrained {minilm-l6 | the K run} --seed F --labels L
Every fine-tuning seed draws its own labeled subset; all models share it for the same seed. Reported: test
accuracy and ECE of the validation-selected weights, mean ± standard error over (pretraining x fine-tuning) seeds.
Writes docs/results/multi_cls.{md,json} (BBC) or multi_cls_<task>.{md,json}, with _1k / _full / _<n> for another
label count, _pre<S> for a continued-pretraining budget other than 150 steps, _ft<S> for a fine-tuning budget above
500 updates, _lr<rate> for one rate other than the preset's and _lr-selected for more than one (`page_name`); each
page shows K = 5 - K = 1 over the runs that share pretraining and fine-tuning seeds and the mean validation course
of each model, and an _ft page its runs against the same runs of its setting's short-budget page. A recorded page
is replaced only by a collect at its setting (`page_setting`) that writes its sections again (--uncertainty,
--ablations where it has them). --uncertainty keeps each run's test predictions in its run directory, so a
re-collect predicts only new runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from benchmarks.common import check_setting, load_result, mean_std, reading, render, result_args, write_results
from benchmarks.sweep import Job, Sweep
from genfeat.registry import RECIPES
from genfeat.tasks.multi_cls_predictions import predict_run

NAME = "multi_cls"
PRETRAIN_STEPS = 150  # the default --pretrain-steps; run and page names spell out any other budget
# The CPU pages fine-tune for 200-500 updates (each page states its budget); a longer budget gets its own page
# (`page_name`). Validation runs three times a run, and at least every 500 updates as in the thesis (App. D.1.2).
SHORT_FINETUNE_STEPS = 500
EVAL_EVERY_MAX = 500
MODELS = {"released": "MiniLM as released (plain BERT)", "mtl": "MTL (QT + SO on the pooled [CLS], no facets)",
          "k1": "Ours, K = 1 (facet token, inserted maps, MCQT)", "k5": "Ours, K = 5"}
# Table 5.2's ablations of the K = 5 model (--ablations): two change the pretraining, one the fine-tuning pooler.
ABLATIONS = {"k5-nohard": "K = 5, no hard negatives", "k5-noinsert": "K = 5, no inserted layers",
             "k5-sum": "K = 5, sum aggregation"}
# Table 5.2 (BERT-Base, dev) at the page's label count: Pretrained, Default K = 1 / 5, the ablations; Table 5.1's
# macro averages for the footer. Table 5.2 has no Full column: a Full page shows Table 5.1's there.
THESIS_TABLE_5_2 = {
    100: ("GLUE 100", {"released": 56.85, "k1": 57.76, "k5": 62.62, "k5-nohard": 61.77, "k5-noinsert": 60.12,
                       "k5-sum": 58.87}),
    1000: ("GLUE 1k", {"released": 71.68, "k1": 73.30, "k5": 74.49, "k5-nohard": 74.18, "k5-noinsert": 73.35,
                       "k5-sum": 73.94})}
class ThesisRow(NamedTuple):
    """A GLUE average of thesis C Table 5.1 (BERT-Base): pretrained, MTL, Ours K = 1, Ours K = 5 (λ 0.1)."""
    glue: str
    pretrained: float
    mtl: float
    k1: float
    k5: float


THESIS_TABLE_5_1 = {100: ThesisRow("GLUE 100", 55.71, 59.29, 57.84, 61.80),
                    1000: ThesisRow("GLUE 1k", 71.67, 73.26, 73.28, 74.10),
                    0: ThesisRow("GLUE Full", 82.05, 83.30, 83.40, 83.47)}


def pretrain(k: int, seed: int, args, variant: str = "") -> Job:
    """The continued-pretraining run of K facets; `variant` "nohard" (A, P batches: QT's in-batch negatives only)
    or "noinsert" (no inserted maps L_{l,k}; the per-facet heads stay) is a Table 5.2 ablation; "mtl" (k 0) is
    Table 5.1's MTL baseline (`objective=mtl`: the same objectives on the pooled [CLS], no facets)."""
    cfg = RECIPES["multi_cls_pretrain"].presets["minilm_bbc"]()
    model = dataclasses.replace(cfg.model, k=max(k, 1), insert_after=() if variant == "noinsert" else None)
    data = dataclasses.replace(cfg.data, hard_negatives=variant != "nohard")
    cfg = dataclasses.replace(cfg, seed=seed, model=model, data=data, heads_lr=args.heads_lr,
                              objective="mtl" if variant == "mtl" else "multi_cls",
                              train=dataclasses.replace(cfg.train, max_steps=args.pretrain_steps,
                                                        eval_every=max(1, args.pretrain_steps // 4)))
    hlr = f"-hlr{args.heads_lr:g}" if args.heads_lr else ""
    var = f"-{variant}" if variant else ""
    name = "mtl" if variant == "mtl" else f"k{k}{var}"
    return Job(f"pretrain-{name}-seed{seed}-steps{args.pretrain_steps}{hlr}",
               {"k": k, "pretrain_seed": seed, "variant": variant},
               "multi_cls_pretrain", cfg, group="pretrain:mtl" if variant == "mtl" else f"pretrain:{k}{var}")


CLASSIFY = RECIPES["multi_cls_classify"].presets["bbc"]
DEFAULT_LR = CLASSIFY().train.lr
DEFAULT_BATCH = CLASSIFY().batch_size


def batch_size(args) -> int:
    """--batch-size, or the thesis's fine-tuning batch for the label count (App. D.1.2: 4 for 100 examples, 8 for
    1k, 16 for the full training set)."""
    if getattr(args, "batch_size", 0):
        return args.batch_size
    return 4 if 0 < args.labels <= 100 else 8 if 0 < args.labels <= 1000 else 16


def page_name(task: str, labels: int, lrs: list[float] = (DEFAULT_LR,), pretrain_steps: int = PRETRAIN_STEPS,
              finetune_steps: int = SHORT_FINETUNE_STEPS) -> str:
    """multi_cls (BBC) or multi_cls_<task>; with a label count other than 100, _1k / _full / _<n> after it; with
    another pretraining budget than the default, _pre<steps>; with a fine-tuning budget above
    SHORT_FINETUNE_STEPS, _ft<steps>; with one fine-tuning rate other than the preset's, _lr<rate>; with more than
    one (selected on dev), _lr-selected. Two sweeps that differ in any of these write two pages (and two that
    differ only in a short budget are kept apart by `page_setting`)."""
    size = {100: "", 1000: "_1k", 0: "_full"}.get(labels, f"_{labels}")
    budget = "" if pretrain_steps == PRETRAIN_STEPS else f"_pre{pretrain_steps}"
    ft = "" if finetune_steps <= SHORT_FINETUNE_STEPS else f"_ft{finetune_steps}"
    rate = "_lr-selected" if len(lrs) > 1 else "" if lrs[0] == DEFAULT_LR else f"_lr{lrs[0]:g}"
    return NAME + ("" if task == "bbc" else f"_{task}") + size + budget + ft + rate


def source_tag(k: int, pretrain_seed: int, args, variant: str = "") -> str:
    """How a fine-tuning run names the pretraining run it starts from: k<K>[-variant]-pre<P>, and -steps<S> for a
    pretraining budget other than the default (a fine-tuning run's name must differ when its encoder does)."""
    var = f"-{variant}" if variant else ""
    budget = "" if args.pretrain_steps == PRETRAIN_STEPS else f"-steps{args.pretrain_steps}"
    return f"{'mtl' if variant == 'mtl' else f'k{k}{var}'}-pre{pretrain_seed}{budget}"


def validation_course(run_dir: Path) -> dict[str, float]:
    """A fine-tuning run's validation accuracy at each evaluation, {update: accuracy}, from its metrics.jsonl (a
    row logged again after a resume counts once)."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return {str(r["step"]): r["valid_accuracy"] for r in rows if "valid_accuracy" in r}


def course_md(chosen: dict[str, list[dict[str, Any]]]) -> str:
    """The mean validation accuracy of each model's selected runs at every evaluation any run recorded (the runs
    with `valid_course`; "–" where one of a model's runs has no evaluation at that update); "" when none has one."""
    labels = MODELS | ABLATIONS
    courses = {m: [x["valid_course"] for x in runs if x.get("valid_course")] for m, runs in chosen.items()}
    steps = sorted({int(s) for cs in courses.values() for c in cs for s in c})
    if not steps:
        return ""
    lines = [f"| {labels[m]} | " + " | ".join(
        f"{100 * np.mean([c[str(s)] for c in cs]):.2f}" if all(str(s) in c for c in cs) else "–" for s in steps) + " |"
        for m, cs in courses.items() if cs]
    return ("Validation accuracy (%) at each evaluation, mean over the runs of each row above (`validation_course`):"
            "\n\n| model | " + " | ".join(f"@ {s}" for s in steps) + " |\n|---|" + "---|" * len(steps) + "\n"
            + "\n".join(lines) + "\n\n")


def shorter_budget(runs: list[dict[str, Any]], args) -> dict[str, Any] | None:
    """For a page above SHORT_FINETUNE_STEPS: the recorded page of the same setting at its short budget (the page
    name without _ft) and those of its runs that share a model, rate, pretraining and fine-tuning seed with `runs`;
    None for a short budget or when that page is not recorded."""
    if args.finetune_steps <= SHORT_FINETUNE_STEPS:
        return None
    name = page_name(args.task, args.labels, args.lrs, args.pretrain_steps)
    if not (short := load_result(name)):
        return None
    ours = {(r["model"], run_lr(r), *seed_key(r)) for r in runs}
    keep = ("model", "seed", "lr", "test_accuracy", "test_ece", "pretrained")
    return {"page": name, "finetune_steps": short["results"]["finetune_steps"],
            "runs": [{k: r.get(k) for k in keep} for r in short["results"]["runs"]
                     if (r["model"], run_lr(r), *seed_key(r)) in ours]}


def shorter_budget_md(here: dict[str, list[dict[str, Any]]], short: dict[str, Any] | None, steps: int) -> str:
    """Each model's selected runs (`here`) against the same runs (model, rate, seeds) at the shorter budget: test
    accuracy there and here over the pairs, the paired difference, test ECE there and here, and K = 5 - K = 1 at
    each budget over the seeds that all four runs share."""
    if not short:
        return ""
    def seeds(runs):
        return {seed_key(x) for x in runs}

    def at(runs, keys):
        return [x for x in runs if seed_key(x) in keys]

    there = {m: [x for x in short["runs"] if x["model"] == m and run_lr(x) ==
                 run_lr(runs[0])] for m, runs in here.items() if runs}
    lines = []
    for m, runs in there.items():
        if d := paired(at(here[m], seeds(runs)), runs):
            short_runs, long_runs = at(runs, seeds(here[m])), at(here[m], seeds(runs))
            lines.append(f"| {(MODELS | ABLATIONS)[m]} | {len(d['diffs'])} | "
                         f"{se([x['test_accuracy'] for x in short_runs])} | "
                         f"{se([x['test_accuracy'] for x in long_runs])} | "
                         f"{'+' if np.mean(d['diffs']) > 0 else ''}{mean_std(d['diffs'], 2, spread='se')} | "
                         f"{d['wins']} of {len(d['diffs'])} | {se([x['test_ece'] / 100 for x in short_runs])} | "
                         f"{se([x['test_ece'] / 100 for x in long_runs])} |")
    if not lines:
        return ""
    gap = ""
    if all(m in there for m in ("k1", "k5")):
        keys = seeds(there["k5"]) & seeds(there["k1"]) & seeds(here["k5"]) & seeds(here["k1"])
        gaps = [(short["finetune_steps"], paired(at(there["k5"], keys), at(there["k1"], keys))),
                (steps, paired(at(here["k5"], keys), at(here["k1"], keys)))]
        gap = "; ".join(f"at {b} updates {mean_std(g['diffs'], 2, spread='se')} points, K = 5 ahead in {g['wins']} "
                        f"of {len(g['diffs'])}" for b, g in gaps if g)
    return (f"Against the same runs at {short['finetune_steps']} updates ([page]({short['page']}.md): the same models, "
            "rates, pretraining and fine-tuning seeds; test accuracy, %):\n\n"
            f"| model | pairs | {short['finetune_steps']} updates | {steps} updates | difference (points) | longer "
            f"ahead | test ECE (%), {short['finetune_steps']} | test ECE (%), {steps} |\n"
            "|---|---|---|---|---|---|---|---|\n" + "\n".join(lines) + "\n\n"
            + (f"K = 5 - K = 1 over the seeds of those pairs: {gap}.\n\n" if gap else ""))


def pretrain_seed(run: dict[str, Any]) -> int | None:
    """The pretraining seed of a fine-tuning record, read from its `pretrained` run's name (`pretrain` names it
    ...-seed<P>-...); None for the released encoder."""
    m = re.search(r"pretrain-(?:k\d+[a-z-]*|mtl)-seed(\d+)-", str(run.get("pretrained") or ""))
    return int(m.group(1)) if m else None


def run_lr(run: dict[str, Any]) -> float:
    """A run's fine-tuning learning rate; the runs of the first pages were recorded without one and used the
    preset's."""
    return run.get("lr") or DEFAULT_LR


def seed_key(run: dict[str, Any]) -> tuple[int | None, int]:
    """(pretraining seed, fine-tuning seed): what pairs two models' runs."""
    return pretrain_seed(run), run["seed"]


def paired(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Test accuracy of runs `a` minus runs `b` over the pairs that share pretraining and fine-tuning seeds: the
    differences (points), and how many pairs `a` wins."""
    by = {seed_key(x): x["test_accuracy"] for x in b}
    d = [100 * (x["test_accuracy"] - by[key]) for x in a if (key := seed_key(x)) in by]
    return {"diffs": d, "wins": sum(v > 0 for v in d)} if d else None


def eval_every(finetune_steps: int) -> int:
    """Validation interval of a fine-tuning run: a third of the run, at most EVAL_EVERY_MAX updates."""
    return max(1, min(finetune_steps // 3, EVAL_EVERY_MAX))


def finetune_cfg(source: str, seed: int, args, aggregation: str = "reparam", lr: float = DEFAULT_LR
                 ) -> Any:
    cfg = CLASSIFY()
    return dataclasses.replace(cfg, seed=seed, pretrained=source, labels=args.labels, task=args.task,
                               max_len=args.max_len, aggregation=aggregation, batch_size=batch_size(args),
                               train=dataclasses.replace(cfg.train, max_steps=args.finetune_steps, lr=lr,
                                                         eval_every=eval_every(args.finetune_steps)))


def finetune(model: str, source: str, seed: int, tag: str, args, aggregation: str = "reparam",
             lr: float = DEFAULT_LR) -> Job:
    cfg = finetune_cfg(source, seed, args, aggregation, lr)
    task = "" if args.task == "bbc" else f"{args.task}-"
    agg = "" if aggregation == "reparam" else f"-{aggregation}"
    rate = "" if lr == DEFAULT_LR else f"-lr{lr:g}"
    bs = "" if batch_size(args) == DEFAULT_BATCH else f"-b{batch_size(args)}"
    return Job(f"ft-{task}{tag}{agg}-seed{seed}-labels{args.labels}-steps{args.finetune_steps}{bs}{rate}",
               {"model": model, "seed": seed, "lr": lr},
               "multi_cls_classify", cfg, group=f"finetune:{model}",
               needs=(Path(source),) if model != "released" else ())


def jobs(sweep: Sweep, args) -> tuple[list[Job], list[Job]]:
    """(pretraining jobs, fine-tuning jobs): released / MTL / K = 1 / K = 5 for every pretraining seed, and with
    --ablations Table 5.2's three K = 5 ablations for the first `--ablation-pretrain-seeds`."""
    pre = [pretrain(k, p, args) for p in args.pretrain_seeds for k in (1, 5)]
    sources = [("released", "minilm-l6", "released", "reparam")] + [
        (f"k{j.tags['k']}", str(sweep.path(j)), source_tag(j.tags["k"], j.tags["pretrain_seed"], args), "reparam")
        for j in pre]
    for p in args.pretrain_seeds:  # Table 5.1's MTL baseline
        j = pretrain(0, p, args, "mtl")
        pre.append(j)
        sources.append(("mtl", str(sweep.path(j)), source_tag(0, p, args, "mtl"), "reparam"))
    if args.ablations:
        for p in args.pretrain_seeds[:args.ablation_pretrain_seeds]:
            for variant in ("nohard", "noinsert"):
                j = pretrain(5, p, args, variant)
                pre.append(j)
                sources.append((f"k5-{variant}", str(sweep.path(j)), source_tag(5, p, args, variant), "reparam"))
            sources.append(("k5-sum", str(sweep.path(pretrain(5, p, args))), source_tag(5, p, args), "sum"))
    fts = [finetune(m, src, seed, tag, args, agg, lr) for m, src, tag, agg in sources for lr in args.lrs
           for seed in args.seeds]
    return pre, fts


def cached_test_predictions(cfg: Any, run_dir: Path, dropout_passes: int) -> dict[str, Any]:
    """`predict_run` on the test split, kept beside the run's weights in
    predictions-test-dropout<T>.safetensors so that a page re-collected with --uncertainty predicts only the runs
    it has not seen (the lexnames 1e-4 page: 18 min 51 s of predictions on 2 idle cores, 10.6 s with them kept;
    its reading). The file is used while it records the weights' size and modification time, the run's data
    checksum and the task and input length predicted with; otherwise it is predicted again."""
    from safetensors import safe_open
    from safetensors.torch import save

    from genfeat.config import atomic_write_bytes
    from genfeat.train.checkpoint import WEIGHTS

    run_dir = Path(run_dir)
    stat = (run_dir / WEIGHTS).stat()
    key = {"weights": f"{stat.st_size}:{stat.st_mtime_ns}", "task": cfg.task, "max_len": str(cfg.max_len),
           "data_sha256": str(json.loads((run_dir / "summary.json").read_text()).get("data_sha256"))}
    path = run_dir / f"predictions-test-dropout{dropout_passes}.safetensors"
    if path.is_file():
        with safe_open(str(path), "pt") as f:
            if f.metadata() == key:
                return {name: f.get_tensor(name) for name in f.keys()}
    out = predict_run(run_dir, dropout_passes=dropout_passes, pretrained=cfg.pretrained)
    atomic_write_bytes(path, save({k: v.contiguous() for k, v in out.items()}, metadata=key))
    return out


def uncertainty(sweep: Sweep, pre_jobs: list[Job], args, lrs: dict[str, float] | None = None) -> dict[str, Any]:
    """Table 5.4's overlaps and Table 5.2's ensembles on the test split, per pretraining seed: ENS (the variance of
    the K = 5 models fine-tuned with every seed), Multi-CLS (the variance of one K = 5 model's per-facet
    prototype distributions, Eq. D.2), Dropout (5 passes of the K = 1 model of fine-tuning seed 0), Least (1 - max
    p of one K = 5 model); the overlap of their top-20% most uncertain examples with ENS's, and ENS vs ENS across
    pretraining seeds. Ensembles: the fine-tuning-seed ensembles of K = 1 and K = 5 and the dropout ensemble, as
    test accuracy and ECE of the averaged probabilities. `lrs`: each model's fine-tuning rate (its dev-selected
    one, `selected_lr`; default the preset's)."""
    import torch

    from genfeat.metrics.calibration import ece, facet_distributions, least_confidence, top_overlap, variance_score

    def acc(p, y) -> float:
        return float((p.argmax(-1) == y).float().mean())

    by_pre: dict[int, dict[str, Any]] = {}
    for j in pre_jobs:
        p, k = j.tags["pretrain_seed"], j.tags["k"]
        preds = []
        for seed in args.seeds:
            tag = source_tag(k, p, args)
            ft = finetune(f"k{k}", str(sweep.path(j)), seed, tag, args, lr=(lrs or {}).get(f"k{k}", DEFAULT_LR))
            if not (sweep.path(ft) / "summary.json").is_file():
                continue
            preds.append(cached_test_predictions(finetune_cfg(str(sweep.path(j)), seed, args), sweep.path(ft),
                                                 dropout_passes=5 if (k == 1 and seed == args.seeds[0]) else 0))
        by_pre.setdefault(p, {})[k] = preds
    out: dict[str, Any] = {"overlap": [], "ensembles": [], "ens_scores": {}}
    for p, ks in sorted(by_pre.items()):
        k5, k1 = ks.get(5, []), ks.get(1, [])
        if len(k5) < 2 or not k1:
            continue
        y = k5[0]["labels"]
        ens = variance_score(torch.stack([x["probs"] for x in k5]))
        out["ens_scores"][p] = ens
        n_cls = k5[0]["probs"].size(-1)
        mcls = [variance_score(facet_distributions(x["facet_emb"], x["labels"], n_cls)) for x in k5]
        drop = variance_score(k1[0]["dropout_probs"])
        least = [least_confidence(x["probs"]) for x in k5]
        out["overlap"].append({"pretrain_seed": p,
                               "multi_cls_vs_ens": float(np.mean([top_overlap(u, ens) for u in mcls])),
                               "dropout_vs_ens": top_overlap(drop, ens),
                               "least_vs_ens": float(np.mean([top_overlap(u, ens) for u in least]))})
        for name, probs in (("ensemble of K = 1 models", torch.stack([x["probs"] for x in k1]).mean(0)),
                            ("ensemble of K = 5 models", torch.stack([x["probs"] for x in k5]).mean(0)),
                            ("K = 1, 5 dropout passes averaged", k1[0]["dropout_probs"].mean(0))):
            out["ensembles"].append({"pretrain_seed": p, "name": name, "members": len(k1) if "K = 1 m" in name else
                                     len(k5) if "K = 5" in name else 5, "test_accuracy": acc(probs, y),
                                     "test_ece": ece(probs.numpy(), y.numpy())})
    seeds = sorted(out["ens_scores"])
    if len(seeds) >= 2:
        out["ens_vs_ens"] = top_overlap(out["ens_scores"][seeds[0]], out["ens_scores"][seeds[1]])
    out.pop("ens_scores")
    return out


def uncertainty_md(u: dict[str, Any] | None) -> str:
    if not u or not u.get("overlap"):
        return ""
    ov = u["overlap"]
    rows = [f"| {label} | {mean_std([o[key] for o in ov], 1)} |" for label, key in
            (("Multi-CLS vs ENS", "multi_cls_vs_ens"), ("Dropout vs ENS", "dropout_vs_ens"),
             ("Least vs ENS", "least_vs_ens"))]
    if "ens_vs_ens" in u:
        rows.append(f"| ENS vs ENS (two pretraining seeds) | {u['ens_vs_ens']:.1f} |")
    names = list(dict.fromkeys(e["name"] for e in u["ensembles"]))
    ens = [f"| {n} | {u['ensembles'][[e['name'] for e in u['ensembles']].index(n)]['members']} | "
           f"{se([e['test_accuracy'] for e in u['ensembles'] if e['name'] == n])} | "
           f"{se([e['test_ece'] / 100 for e in u['ensembles'] if e['name'] == n])} |" for n in names]
    return f"""Uncertainty (Table 5.4's protocol on the test split; mean ± std over pretraining seeds; chance 20%):
overlap (%) of the top-20% most uncertain examples with those of ENS, the variance over the K = 5 models
fine-tuned with every seed from the same pretraining run.

| estimators | overlap (%) |
|---|---|
{chr(10).join(rows)}

Ensembles (Table 5.2's rows; mean ± s.e. over pretraining seeds):

| ensemble | members | test accuracy (%) | test ECE (%) |
|---|---|---|---|
{chr(10).join(ens)}

"""


def se(v: list[float]) -> str:
    return mean_std(v, 2, scale=100, spread="se")


def selected_lr(runs: list[dict[str, Any]]) -> tuple[float, list[dict[str, Any]]]:
    """The fine-tuning learning rate with the best mean validation accuracy over a model's runs (the thesis selects
    it on dev per task), and that rate's runs; runs recorded without a rate used the preset's."""
    by_lr: dict[float, list[dict[str, Any]]] = {}
    for x in runs:
        by_lr.setdefault(run_lr(x), []).append(x)
    if not by_lr:
        return DEFAULT_LR, []
    lr = max(by_lr, key=lambda v: (np.mean([x["valid_accuracy"] for x in by_lr[v]]), -v))
    return lr, by_lr[lr]


def markdown(record: dict[str, Any]) -> str:
    r = record["results"]
    glue, thesis = THESIS_TABLE_5_2.get(r["labels"], ("", {}))
    table = "5.2"
    if not thesis and (t51 := THESIS_TABLE_5_1.get(r["labels"])):  # Full: Table 5.1's, which has no ablations
        glue, thesis, table = t51.glue, {"released": t51.pretrained, "k1": t51.k1, "k5": t51.k5}, "5.1"
    if t51 := THESIS_TABLE_5_1.get(r["labels"]):  # Table 5.2 has no MTL row: Table 5.1's
        thesis = thesis | {"mtl": t51.mtl}
    rows = []
    for m, label in (MODELS | ABLATIONS).items():
        lr, runs = selected_lr([x for x in r["runs"] if x["model"] == m])
        if runs:
            acc, cal = [x["test_accuracy"] for x in runs], [x["test_ece"] / 100 for x in runs]  # ECE is in %
            ref = f"{thesis[m]:.2f}" if m in thesis else "–"
            rows.append(f"| {label} | {lr:g} | {len(runs)} | {se(acc)} | {se(cal)} | {ref} |")
    t51 = THESIS_TABLE_5_1.get(r["labels"])
    footer = (f"Thesis (BERT-Base, {t51.glue}, Table 5.1): Pretrained {t51.pretrained:.2f}, MTL {t51.mtl:.2f}, "
              f"Ours K=1 {t51.k1:.2f}, Ours K=5 λ=0.1 {t51.k5:.2f}; " if t51 else "")
    uncertainty = uncertainty_md(r.get("uncertainty"))
    chosen = {m: selected_lr([x for x in r["runs"] if x["model"] == m])[1] for m in MODELS | ABLATIONS}
    grid = ""
    if len(r.get("lrs", [])) > 1:
        lines = [f"| {label} | {lr:g} | {len(runs)} | {se([x['valid_accuracy'] for x in runs])} | "
                 f"{se([x['test_accuracy'] for x in runs])} |"
                 for m, label in (MODELS | ABLATIONS).items() for lr in r["lrs"]
                 if (runs := [x for x in r["runs"] if x["model"] == m and run_lr(x) == lr])]
        grid = ("Every rate (the row above takes each model's rate with the best mean validation accuracy):\n\n"
                "| model | learning rate | runs | validation accuracy (%) | test accuracy (%) |\n"
                "|---|---|---|---|---|\n" + "\n".join(lines) + "\n\n")
    pairs = ""
    for other, label in (("k1", "K = 1"), ("mtl", "MTL")):  # the thesis's headline comparison is K = 5 - MTL
        if pair := paired(chosen["k5"], chosen[other]):
            pairs += (f"Paired (the same pretraining and fine-tuning seeds, each model at its selected rate): K = 5 - "
                      f"{label} = {mean_std(pair['diffs'], 2, spread='se')} points of test accuracy; K = 5 ahead in "
                      f"{pair['wins']} of {len(pair['diffs'])} pairs.\n\n")
    ablated = [(label, d) for m, label in ABLATIONS.items() if (d := paired(chosen[m], chosen["k5"]))]
    if ablated:
        pairs += ("Each ablation against K = 5, paired the same way (points of test accuracy; negative: the ablation "
                  "loses, the thesis's direction):\n\n| ablation | minus K = 5 | ablation ahead |\n|---|---|---|\n"
                  + "\n".join(f"| {label} | {'+' if np.mean(d['diffs']) > 0 else ''}"
                               f"{mean_std(d['diffs'], 2, spread='se')} | {d['wins']} of {len(d['diffs'])} |"
                               for label, d in ablated) + "\n\n")
    variants = {"": "", "nohard": ", no hard negatives", "noinsert": ", no inserted layers"}

    def model_name(p: dict[str, Any]) -> str:
        return "MTL (pooled [CLS])" if p.get("variant") == "mtl" else f"K = {p['k']}{variants[p.get('variant') or '']}"
    def first(p: dict[str, Any]) -> str:  # None: not recorded (a run whose evaluation split its rows wrongly)
        return "–" if p.get("valid_positive_first") is None else f"{p['valid_positive_first']:.3f}"

    pre = "\n".join(f"| {model_name(p)} | {p.get('pretrain_seed', 0)} | {p['steps']} | "
                    f"{p['valid_mcqt']:.3f}{' (one term over P: chance 2.30)' if p.get('variant') == 'nohard' else ''}"
                    f" | {first(p)} | {p['valid_mlm']:.3f} |"
                    for p in r["pretraining"])
    task = r.get("task", "bbc")
    what = "BBC News" if task == "bbc" else f"`{task}` (sha256 {r['data_sha256'][:12]}…, docs/results/data_tasks.md)"
    hlr = (f", new parameters (inserted maps, the four heads) at learning rate {r['heads_lr']:g} (`heads_lr`)"
           if r.get("heads_lr") else "")
    n = f"{r['labels']}" if r["labels"] else "all"
    epochs = (f" ({r['finetune_steps'] * r.get('batch_size', DEFAULT_BATCH) / r['labels']:g} epochs; the thesis: 20, "
              "App. D.1.2)" if r["labels"] else "")
    sample = (f"each fine-tuning seed its own {n} training examples (shared by every model)" if r["labels"] else
              "every run the whole training split, the fine-tuning seed setting its initialisation and batch order")
    return f"""# Multi-CLS BERT on {what} with {n} training examples (Table 5.1's protocol, small scale)

{{header}}Fine-tuning: `multi_cls_classify --preset bbc --task {task}`, {r['finetune_steps']} updates of batch \
{r.get('batch_size', DEFAULT_BATCH)}{epochs},
inputs of {r.get('max_len', 128)} tokens, selection on the validation split (the checkpoint, and the learning rate
among {', '.join(f'{v:g}' for v in r.get('lrs', [DEFAULT_LR]))} by mean validation accuracy); {sample}.
Continued pretraining: `multi_cls_pretrain --preset minilm_bbc`, {r['pretrain_steps']} steps of 10 triples on the BBC
training articles (the thesis: 2 x 10^9 tokens){hlr}. Mean ± standard error over the runs.

| model | learning rate | runs | test accuracy (%) | test ECE (%) | thesis, {glue or 'no column'} (Table {table}) |
|---|---|---|---|---|---|
{chr(10).join(rows)}

{pairs}{course_md(chosen)}\
{shorter_budget_md({m: v for m, v in chosen.items() if v}, r.get("shorter_budget"), r["finetune_steps"])}\
{grid}Pretraining runs (validation, held-out articles):

| model | pretraining seed | steps | MCQT (chance {2 * math.log(20):.2f}) | positive first (chance {1 / 20:.3f}) | MLM |
|---|---|---|---|---|---|
{pre}

{uncertainty}{footer}ECE (Table 5.3, GLUE*-100) K=1 25.22, K=5 15.46; Table 5.4 (GLUE*-100): Multi-CLS vs ENS
32.57, Dropout vs ENS 37.17, Least vs ENS 39.57, ENS vs ENS 38.67.

{reading(record['name'])}
"""


def page_setting(args) -> dict[str, Any]:
    """What a page's numbers depend on besides its seeds: a collection with other values must not replace it."""
    return {"task": args.task, "labels": args.labels, "max_len": args.max_len, "batch_size": batch_size(args),
            "lrs": args.lrs, "heads_lr": args.heads_lr, "pretrain_steps": args.pretrain_steps,
            "finetune_steps": args.finetune_steps}


def dropped_sections(recorded: dict[str, Any] | None, args) -> list[str]:
    """The parts of a recorded page that a collect with these options would not write again: Table 5.4's
    overlaps and ensembles without --uncertainty, Table 5.2's ablation rows without --ablations."""
    if not recorded:
        return []
    r = recorded["results"]
    lost = []
    if r.get("uncertainty") and not args.uncertainty:
        lost.append("Table 5.4's overlaps and the ensembles (--uncertainty)")
    if any(x["model"] in ABLATIONS for x in r["runs"]) and not args.ablations:
        lost.append("Table 5.2's ablation rows (--ablations)")
    return lost


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pretrain-steps", type=int, default=PRETRAIN_STEPS)
    ap.add_argument("--finetune-steps", type=int, default=300)
    ap.add_argument("--labels", type=int, default=100, help="training examples per fine-tuning seed (0: all)")
    ap.add_argument("--batch-size", type=int, default=0, help="fine-tuning batch (0: the thesis's for --labels: "
                    "4 for 100, 8 for 1k, 16 for all)")
    ap.add_argument("--task", default="bbc", help="bbc, or a built task: debian-sections, wordnet-lexnames, "
                    "wordnet-wic")
    ap.add_argument("--max-len", type=int, default=128, help="fine-tuning input tokens (with the K facets)")
    ap.add_argument("--heads-lr", type=float, default=0.0, help="pretraining: the new parameters' learning rate "
                    "(0: the encoder's)")
    ap.add_argument("--pretrain-seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--lrs", type=float, nargs="+", default=[DEFAULT_LR], help="fine-tuning learning rates; each "
                    "model's row reports the one with the best mean validation accuracy")
    ap.add_argument("--ablations", action="store_true", help="also Table 5.2's K = 5 ablations: no hard negatives, "
                    "no inserted layers (each its own pretraining run), sum aggregation")
    ap.add_argument("--ablation-pretrain-seeds", type=int, default=1, help="the ablations use the first N "
                    "pretraining seeds")
    ap.add_argument("--uncertainty", action="store_true", help="also Table 5.4's overlaps and the ensembles "
                    "(predicts the test split again with every fine-tuned model)")
    result_args(ap, [0, 1, 2], runs="runs/bench_multi_cls")
    args = ap.parse_args()
    name = page_name(args.task, args.labels, args.lrs, args.pretrain_steps, args.finetune_steps)
    if args.render_only:
        print(render(name, markdown))
        return
    sweep = Sweep.from_args(args)
    pre_jobs, ft_jobs = jobs(sweep, args)
    pretraining = sweep.results(pre_jobs)
    finished = [(j, r) for j in ft_jobs if (r := sweep.result(j))]
    if args.train_only:
        return
    runs = [r | {"valid_course": validation_course(sweep.path(j))} for j, r in finished]
    pre_jobs = [j for j in pre_jobs if not j.tags["variant"]]
    setting = page_setting(args)
    check_setting(name, setting, tuple(setting))  # before the uncertainty passes, not after
    if lost := dropped_sections(load_result(name), args):
        raise SystemExit(f"docs/results/{name}.json records {' and '.join(lost)}: collect with those options "
                         "too, or the page would lose them")
    lrs = {m: selected_lr([r for r in runs if r["model"] == m])[0] for m in ("k1", "k5")}
    keep = ("model", "seed", "lr", "test_accuracy", "test_ece", "test_macro_f1", "valid_accuracy", "pretrained",
            "steps", "best_step", "train_s", "device", "valid_course")
    pre_keys = ("k", "variant", "pretrain_seed", "steps", "valid_mcqt", "valid_positive_first", "valid_mlm")
    print(write_results(name, {**setting,
                               "data_sha256": runs[0].get("data_sha256") if runs else None,
                               "pretraining": [{k: p[k] for k in pre_keys} for p in pretraining],
                               "runs": [{k: r.get(k) for k in keep} for r in runs],
                               "shorter_budget": shorter_budget(runs, args),
                               "uncertainty": uncertainty(sweep, pre_jobs, args, lrs) if args.uncertainty
                               else None},
                        markdown, seeds=args.seeds, machine=sweep.machine(), setting=tuple(setting)))


if __name__ == "__main__":
    main()
