"""Complement-GAN SSL on MNIST (100 labels) and Fashion-MNIST (1,000 labels): thesis Y Tables 3.1/3.2 protocol;
records docs/results/gan_ssl.{md,json}.

    genfeat data fetch mnist && genfeat data fetch fashion-mnist
    python -m benchmarks.gan_ssl [--seeds 0 1 2] [--epochs 10] [--pixelcnn-epochs 1 --pixelcnn-blocks 2]
    python -m benchmarks.gan_ssl --train-only --variants mnist_fm mnist_fm_ld    # one worker's share (resumable)
    python -m benchmarks.gan_ssl --epochs 100 --variants mnist_fm mnist_fm_ld    # 10x: gan_ssl_100ep.{md,json}

Variants (the discriminator, data, labeled subset and budget are the same within a seed; the seed redraws the
labeled subset): supervised-only, FM, FM+LD, FM+PT+Ent on MNIST; supervised-only, FM, FM+PT+Ent on Fashion-MNIST.
FM+LD uses a PixelCNN trained once per dataset by `genfeat run pixelcnn` (kept under --runs). Reported: test
errors out of 10,000 of the validation-selected discriminator (mean ± std), the max log-p of 1,000 generated
samples under the density model (Table 3.2's column), the Assumption-1 ratios, seconds per epoch.
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import json
from pathlib import Path
from typing import Any

from benchmarks.common import mean_std, reading, render, result_args, write_results
from benchmarks.sweep import Job, Sweep
from genfeat.models.gan_ssl.inference import load_density
from genfeat.paradigms.complement_gan import EPSILON_IMAGES
from genfeat.registry import RECIPES
from genfeat.runner import run_recipe
from genfeat.train.checkpoint import latest_checkpoint

NAME = "gan_ssl"
EPOCHS = 10  # the CPU budget of docs/results/gan_ssl.md; other budgets get their own runs and page (`page_name`)
VARIANTS = {  # name: (dataset preset, overrides of train)
    "mnist_supervised": ("mnist_100", {"method": "supervised"}),
    "mnist_fm": ("mnist_100", {}),
    "mnist_fm_ld": ("mnist_100_ld", {}),
    "mnist_fm_pt_ent": ("mnist_100", {"lambda_pt": 0.8, "lambda_ent": 0.1}),
    # not a thesis setting: LD 100x stronger, from the first iteration, every iteration -- a check that the term
    # moves the generator to lower density at all within the CPU budget (the thesis setting starts at 9,000)
    "mnist_fm_ldx100": ("mnist_100_ld", {"lambda_ld": 1e-2, "ld_start": 0, "ld_prob": 1.0}),
    "fashion_supervised": ("fashion_mnist_1000", {"method": "supervised"}),
    "fashion_fm": ("fashion_mnist_1000", {}),
    "fashion_fm_pt_ent": ("fashion_mnist_1000", {"lambda_pt": 0.8, "lambda_ent": 0.1}),
}
LABELS = {"supervised": "supervised only", "fm": "FM", "fm_ld": "FM + LD", "fm_pt_ent": "FM + PT + Ent",
          "fm_ldx100": "FM + LD ×100, every iteration (mechanism check)"}
DATA = {"mnist": "MNIST (100 labels)", "fashion": "Fashion-MNIST (1,000 labels)"}
THESIS = {"mnist_fm": "85.0 ± 11.7", "mnist_fm_ld": "79.5 ± 9.8", "mnist_fm_pt_ent": "–"}


def page_name(epochs: int) -> str:
    return NAME if epochs == EPOCHS else f"{NAME}_{epochs}ep"


def density_run(root: Path, dataset: str, epochs: int, blocks: int) -> Path:
    """The dataset's PixelCNN run under root, trained by the first worker that needs it (from its latest checkpoint
    where one was killed); parallel workers wait on an exclusive lock of `.lock` in its directory rather than train
    it twice into the same files."""
    out = root / f"pixelcnn-{dataset}"
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when the worker dies
        if not (out / "summary.json").exists():
            preset = "mnist" if dataset == "mnist" else "fashion_mnist"
            cfg = RECIPES["pixelcnn"].presets[preset]()
            cfg = dataclasses.replace(cfg, n_blocks=blocks, train=dataclasses.replace(cfg.train, epochs=epochs))
            resume = latest_checkpoint(out) is not None  # a killed worker's run continues
            run_recipe("pixelcnn", cfg, out, preset=None if resume else preset, resume=resume)
    return out


def job(variant: str, seed: int, args) -> Job:
    preset, over = VARIANTS[variant]
    cfg = RECIPES["gan_ssl"].presets[preset]()
    cfg = dataclasses.replace(cfg, seed=seed, train=dataclasses.replace(cfg.train, epochs=args.epochs, **over))

    def with_density() -> Any:  # the density model also gives the max log-p column of an MNIST GAN
        return dataclasses.replace(cfg, density=dataclasses.replace(cfg.density, run=str(density_run(
            Path(args.runs), "mnist", args.pixelcnn_epochs, args.pixelcnn_blocks))))

    name = f"{variant}-seed{seed}" + ("" if args.epochs == EPOCHS else f"-epochs{args.epochs}")
    return Job(name, {"variant": variant, "seed": seed}, "gan_ssl",
               with_density if variant.startswith("mnist") else cfg, preset=preset)


COURSE_EPOCHS = (10, 25, 50, 75, 100)
TAKEOVER = 0.01  # an epoch's mean discriminator loss below this: it separates real from generated almost perfectly


def training_course(run_dir: Path) -> dict[str, Any]:
    """A finished run's course, from its metrics.jsonl (one training row an epoch, the means over its iterations,
    and one evaluation row): the validation errors at COURSE_EPOCHS, the epochs in which the discriminator took
    over (mean loss_d below TAKEOVER; the feature-matching loss jumps by two orders of magnitude there), and the
    means of the feature-matching loss and the LD hinge over the last 10 epochs (None where the run has none)."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    train = sorted({r["step"]: r for r in rows if "loss_d" in r}.values(), key=lambda r: r["step"])
    iters = train[0]["step"]  # the loop logs once an epoch
    evals = {r["step"] // iters: r["valid_errors"] for r in rows if "valid_errors" in r}
    late = {k: [r[k] for r in train[-10:] if k in r] for k in ("g_fm", "g_ld")}
    return {"valid_errors": {str(e): int(evals[e]) for e in COURSE_EPOCHS if e in evals},
            "takeover_epochs": [r["step"] // iters for r in train if r["loss_d"] < TAKEOVER],
            **{f"{k}_last10": round(sum(v) / len(v), 2) if v else None for k, v in late.items()}}


def ld_direction_check(pixelcnn_run: Path, epsilon: float, steps: int = 40, n: int = 30) -> dict[str, float]:
    """Does descending the hinge LD lower log p? Adam (lr 1e-3) on the pixels of n real training images, the
    PixelCNN frozen, no generator in the way: mean log p before / after, mean pixel change, steps until every
    image is at or below epsilon."""
    import torch

    from genfeat.data.images import load_mnist
    from genfeat.losses.gan_ssl import low_density

    torch.manual_seed(0)
    dens = load_density(pixelcnn_run).eval().requires_grad_(False)
    x0 = torch.as_tensor(load_mnist()["train"].x[:n]).float().view(n, 1, 28, 28)
    x = x0.clone().requires_grad_()
    opt = torch.optim.Adam([x], lr=1e-3)
    start, below = None, None
    for step in range(steps + 1):
        lp = dens.log_prob(2 * x.clamp(0, 1) - 1)
        start = float(lp.mean()) if start is None else start
        if below is None and bool((lp <= epsilon).all()):
            below = step
        if step < steps:
            opt.zero_grad()
            low_density(lp, epsilon, "hinge").backward()
            opt.step()
    return {"steps": steps, "images": n, "mean_logp_start": round(start, 1),
            "mean_logp_end": round(float(lp.mean()), 1),
            "mean_abs_pixel_change": round(float((x.detach().clamp(0, 1) - x0).abs().mean()), 4),
            "steps_until_all_below_epsilon": below}


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    rows = []
    for variant in VARIANTS:
        runs = [r for r in res["runs"] if r["variant"] == variant]
        if not runs:
            continue
        ds, kind = variant.split("_", 1)

        def ms(k, digits=1, runs=runs):
            return mean_std([r[k] for r in runs if k in r], digits)
        rows.append(f"| {DATA[ds]} | "
                    f"{LABELS[kind]} | {ms('test_errors')} | {THESIS.get(variant, '–')} | {ms('max_logp_generated')} | "
                    f"{ms('r_real', 3)} | {ms('r_gen', 3)} | {ms('epoch_s')} | {len(runs)} |")
    per_run = [" | ".join(["", DATA[variant.split("_", 1)[0]], LABELS[variant.split("_", 1)[1]], *(
                   str(r.get(k, "–")) for k in ("seed", "test_errors", "valid_errors", "best_epoch",
                                                "max_logp_generated", "share_above_epsilon")), ""]).strip()
               for variant in VARIANTS for r in sorted(res["runs"], key=lambda r: r["seed"]) if r["variant"] == variant]
    course = [" | ".join(["", DATA[variant.split("_", 1)[0]], LABELS[variant.split("_", 1)[1]], str(seed),
                          *(str(c["valid_errors"].get(str(e), "–")) for e in COURSE_EPOCHS),
                          ", ".join(map(str, c["takeover_epochs"])) or "none",
                          *("–" if c[f"{k}_last10"] is None else str(c[f"{k}_last10"]) for k in ("g_fm", "g_ld")),
                          ""]).strip()
              for variant in VARIANTS for seed in record["seeds"]
              if (c := res.get("courses", {}).get(f"{variant}-seed{seed}"))]
    course_table = f"""
Course of each GAN run (from its metrics.jsonl, `training_course`): validation errors at epochs
{", ".join(map(str, COURSE_EPOCHS))}; the epochs in which the discriminator took over (its mean loss over the epoch
below {TAKEOVER}); the generator's feature-matching loss and LD hinge (nats above ε, on the iterations that apply
it), means over the last 10 epochs:

| data | method | seed | {" | ".join(f"valid @ {e}" for e in COURSE_EPOCHS)} | D takeover (epochs) | g_fm | g_ld |
|---|---|---|{"---|" * len(COURSE_EPOCHS)}---|---|---|
{chr(10).join(course)}
""" if course else ""
    eps = next((r["epsilon"] for r in res["runs"] if "epsilon" in r), "–")
    chk = res.get("ld_direction_check")
    check = (f"\nLD direction check (`ld_direction_check`: {chk['steps']} Adam steps, lr 1e-3, of the hinge LD on the "
             f"pixels of {chk['images']} real training images, PixelCNN frozen): mean log p {chk['mean_logp_start']} "
             f"-> {chk['mean_logp_end']}, mean pixel change {chk['mean_abs_pixel_change']}, every image at or below "
             f"epsilon after {chk['steps_until_all_below_epsilon']} Adam step(s).\n") if chk else ""
    return f"""# Complement-GAN semi-supervised classification (thesis Y Tables 3.1 / 3.2 protocol)

{{header}}Test errors out of 10,000 of the discriminator selected on the validation images, mean ± std over seeds
{record['seeds']} (each seed redraws the class-balanced labeled subset); {res['epochs']} epochs of 500 iterations
(the reference trains MNIST for 2,000 epochs: this is a CPU budget), the reference optimiser settings; max log-p of
1,000 generated samples under the PixelCNN trained on the training images ({res.get('pixelcnn', '')}).

| data | method | test errors | thesis | max log-p (generated) | r_real | r_gen | s / epoch | seeds |
|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Per run (best epoch: the validation-selected one; share above ε: of the 1,000 generated samples, the share whose
log-p is above the runs' LD threshold ε = {eps}, their `ld_quantile`-th percentile of the first {EPSILON_IMAGES:,}
training images' log-p):

| data | method | seed | test errors | valid errors | best epoch | max log-p (generated) | share above ε |
|---|---|---|---|---|---|---|---|
{chr(10).join(per_run)}
{course_table}{check}
{reading(page_name(res['epochs']))}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variants", nargs="+", default=[v for v in VARIANTS if v != "mnist_fm_ldx100"],
                    choices=list(VARIANTS), help="default: every variant of the table except mnist_fm_ldx100")
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    ap.add_argument("--pixelcnn-epochs", type=int, default=1)
    ap.add_argument("--pixelcnn-blocks", type=int, default=2, help="gated blocks per stream (the preset has 4; "
                    "2 halves the density model's cost inside FM+LD training on CPU)")
    result_args(ap, [0, 1, 2], runs="runs/bench_gan_ssl")
    args = ap.parse_args()
    if args.render_only:
        print(render(page_name(args.epochs), markdown))
        return
    sweep = Sweep.from_args(args)
    runs = sweep.results(job(variant, seed, args) for seed in args.seeds  # collect: every kept run
                         for variant in (list(VARIANTS) if args.collect else args.variants))
    if args.train_only:
        return
    dens = Path(args.runs) / "pixelcnn-mnist" / "summary.json"
    pix = json.loads(dens.read_text()) if dens.exists() else {}
    pix_desc = (f"{pix['epochs']} epoch(s), {pix.get('n_blocks', '?')} gated blocks per stream, test "
                f"{pix['test_bits_per_dim']} bits/dim, 10th percentile of the first {pix['percentile_images']:,} "
                f"training images' log-p {pix['train_logp_percentiles']['10']}") if pix else "none trained"
    check = ld_direction_check(dens.parent, float(pix["train_logp_percentiles"]["10"])) if pix else None
    dirs = {f"{r['variant']}-seed{r['seed']}": Path(args.runs) / job(r["variant"], r["seed"], args).name
            for r in runs if not r["variant"].endswith("supervised")}  # a supervised run's loss_d is its NLL
    courses = {k: training_course(d) for k, d in dirs.items() if (d / "metrics.jsonl").exists()}
    print(write_results(page_name(args.epochs), {"epochs": args.epochs, "runs": runs, "pixelcnn": pix_desc,
                                                 "ld_direction_check": check, "courses": courses},
                        markdown, seeds=args.seeds, machine=sweep.machine()))


if __name__ == "__main__":
    main()
