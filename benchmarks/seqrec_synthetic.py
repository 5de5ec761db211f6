"""The small-scale reproduction of spec sequential-recommendation.md §11 on the two synthetic worlds with known
next-item distributions; records docs/results/seqrec_synthetic.{md,json}.

    python -m benchmarks.seqrec_synthetic [--seeds 0 1 2] [--epochs 10] [--runs runs/bench_seqrec_synthetic]
    python -m benchmarks.seqrec_synthetic --diagnose      # the world-B GRU4Rec diagnosis, into the recorded JSON

Each run is `genfeat run seqrec --data.dataset synthetic:A|B:SEED ...` through the sweep harness (kept under
--runs, resumable); the truth columns read each run's kept weights.

World A never repeats an item, world B repeats one of the last 5 distinct items half of the time. Tiny SASRec
(d=32, 2 layers, 2 heads, history 20, dropout 0.2) and GRU4Rec (d=32); heads Softmax and Softmax + C with every
seed, Softmax + CLR (rings 5/20/50), Multi-Softmax (K=3, max-pooled) and RepeatNet with the first seed. Adam lr
1e-3, batch 128, `--epochs` epochs, best validation NDCG@10 kept. Reported on the validation users: NDCG@10 and
Hit@10 against the sampled targets, the cross-entropy against the *true* distribution, and the history mass
(probability on items of the history; truth 0 in A and 0.5 in B), with the oracle (the true distribution) as
the upper bound.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from typing import Any

import numpy as np
import torch

from benchmarks.common import RESULTS, mean_std, reading, render, result_args, write_results
from benchmarks.sweep import Job, Sweep
from genfeat.data.seqrec_synthetic import synthetic_world
from genfeat.heads.config import HeadConfig, named_head
from genfeat.metrics.ranking import full_ranking_metrics, history_mass
from genfeat.models.seqrec import SeqRecConfig, build_seqrec
from genfeat.registry import RECIPES
from genfeat.train.checkpoint import WEIGHTS, load_model_weights

NAME = "seqrec_synthetic"
ALL_SEEDS = ["softmax", "c"]
ONE_SEED = ["clr", "mos", "repeatnet"]
# the rows: Table 2.7's heads with the rings scaled to this world's 200 items
ROWS: dict[str, HeadConfig] = {
    "softmax": named_head("softmax_facet"), "c": named_head("c"),
    "clr": dataclasses.replace(named_head("clr20,100,500"), reranker_sizes=(5, 20, 50)), "mos": named_head("mos3-max")}
LABELS = {"softmax": "Softmax", "c": "Softmax + C", "clr": "Softmax + CLR (5/20/50)", "mos": "Multi-Softmax (K=3)",
          "repeatnet": "RepeatNet"}


def config(encoder: str, head: str, seed: int, epochs: int, world: str, data_seed: int) -> Any:
    if head == "repeatnet":
        model = SeqRecConfig(encoder="repeatnet", d=32, max_len=20, dropout=0.5)
    else:
        model = SeqRecConfig(encoder=encoder, head=ROWS[head], d=32, max_len=20,
                             n_layers=2, n_heads=2, d_inner=128, gru_hidden=64,
                             dropout=0.2 if encoder == "sasrec" else 0.3, attn_dropout=0.2)
    base = RECIPES["seqrec"].config_cls()
    return dataclasses.replace(base, seed=seed, epochs=epochs, model=model,
                               data=dataclasses.replace(base.data, batch_size=128,
                                                        dataset=f"synthetic:{world}:{data_seed}"),
                               train=dataclasses.replace(base.train, patience=0, log_every=50))


def job(world: str, encoder: str, head: str, seed: int, args, variant: str = "", **model_change: Any) -> Job:
    cfg = config(encoder, head, seed, args.epochs, world, args.data_seed)
    if model_change:
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, **model_change))
    tail = f"-{variant}" if variant else ""
    return Job(f"{world}{args.data_seed}-{encoder}-{head}{tail}-seed{seed}-epochs{args.epochs}",
               {"world": world, "encoder": encoder, "head": head, "seed": seed}, "seqrec", cfg,
               group=f"{world}-{encoder}-{head}{tail}")


def kept_model(sweep: Sweep, j: Job, data) -> torch.nn.Module:
    """The run's kept weights in its network, in eval mode."""
    model = build_seqrec(j.cfg.model, data.n_items)
    load_model_weights(model, sweep.path(j) / WEIGHTS)
    return model.eval()


