"""Transformer-XL vs the vanilla Transformer on real PTB, equal parameters and equal training budget
(thesis Y Tables 2.5/2.6 direction; spec §6.3 D1, D2).

For each seed: train `transformer_xl --preset ptb` (relative positions, memory 64) and `--preset
ptb_vanilla` (absolute positions, no memory, d_inner raised to equalise parameters) for the same
number of steps on the same data order; evaluate on valid/test:
  TXL: memory = training memory (64) and longer memories (128, 256), same_length off;
  vanilla: non-overlapping segments and a sliding window (stride 1 on a test prefix, the thesis protocol).

    python -m benchmarks.transformer_xl_ptb [--seeds 0 1 2] [--steps 1500] [--sliding-tokens 20000]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, command, mean_std, render, write_results
from genfeat.analysis.recl import context_losses, recl
from genfeat.config import dump_yaml, override, to_dict
from genfeat.data.lm_data import prepare_lm_data
from genfeat.recipes import transformer_xl as R
from genfeat.recipes.lm import resolve
from genfeat.tasks.language_modeling import lm_scores
from genfeat.train.checkpoint import load_model_weights


def ppl_of(lm, tokens, cfg) -> float:
    """Perplexity of `tokens` under the run's evaluation setting `cfg.eval` (memory or sliding window)."""
    return lm_scores(*R.txl_nll(lm, tokens, cfg, "test"), per_char=False)["ppl"]


