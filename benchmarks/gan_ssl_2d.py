"""The 2-D case study of complement-GAN SSL (thesis Y §3.1.4, Figs. 3.3-3.5; spec complement-gan.md §5.1);
records docs/results/gan_ssl_2d.{md,json,png}.

    python -m benchmarks.gan_ssl_2d [--seeds 0 1 2 3] [--steps 3000]

Two circles and four spins, 3 labeled points per class; the discriminator trained supervised only, against the
explicit complement generator, against a perfect generator (fresh data) and against a feature-matching GAN
generator. Claims (spec §5.1): S1 complement - supervised >= 0.15 accuracy on both datasets; S2 |perfect -
supervised| <= 0.05 (Proposition 1); S3 with the complement generator r_real and r_gen >= 0.9 (Assumption 1).
The figure shows the class regions, the "fake" region (max_k l_k < 0, grey) and the generated points for the
supervised, feature-matching and complement discriminators (first seed).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.common import RESULTS, mean_std, reading, render, result_args, write_results
from genfeat.data.synthetic2d import DATASETS, ComplementSampler, PerfectSampler, make_toy
from genfeat.models.gan_ssl.toy2d import GENERATORS
from genfeat.paradigms.complement_gan import evaluate_toy, generated_points, train_toy

NAME = "gan_ssl_2d"


def sampler_for(kind: str, data, name: str, seed: int):
    if kind == "complement":
        return ComplementSampler(data.x_unl, seed=seed)
    if kind == "perfect":
        return PerfectSampler(name, seed=seed + 1000)
    return None


def plot(models: dict[tuple[str, str], Any], datas: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    kinds = ["supervised", "fm", "complement"]
    titles = {"supervised": "supervised only", "fm": "feature matching", "complement": "complement generator"}
    fig, axes = plt.subplots(len(datas), len(kinds), figsize=(4 * len(kinds), 4 * len(datas)))
    for r, (name, data) in enumerate(datas.items()):
        lo, hi = data.x_unl.min(0) - 0.4, data.x_unl.max(0) + 0.4
        gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 250), np.linspace(lo[1], hi[1], 250))
        grid = torch.from_numpy(np.stack([gx.ravel(), gy.ravel()], 1).astype(np.float32))
        for c, kind in enumerate(kinds):
            ax, res = axes[r, c], models[(name, kind)]
            with torch.no_grad():
                logits = res.disc(grid)
            cls = logits.argmax(-1).numpy().reshape(gx.shape)
            fake = (logits.max(-1).values < 0).numpy().reshape(gx.shape)
            colours = ListedColormap([plt.cm.tab10(k) for k in range(data.n_classes)])  # as the points
            ax.contourf(gx, gy, cls, levels=np.arange(data.n_classes + 1) - 0.5, cmap=colours, alpha=0.25)
            ax.contour(gx, gy, cls, levels=np.arange(data.n_classes) + 0.5, colors="k", linewidths=0.8)
            ax.contourf(gx, gy, fake.astype(float), levels=[0.5, 1.5], colors="0.35", alpha=0.35)
            ax.scatter(*data.x_unl.T, s=2, c=data.y_unl, cmap="tab10", vmin=0, vmax=9)
            xg = generated_points(res, 300)
            if xg is not None:
                ax.scatter(*xg.T, s=6, marker="x", c="k", linewidths=0.6, label="generated")
            ax.scatter(*data.x_lab.T, s=90, c=data.y_lab, cmap="tab10", vmin=0, vmax=9, edgecolors="k",
                       marker="*", label="labeled")
            acc = evaluate_toy(res, data)["accuracy"]
            ax.set_title(f"{name}: {titles[kind]} (acc {acc:.2f})", fontsize=10)
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle("class regions (colours, boundaries in black), 'fake' region max_k l_k < 0 (grey), "
                 "generated points (x), labeled points (stars)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    rows = []
    for name in res["datasets"]:
        for kind in GENERATORS:
            runs = [r for r in res["runs"] if r["dataset"] == name and r["generator"] == kind]

            def ms(k, runs=runs):
                return mean_std([r[k] for r in runs if k in r], 3)
            per_seed = ", ".join(f"{r['accuracy']:.2f}" for r in runs)
            rows.append(f"| {name} | {kind} | {ms('accuracy')} | {ms('r_real')} | {ms('r_gen')} | {per_seed} |")
    claims = "\n".join(f"- {c}" for c in res["claims"])
    return f"""# Complement-GAN 2-D case study (thesis Y §3.1.4)

{{header}}3 labeled points per class; discriminator MLP 2→{res['hidden']}→{res['hidden']}→K with the fake logit fixed at
0, {res['steps']} Adam steps, each on all labeled points, 128 unlabeled and 128 generated points (λ_u = 0.5, no
conditional entropy); seeds {record['seeds']} (each seed redraws the data, the labeled points and the
initialisation). r_real: share of test points with max_k l_k > 0 (Assumption A3); r_gen: share of generated points
with max_k l_k < 0 (A2).

| dataset | generator | test accuracy | r_real | r_gen | per seed |
|---|---|---|---|---|---|
{chr(10).join(rows)}

Spec §5.1 claims:

{claims}

![decision regions](gan_ssl_2d.png)

{reading(NAME)}
"""


def check(runs: list[dict[str, Any]], datasets: list[str]) -> list[str]:
    def m(name, kind, key):
        return statistics.mean(r[key] for r in runs if r["dataset"] == name and r["generator"] == kind)

    out = []
    for name in datasets:
        gain = m(name, "complement", "accuracy") - m(name, "supervised", "accuracy")
        out.append(f"S1 ({name}): complement - supervised = {gain:+.3f} (≥ 0.15: {'holds' if gain >= 0.15 else 'no'})")
        diff = m(name, "perfect", "accuracy") - m(name, "supervised", "accuracy")
        out.append(f"S2 ({name}): perfect - supervised = {diff:+.3f} (|·| ≤ 0.05: "
                   f"{'holds' if abs(diff) <= 0.05 else 'no'})")
        rr, rg = m(name, "complement", "r_real"), m(name, "complement", "r_gen")
        out.append(f"S3 ({name}): r_real {rr:.3f}, r_gen {rg:.3f} (both ≥ 0.9: "
                   f"{'holds' if min(rr, rg) >= 0.9 else 'no'})")
        fm = m(name, "fm", "accuracy") - m(name, "supervised", "accuracy")
        out.append(f"FM ({name}): feature matching - supervised = {fm:+.3f} (reported, not a claim)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--hidden", type=int, default=64)
    result_args(ap, [0, 1, 2, 3])
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    runs, keep, datas = [], {}, {}
    for seed in args.seeds:
        for name in DATASETS:
            data = make_toy(name, seed=seed)
            for kind in GENERATORS:
                res = train_toy(data, kind, sampler_for(kind, data, name, seed), steps=args.steps,
                                hidden=args.hidden, seed=seed)
                row = {"dataset": name, "generator": kind, "seed": seed, **evaluate_toy(res, data)}
                print(row, flush=True)
                runs.append(row)
                if seed == args.seeds[0]:
                    keep[(name, kind)], datas[name] = res, data
    RESULTS.mkdir(parents=True, exist_ok=True)
    plot(keep, datas, RESULTS / f"{NAME}.png")
    print(write_results(NAME, {"datasets": list(DATASETS), "steps": args.steps, "hidden": args.hidden,
                               "runs": runs, "claims": check(runs, list(DATASETS))},
                        markdown, seeds=args.seeds))


if __name__ == "__main__":
    main()