@torch.no_grad()
def truth_metrics(model: torch.nn.Module, data, truth: np.ndarray) -> dict[str, float]:
    ex = data.valid
    hist, length = torch.from_numpy(ex.history), torch.from_numpy(ex.length)
    logp = model.log_probs(hist, length).double()
    p = torch.from_numpy(truth)
    ce = -(p * logp.clamp_min(-1e4)).sum(1)  # 0·(-inf) never occurs: the truth is 0 on the padding id only
    return {"ce_truth": float(ce.mean()), "history_mass": float(history_mass(logp, hist).mean())}


def oracle(data, truth: np.ndarray, draws: int = 20) -> dict[str, float]:
    """Metrics of ranking by the true distribution. It is uniform over the unconsumed items of a category, so
    its ties are broken at random (mean over `draws` tie-breaks; pessimistic ties would rank every target last
    among its equals)."""
    ex = data.valid
    rng = np.random.default_rng(0)
    target = torch.from_numpy(ex.target)
    runs = [full_ranking_metrics(torch.from_numpy(truth * (1 + 1e-6 * rng.random(truth.shape))), target)
            for _ in range(draws)]
    m = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
    hm = np.mean([truth[n, np.unique(h[h > 0])].sum() for n, h in enumerate(ex.history)])
    ent = float(-(truth * np.log(np.maximum(truth, 1e-300))).sum(1).mean())
    return {"ndcg@10": m["ndcg@10"], "hit@10": m["hit@10"], "ce_truth": ent, "history_mass": float(hm)}


def diagnose(sweep: Sweep, args, seed: int = 0) -> list[dict[str, Any]]:
    """World B, GRU4Rec: Softmax vs C with the default (assign, encoder init), add merge, identity init; NDCG@10
    split by whether the target is already in the history (None until every run is trained)."""
    from genfeat.metrics.ranking import ranking_metrics_from_ranks, target_ranks

    data, _ = synthetic_world(f"synthetic:B:{args.data_seed}")
    ex = data.valid
    hist, length, tgt = (torch.from_numpy(a) for a in (ex.history, ex.length, ex.target))
    repeat = ((hist == tgt[:, None]) & (hist > 0)).any(1)
    variants = [("softmax", "softmax", "", {}), ("c (assign, encoder init)", "c", "", {}),
                ("c, merge add", "c", "merge-add", {"head": dataclasses.replace(ROWS["c"], merge="add")}),
                ("c, identity init", "c", "identity-init", {"head_init": "identity"})]
    jobs = [job("B", "gru4rec", head, seed, args, variant, **change) for _, head, variant, change in variants]
    recs = sweep.results(jobs)
    if len(recs) < len(jobs):
        return None
    rows = []
    for (label, *_), j, s in zip(variants, jobs, recs, strict=True):
        with torch.no_grad():
            lp = kept_model(sweep, j, data).log_probs(hist, length)
            ndcg = ranking_metrics_from_ranks(target_ranks(lp, tgt))["ndcg@10"]
        rows.append({"variant": label, "ndcg@10": round(float(ndcg.mean()), 4),
                     "repeat_targets": round(float(ndcg[repeat].mean()), 4),
                     "new_targets": round(float(ndcg[~repeat].mean()), 4), "best_epoch": s["best_epoch"]})
        print(rows[-1], flush=True)
    return rows


