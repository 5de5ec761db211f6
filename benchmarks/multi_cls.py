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
from pathlib import Path
from typing import Any

from benchmarks.common import mean_std, reading, render, result_args, write_results
from benchmarks.sweep import Job, Sweep
from genfeat.recipes import multi_cls as R

NAME = "multi_cls"
MODELS = {"released": "MiniLM as released (plain BERT)", "k1": "continued MTL, K = 1", "k5": "Multi-CLS, K = 5"}


def pretrain(k: int, seed: int, args) -> Job:
    cfg = R.minilm_bbc()
    cfg = dataclasses.replace(cfg, seed=seed, model=dataclasses.replace(cfg.model, k=k),
                              train=dataclasses.replace(cfg.train, max_steps=args.pretrain_steps,
                                                        eval_every=max(1, args.pretrain_steps // 4)))
    return Job(f"pretrain-k{k}-seed{seed}", {"k": k, "pretrain_seed": seed},
               lambda out, ckpt: R.run_pretrain(cfg, out, resume_from=ckpt), group=f"pretrain:{k}")


def finetune(model: str, source: str, seed: int, tag: str, args) -> Job:
    cfg = R.classify_bbc()
    cfg = dataclasses.replace(cfg, seed=seed, pretrained=source, labels=args.labels,
                              train=dataclasses.replace(cfg.train, max_steps=args.finetune_steps,
                                                        eval_every=max(1, args.finetune_steps // 3)))
    return Job(f"ft-{tag}-seed{seed}-labels{args.labels}", {"model": model, "seed": seed},
               lambda out, ckpt: R.run_classify(cfg, out, resume_from=ckpt), group=f"finetune:{model}",
               needs=(Path(source),) if model != "released" else ())


def se(v: list[float]) -> str:
    return mean_std(v, 2, scale=100, spread="se")


def markdown(record: dict[str, Any]) -> str:
    r = record["results"]
    rows = []
    for m, label in MODELS.items():
        runs = [x for x in r["runs"] if x["model"] == m]
        if runs:
            acc, cal = [x["test_accuracy"] for x in runs], [x["test_ece"] / 100 for x in runs]  # ECE is in %
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
    result_args(ap, [0, 1, 2], runs="runs/bench_multi_cls")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    sweep = Sweep.from_args(args)
    pre_jobs = [pretrain(k, p, args) for p in args.pretrain_seeds for k in (1, 5)]
    pretraining = sweep.results(pre_jobs)
    sources = [("released", "minilm-l6", "released")] + [
        (f"k{j.tags['k']}", str(sweep.path(j)), f"k{j.tags['k']}-pre{j.tags['pretrain_seed']}") for j in pre_jobs]
    runs = sweep.results(finetune(m, src, seed, tag, args) for m, src, tag in sources for seed in args.seeds)
    if not args.train_only:
        keep = ("model", "seed", "test_accuracy", "test_ece", "test_macro_f1", "valid_accuracy", "pretrained", "steps",
                "best_step", "train_s")
        pre_keys = ("k", "steps", "valid_mcqt", "valid_positive_first", "valid_mlm")
        print(write_results(NAME, {"labels": args.labels, "pretrain_steps": args.pretrain_steps,
                                   "finetune_steps": args.finetune_steps,
                                   "pretraining": [{k: p[k] for k in pre_keys} for p in pretraining],
                                   "runs": [{k: r.get(k) for k in keep} for r in runs]}, markdown, seeds=args.seeds,
                            device=sweep.device(runs + pretraining)))


if __name__ == "__main__":
    main()
