"""Multi-CLS BERT against its baselines on BBC News topic classification with 100 training examples (thesis C
Table 5.1's protocol at CPU scale): the released MiniLM-L6 fine-tuned as plain BERT, MiniLM continued with the
multi-task objective and K = 1 ("Ours (K=1)"), and with K = 5 facets (λ = 0.1, hard negatives).

    python -m benchmarks.multi_cls [--pretrain-steps 200] [--finetune-steps 300] [--seeds 0 1 2] [--labels 100]
    python -m benchmarks.multi_cls --train-only --only pretrain:5 ...   # one worker's share (parallel workers)

Each run is a `genfeat run` recipe call kept in --runs (resumable; a finished run is reused):
    multi_cls_pretrain --preset minilm_bbc --model.k K --seed P --train.max_steps S     (P: pretraining seeds)
    multi_cls_classify --preset bbc --pretrained {minilm-l6 | the K run} --seed F --labels L
Every fine-tuning seed draws its own labeled subset; all models share it for the same seed. Reported: test
accuracy and ECE of the validation-selected weights, mean ± standard error over (pretraining x fine-tuning) seeds.
Writes docs/results/multi_cls.{md,json}.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from pathlib import Path
from typing import Any

from benchmarks.common import claim_run_dir, reading, render, result_args, write_results
from genfeat.recipes import multi_cls as R
from genfeat.train.checkpoint import latest_checkpoint

NAME = "multi_cls"
MODELS = {"released": "MiniLM as released (plain BERT)", "k1": "continued MTL, K = 1", "k5": "Multi-CLS, K = 5"}


def pretrain(k: int, seed: int, args) -> Path | None:
    run_dir = Path(args.runs) / f"pretrain-k{k}-seed{seed}"
    if (run_dir / "summary.json").exists():
        return run_dir
    if args.collect or (args.only and f"pretrain:{k}" not in args.only) or not claim_run_dir(run_dir, resume=True):
        return None
    cfg = R.minilm_bbc()
    cfg = dataclasses.replace(cfg, seed=seed, model=dataclasses.replace(cfg.model, k=k),
                              train=dataclasses.replace(cfg.train, max_steps=args.pretrain_steps,
                                                        eval_every=max(1, args.pretrain_steps // 4)))
    R.run_pretrain(cfg, run_dir, resume_from=latest_checkpoint(run_dir))
    return run_dir


def finetune(model: str, source: str, seed: int, tag: str, args) -> dict[str, Any] | None:
    run_dir = Path(args.runs) / f"ft-{tag}-seed{seed}-labels{args.labels}"
    done = run_dir / "summary.json"
    if done.exists():
        return json.loads(done.read_text()) | {"model": model, "seed": seed}
    if args.collect or (args.only and f"finetune:{model}" not in args.only) or not claim_run_dir(run_dir, resume=True):
        return None
    cfg = R.classify_bbc()
    cfg = dataclasses.replace(cfg, seed=seed, pretrained=source, labels=args.labels,
                              train=dataclasses.replace(cfg.train, max_steps=args.finetune_steps,
                                                        eval_every=max(1, args.finetune_steps // 3)))
    return R.run_classify(cfg, run_dir, resume_from=latest_checkpoint(run_dir)) | {"model": model, "seed": seed}


def se(v: list[float]) -> str:
    if len(v) < 2:
        return f"{100 * v[0]:.2f}" if v else "–"
    return f"{100 * statistics.mean(v):.2f} ± {100 * statistics.stdev(v) / len(v) ** 0.5:.2f}"


def markdown(record: dict[str, Any]) -> str:
    r = record["results"]
    rows = []
    for m, label in MODELS.items():
        runs = [x for x in r["runs"] if x["model"] == m]
        if runs:
            acc, cal = [x["test_accuracy"] for x in runs], [x["test_ece"] / 100 for x in runs]
            rows.append(f"| {label} | {len(runs)} | {se(acc)} | {se(cal)} |")
    pre = "\n".join(f"| K = {p['k']} | {p['steps']} | {p['valid_mcqt']:.3f} | {p['valid_positive_first']:.3f} | "
                    f"{p['valid_mlm']:.3f} |" for p in r["pretraining"])
    return f"""# Multi-CLS BERT on BBC News with {r['labels']} training examples (Table 5.1's protocol, CPU scale)

{{header}}Fine-tuning: `multi_cls_classify --preset bbc`, {r['finetune_steps']} updates of batch 4, selection on the
validation split; each fine-tuning seed its own {r['labels']} training articles (shared by the three models).
Continued pretraining: `multi_cls_pretrain --preset minilm_bbc`, {r['pretrain_steps']} steps of 10 triples on the
BBC training articles (the thesis: 2 x 10^9 tokens). Mean ± standard error over the runs.

| model | runs | test accuracy (%) | test ECE (%) |
|---|---|---|---|
{chr(10).join(rows)}

Pretraining runs (validation, held-out articles):

| model | steps | MCQT | positive first (chance {1 / 20:.3f}) | MLM |
|---|---|---|---|---|
{pre}

Thesis (BERT-Base, GLUE 100, Table 5.1): Pretrained 55.71, MTL 59.29, Ours K=1 57.84, Ours K=5 λ=0.1 61.80; ECE
(Table 5.3, GLUE*-100) K=1 25.22, K=5 15.46.

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pretrain-steps", type=int, default=200)
    ap.add_argument("--finetune-steps", type=int, default=300)
    ap.add_argument("--labels", type=int, default=100)
    ap.add_argument("--pretrain-seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--only", nargs="*", default=[], help="this worker's jobs: pretrain:K, finetune:MODEL")
    result_args(ap, [0, 1, 2], runs="runs/bench_multi_cls")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    sources: dict[str, list[tuple[str, str]]] = {"released": [("minilm-l6", "released")], "k1": [], "k5": []}
    pretraining = []
    for p in args.pretrain_seeds:
        for k in (1, 5):
            run = pretrain(k, p, args)
            if run is not None:
                sources[f"k{k}"].append((str(run), f"k{k}-pre{p}"))
                pretraining.append(json.loads((run / "summary.json").read_text()))
    runs = [r for m, srcs in sources.items() for src, tag in srcs for seed in args.seeds
            if (r := finetune(m, src, seed, tag, args)) is not None]
    if not args.train_only:
        keep = ("model", "seed", "test_accuracy", "test_ece", "test_macro_f1", "valid_accuracy", "pretrained", "steps",
                "best_step", "train_s")
        pre_keys = ("k", "steps", "valid_mcqt", "valid_positive_first", "valid_mlm")
        print(write_results(NAME, {"labels": args.labels, "pretrain_steps": args.pretrain_steps,
                                   "finetune_steps": args.finetune_steps,
                                   "pretraining": [{k: p[k] for k in pre_keys} for p in pretraining],
                                   "runs": [{k: r.get(k) for k in keep} for r in runs]}, markdown, seeds=args.seeds))


if __name__ == "__main__":
    main()