def ms4(v: list[float]) -> str:
    return mean_std(v, 4)


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    parts = []
    for world in ("A", "B"):
        o = res["oracle"][world]
        rows = [f"| oracle (true distribution) | – | {o['ndcg@10']:.4f} | {o['hit@10']:.4f} | {o['ce_truth']:.4f} "
                f"(entropy) | {o['history_mass']:.3f} | – |"]
        for enc in ("sasrec", "gru4rec", "repeatnet"):
            for head in [*ALL_SEEDS, *ONE_SEED]:
                runs = [r for r in res["runs"] if r["world"] == world and r["encoder"] == enc and r["head"] == head]
                if not runs:
                    continue
                def col(k, runs=runs):
                    return ms4([r[k] for r in runs])
                name = "RepeatNet" if enc == "repeatnet" else f"{'SASRec' if enc == 'sasrec' else 'GRU4Rec'} + " \
                                                              f"{LABELS[head]}"
                rows.append(f"| {name} | {len(runs)} | {col('valid_ndcg@10')} | {col('valid_hit@10')} | "
                            f"{col('ce_truth')} | {col('history_mass')} | "
                            f"{statistics.mean(r['epoch_train_s'] for r in runs):.1f} |")
        desc = ("never repeats" if world == "A" else "repeats one of the last 5 distinct items with probability 0.5")
        parts.append(f"## World {world} ({desc})\n\n| model | seeds | valid NDCG@10 | valid Hit@10 | CE to truth | "
                     f"history mass | s / epoch |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows))
    claims = "\n".join(f"- {c}" for c in res.get("claims", []))
    diag = ""
    if res.get("diagnosis"):
        diag = ("World B, GRU4Rec, seed 0, NDCG@10 by target type (`python -m benchmarks.seqrec_synthetic "
                "--diagnose`):\n\n| variant | NDCG@10 | repeat targets | new targets | best epoch |\n"
                "|---|---|---|---|---|\n"
                + "\n".join(f"| {r['variant']} | {r['ndcg@10']:.4f} | {r['repeat_targets']:.4f} | "
                            f"{r['new_targets']:.4f} | {r['best_epoch']:.0f} |" for r in res["diagnosis"]) + "\n\n")
    return f"""# Sequential recommendation on the synthetic worlds (spec §11)

{{header}}2,000 users, 300 items in 30 categories, sequences of 10-20 items; leave-one-out split, full ranking over
all items with history items as candidates, pessimistic ties. Tiny SASRec (d=32, 2 layers, 2 heads, history 20,
dropout 0.2), GRU4Rec (d=32, GRU 64, dropout 0.3) and RepeatNet (d=32), Adam lr 1e-3, batch 128,
{res['epochs']} epochs, the best validation NDCG@10 kept; heads replace the same encoder's output layer (merge
mode `assign`, read-out at the last real item). Mean ± std over seeds {record['seeds']} where 3 seeds are shown.

{chr(10).join(parts)}

Spec §11 claims (checked from the numbers above by the benchmark):

{claims}

{diag}{reading(NAME)}
"""


def check_claims(runs: list[dict[str, Any]], orc: dict[str, Any]) -> list[str]:
    def m(world, enc, head, key):
        v = [r[key] for r in runs if r["world"] == world and r["encoder"] == enc and r["head"] == head]
        return statistics.mean(v) if v else float("nan")

    out = []
    for enc in ("sasrec", "gru4rec"):
        s_a, c_a = m("A", enc, "softmax", "valid_ndcg@10"), m("A", enc, "c", "valid_ndcg@10")
        hm_c, hm_s = m("A", enc, "c", "history_mass"), m("A", enc, "softmax", "history_mass")
        ok = c_a > s_a and hm_c <= 0.05 and hm_s > hm_c
        out.append(f"1 ({enc}, world A): C NDCG@10 {c_a:.4f} vs Softmax {s_a:.4f}; history mass C {hm_c:.3f} "
                   f"(≤ 0.05?) vs Softmax {hm_s:.3f} — {'holds' if ok else 'does not hold'}")
        s_b, c_b, hm_b = m("B", enc, "softmax", "valid_ndcg@10"), m("B", enc, "c", "valid_ndcg@10"), \
            m("B", enc, "c", "history_mass")
        ok = c_b > s_b and abs(hm_b - orc["B"]["history_mass"]) <= 0.1
        out.append(f"2 ({enc}, world B): C NDCG@10 {c_b:.4f} vs Softmax {s_b:.4f}; C history mass {hm_b:.3f} vs "
                   f"true {orc['B']['history_mass']:.3f} (±0.1) — {'holds' if ok else 'does not hold'}")
        for w in ("A", "B"):
            ce_s, ce_c, ce_clr = (m(w, enc, h, "ce_truth") for h in ("softmax", "c", "clr"))
            ok = ce_c < ce_s and ce_clr <= ce_c + 0.02
            out.append(f"3 ({enc}, world {w}): CE to truth C {ce_c:.4f} < Softmax {ce_s:.4f}, CLR {ce_clr:.4f} ≤ C + "
                       f"0.02 — {'holds' if ok else 'does not hold'}")
    for w in ("A", "B"):
        out.append(f"4 (world {w}): RepeatNet NDCG@10 {m(w, 'repeatnet', 'repeatnet', 'valid_ndcg@10'):.4f} "
                   f"(SASRec + C {m(w, 'sasrec', 'c', 'valid_ndcg@10'):.4f}), history mass = P(repeat) "
                   f"{m(w, 'repeatnet', 'repeatnet', 'history_mass'):.3f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    result_args(ap, [0, 1, 2], runs="runs/bench_seqrec_synthetic")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--oracle-only", action="store_true", help="recompute the oracle rows in the recorded JSON")
    ap.add_argument("--diagnose", action="store_true",
                    help="add the world-B GRU4Rec diagnosis (merge / init variants) to the recorded JSON")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    sweep = Sweep.from_args(args)
    if args.diagnose:
        path = RESULTS / f"{NAME}.json"
        record = json.loads(path.read_text())
        args.epochs, args.data_seed = record["results"]["epochs"], record["results"]["data_seed"]
        if (rows := diagnose(sweep, args)) is None or args.train_only:
            return
        record["results"]["diagnosis"] = rows
        record["diagnosis_command"] = "python -m benchmarks.seqrec_synthetic --diagnose"
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(render(NAME, markdown, record))
        return
    if args.oracle_only:
        path = RESULTS / f"{NAME}.json"
        record = json.loads(path.read_text())
        res = record["results"]
        for world in ("A", "B"):
            res["oracle"][world] = oracle(*synthetic_world(f"synthetic:{world}:{res['data_seed']}"))
        res["claims"] = check_claims(res["runs"], res["oracle"])
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(render(NAME, markdown, record))
        return
    runs, orc, missing = [], {}, 0
    for world in ("A", "B"):
        data, truth = synthetic_world(f"synthetic:{world}:{args.data_seed}")
        print(data.summary(), flush=True)
        orc[world] = oracle(data, truth)
        rows = [(enc, h, s) for enc in ("sasrec", "gru4rec") for h in ALL_SEEDS for s in args.seeds]
        rows += [(enc, h, args.seeds[0]) for enc in ("sasrec", "gru4rec") for h in ONE_SEED if h != "repeatnet"]
        rows += [("repeatnet", "repeatnet", args.seeds[0])]
        jobs = {job(world, enc, head, seed, args): (enc, head, seed) for enc, head, seed in rows}
        for j, (enc, head, seed) in jobs.items():
            if (s := sweep.result(j)) is None:
                missing += 1
                continue
            row = {"world": world, "encoder": enc, "head": head, "seed": seed, "params": s["params"],
                   "valid_ndcg@10": s["valid_ndcg@10"], "valid_hit@10": s["valid_hit@10"],
                   "best_epoch": s["best_epoch"], "epoch_train_s": s["epoch_train_s"],
                   **truth_metrics(kept_model(sweep, j, data), data, truth)}
            print(row, flush=True)
            runs.append(row)
    if args.train_only:
        return
    if missing:
        print(f"{missing} runs are not finished (another worker's share, or --collect): nothing recorded")
        return
    results = {"epochs": args.epochs, "data_seed": args.data_seed, "oracle": orc, "runs": runs,
               "claims": check_claims(runs, orc)}
    print(write_results(NAME, results, markdown, seeds=args.seeds, machine=sweep.machine()))


if __name__ == "__main__":
    main()