def train_and_eval(preset: str, seed: int, steps: int, sliding_tokens: int, keep: Path) -> dict[str, Any]:
    cfg = override(R.PRESETS[preset](), {"seed": seed, "train.max_steps": steps,
                                         "train.eval_every": max(1, steps // 3)})
    run_dir = keep / f"{preset}-seed{seed}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    t = time.perf_counter()
    summary = R.run(cfg, run_dir)
    wall = time.perf_counter() - t
    (run_dir / "config.yaml").write_text(dump_yaml({"recipe": "transformer_xl", "preset": preset,
                                                    "config": to_dict(cfg)}))
    tok, streams = prepare_lm_data(cfg.data)
    cfg = resolve(cfg, tok)
    lm = R.TXL.build(cfg.model)
    load_model_weights(lm, run_dir / "model.safetensors")
    lm.eval()
    out = {"params": summary["params"], "train_wall_s": round(wall, 1),
           "train_tokens_per_s": summary["train_tokens_per_s"], "valid_ppl": summary["valid_ppl"],
           "test_ppl": summary["test_ppl"]}
    if cfg.model.mem_len > 0:
        for mem in (cfg.model.mem_len, 2 * cfg.model.mem_len, 4 * cfg.model.mem_len):
            ecfg = dataclasses.replace(cfg, eval=dataclasses.replace(cfg.eval, mem_len=mem))
            out[f"test_ppl_mem{mem}"] = round(ppl_of(lm, streams["test"], ecfg), 3)
    else:
        prefix = streams["test"][: sliding_tokens + 1]
        seg = ppl_of(lm, prefix, cfg)
        ecfg = dataclasses.replace(cfg, eval=dataclasses.replace(cfg.eval, stride=1))
        slide = ppl_of(lm, prefix, ecfg)
        out[f"test{sliding_tokens}_ppl_segments"] = round(seg, 3)
        out[f"test{sliding_tokens}_ppl_sliding1"] = round(slide, 3)
    print(preset, seed, out, flush=True)
    return out


def load_run(keep: Path, preset: str, seed: int):
    """(resolved config, model with the run's best weights in eval mode, token streams) of a kept run."""
    cfg = R.PRESETS[preset]()
    tok, streams = prepare_lm_data(cfg.data)
    cfg = resolve(cfg, tok)
    lm = R.TXL.build(cfg.model).eval()
    load_model_weights(lm, keep / f"{preset}-seed{seed}" / "model.safetensors")
    return cfg, lm, streams


def group_recl(keep: Path, seed: int, contexts: tuple[int, ...] = tuple(range(16, 257, 16)),
               n_positions: int = 400) -> dict[str, Any]:
    """RECL (thesis Y §2.1.4) of the group {TXL, vanilla} trained with `seed`, on PTB valid, exactly c tokens
    of context per prediction (windows, no memory carried in)."""
    import numpy as np

    losses = {}
    for preset in ("ptb", "ptb_vanilla"):
        cfg, lm, streams = load_run(keep, preset, seed)
        tokens = streams["valid"]
        positions = np.linspace(max(contexts), len(tokens) - 1, n_positions).astype(np.int64)
        cap = cfg.model.tgt_len if cfg.model.pos_enc == "absolute" else None  # vanilla: usable context = L
        losses[preset] = context_losses(lm, tokens, list(contexts), positions, max_context=cap)
    out = {"contexts": list(contexts), "positions": n_positions, "seed": seed, "vanilla_context_cap": 64}
    for r in (0.1, 1.0):
        res = recl(losses, list(contexts), r=r)
        out[f"r={r}"] = {k: {"recl": v.recl, "lower_bound": v.lower_bound} for k, v in res.items()}
    print("RECL", out, flush=True)
    return out


def fragmentation(keep: Path, seed: int, n_tokens: int = 20_000) -> dict[str, Any]:
    """Spec §6.3 D3: mean test loss by position within a segment (first 8 vs last 8 of 64), evaluated as
    each model is (TXL: segments with its memory carried; vanilla: independent segments)."""
    import numpy as np
    import torch

    from genfeat.data.streams import OrderedSegments
    from genfeat.losses import nll

    out = {}
    for preset in ("ptb", "ptb_vanilla"):
        cfg, lm, streams = load_run(keep, preset, seed)
        L, sums, mems = cfg.model.tgt_len, torch.zeros(cfg.model.tgt_len), None
        n = 0
        with torch.no_grad():
            for x, y in OrderedSegments(np.asarray(streams["test"][: n_tokens + 1]), 10, L, loop=False):
                if x.size(1) < L:
                    break
                o, bb = lm(x, **({"mems": mems} if mems is not None else {}))
                mems = bb.mems
                sums += nll(o, y, reduction="none").sum(0)
                n += x.size(0)
        per_pos = (sums / n).tolist()
        out[preset] = {"first8": round(sum(per_pos[:8]) / 8, 4), "last8": round(sum(per_pos[-8:]) / 8, 4)}
    print("fragmentation", out, flush=True)
    return out


def memory_sweep(keep: Path, seed: int) -> list[dict[str, Any]]:
    """D2 investigation: TXL test ppl for evaluation memory x same_length x clamp_len (clamp at the largest
    distance seen in training, M + L - 1 = 127)."""
    cfg, lm, streams = load_run(keep, "ptb", seed)
    rows = []
    for same in (False, True):
        for mem in (64, 128, 256):
            for clamp in (-1, 127) if mem > 64 else (-1,):
                e = dataclasses.replace(cfg.eval, mem_len=mem, same_length=same, clamp_len=clamp)
                r = ppl_of(lm, streams["test"], dataclasses.replace(cfg, eval=e))
                rows.append({"mem_len": mem, "same_length": same, "clamp_len": clamp, "test_ppl": round(r, 3)})
                print("sweep", rows[-1], flush=True)
    return rows




def markdown(record: dict[str, Any]) -> str:
    res, seeds = record["results"], record["seeds"]
    txl, van = res["transformer_xl"], res["vanilla"]
    keys_txl = [k for k in txl[0] if k.startswith("test_ppl_mem")]
    keys_van = [k for k in van[0] if k.startswith("test") and "_ppl_" in k]
    n_slide = res["sliding_tokens"]

    def fmt(v: dict[str, Any]) -> str:
        return f"{v['recl']}{'+' if v['lower_bound'] else ''}"

    frag = res.get("fragmentation", {})
    frag_rows = "\n".join(f"| {name} | {frag[p]['first8']:.3f} | {frag[p]['last8']:.3f} | "
                          f"{frag[p]['first8'] - frag[p]['last8']:.3f} |"
                          for p, name in (("ptb", "Transformer-XL (memory)"), ("ptb_vanilla", "vanilla")) if p in frag)
    recl_rows = "\n".join(f"| {name} | {fmt(res['recl']['r=0.1'][p])} | {fmt(res['recl']['r=1.0'][p])} |"
                          for p, name in (("ptb", "Transformer-XL"), ("ptb_vanilla", "vanilla")))
    rows = [f"| Transformer-XL (relative positions, training memory = segment = 64) | {txl[0]['params']:,} | "
            f"{mean_std([r['valid_ppl'] for r in txl])} | {mean_std([r['test_ppl'] for r in txl])} |",
            f"| vanilla (absolute, no memory, non-overlapping segments) | {van[0]['params']:,} | "
            f"{mean_std([r['valid_ppl'] for r in van])} | {mean_std([r['test_ppl'] for r in van])} |"]
    mem_rows = "\n".join(f"| Transformer-XL, eval memory {k[12:]} | {mean_std([r[k] for r in txl])} |"
                         for k in keys_txl)
    slide_rows = "\n".join(f"| vanilla, {'sliding window stride 1' if 'sliding' in k else 'non-overlapping segments'}"
                           f" | {mean_std([r[k] for r in van])} |" for k in keys_van)
    sweep = ""
    if res.get("memory_sweep"):
        sweep_rows = "\n".join(f"| {r['mem_len']} | {r['same_length']} | "
                               f"{r['clamp_len'] if r['clamp_len'] > 0 else '-'} | {r['test_ppl']:.2f} |"
                               for r in res["memory_sweep"])
        sweep = (f"Investigating the evaluation memory (seed {res['recl']['seed']}; `same_length` as the thesis's "
                 "evaluation, `clamp_len` at the largest distance seen in training, 127):\n\n"
                 "| eval memory | same_length | clamp_len | test ppl |\n|---|---|---|---|\n" + sweep_rows + "\n\n")
    gap_ppl = statistics.mean(r["test_ppl"] for r in van) - statistics.mean(r["test_ppl"] for r in txl)
    mem_first = statistics.mean(r[keys_txl[0]] for r in txl)
    mem_last = statistics.mean(r[keys_txl[-1]] for r in txl)
    analysis = (f"RECL, fragmentation and the memory sweep: `{record['analysis_command']}` (from the kept runs).\n\n"
                if record.get("analysis_command") else "")
    return f"""# Transformer-XL vs vanilla Transformer on PTB (equal parameters, equal budget)

{{header}}{analysis}Presets `transformer_xl --preset ptb` and `--preset ptb_vanilla`: 4 layers, d=128, 4 heads × 32,
segment 64, batch 16 streams, {res['steps']} steps (AdamW lr 1e-3, cosine, clip 0.25), seeds {seeds}; the same data
order for both. Test perplexity with the best validation weights; mean ± std over seeds.

| model | parameters | valid ppl | test ppl |
|---|---|---|---|
{chr(10).join(rows)}

Evaluation memory (the thesis evaluates with a memory several times longer than in training):

| evaluation | test ppl |
|---|---|
{mem_rows}

{sweep}Vanilla evaluation protocol, on the first {n_slide:,} test tokens:

| evaluation | test ppl (prefix) |
|---|---|
{slide_rows}

RECL (relative effective context length, thesis Y §2.1.4) of the group {{Transformer-XL, vanilla}} (seed \
{res['recl']['seed']}) on {res['recl']['positions']} valid positions, contexts {res['recl']['contexts'][0]}..\
{res['recl']['contexts'][-1]} step {res['recl']['contexts'][1] - res['recl']['contexts'][0]}, exactly c tokens of \
context per prediction, the vanilla model's context capped at its training length 64 as in thesis Table 2.9
("+": still improving at the longest context):

| model | RECL r=0.1 | RECL r=1.0 |
|---|---|---|
{recl_rows}

Context fragmentation (spec §6.3 D3; seed {res['recl']['seed']}, first 20,000 test tokens): mean loss (nats) at
the first 8 vs the last 8 of the 64 positions of a segment, each model evaluated as above.

| model | first 8 positions | last 8 positions | gap |
|---|---|---|---|
{frag_rows}

Reading: Transformer-XL is better than the equal-size vanilla model by {gap_ppl:.1f} test ppl, the thesis direction
(D1). A longer evaluation memory does not help at this scale (memory 64 -> 256: {mem_first:.2f} -> {mem_last:.2f};
the thesis's D2 direction "non-increasing" is not reproduced with a 2M-parameter model trained for 1,500 steps with
memory 64; `same_length` and clamping at the largest trained distance reduce but do not remove the loss at memory 256,
see the sweep). For this vanilla model the sliding window is not better than non-overlapping segments: its loss depends
little on the position in the segment (table above), i.e. it makes little use of long context, which is also what
its RECL says.

Training time per model: Transformer-XL {statistics.mean([r['train_wall_s'] for r in txl]):.0f} s, vanilla
{statistics.mean([r['train_wall_s'] for r in van]):.0f} s (whole recipe run incl. evaluation; indicative only: some runs
shared the 2 cores with other work -- the per-run train_tokens_per_s in the JSON show which).
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--sliding-tokens", type=int, default=20000)
    ap.add_argument("--recl-positions", type=int, default=400)
    ap.add_argument("--runs", default="runs/bench_transformer_xl_ptb", help="where the trained runs are kept")
    ap.add_argument("--render-only", action="store_true")
    ap.add_argument("--analysis-only", action="store_true",
                    help="recompute RECL and the per-position losses from the kept runs, update the JSON")
    args = ap.parse_args()
    if args.render_only:
        print(render("transformer_xl_ptb", markdown))
        return
    if args.analysis_only:
        path = RESULTS / "transformer_xl_ptb.json"
        record = json.loads(path.read_text())
        keep, seed = Path(args.runs), record["seeds"][0]
        record["results"]["recl"] = group_recl(keep, seed, n_positions=args.recl_positions)
        record["results"]["fragmentation"] = fragmentation(keep, seed)
        record["results"]["memory_sweep"] = memory_sweep(keep, seed)
        record["analysis_command"] = command()
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(render("transformer_xl_ptb", markdown, record))
        return
    keep = Path(args.runs)
    txl = [train_and_eval("ptb", s, args.steps, args.sliding_tokens, keep) for s in args.seeds]
    van = [train_and_eval("ptb_vanilla", s, args.steps, args.sliding_tokens, keep) for s in args.seeds]
    results = {"steps": args.steps, "sliding_tokens": args.sliding_tokens, "transformer_xl": txl, "vanilla": van,
               "recl": group_recl(keep, args.seeds[0], n_positions=args.recl_positions),
               "fragmentation": fragmentation(keep, args.seeds[0]), "memory_sweep": memory_sweep(keep, args.seeds[0])}
    print(write_results("transformer_xl_ptb", results, markdown, seeds=args.seeds))


if __name__ == "__main__":
    main()
