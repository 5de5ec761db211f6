"""Transformer-XL vs the vanilla Transformer on real word-level text, equal parameters and equal training budget
(thesis Y Tables 2.5/2.6 direction; spec §6.3 D1, D2): PTB by default, or a longer-range corpus (`--corpus austen`,
`kjv`: contiguous books, thesis Y D2's setting where a longer memory should help).

For each seed: train `transformer_xl --preset ptb` (relative positions, memory 64, or `--mem M`: thesis Y trains with
a memory at least as long as the segment) and `--preset ptb_vanilla`
(absolute positions, no memory, d_inner raised to equalise parameters) on the corpus for the same number of steps on
the same data order; evaluate on valid/test:
  TXL: memory = training memory M and longer memories (2x, 4x, 8x), same_length off;
  vanilla: non-overlapping segments and a sliding window (stride 1 on a test prefix, the thesis protocol);
then RECL, per-position losses and an evaluation-memory sweep on the first seed's pair.

    python -m benchmarks.transformer_xl_ptb [--corpus ptb] [--seeds 0 1 2] [--steps 1500] [--sliding-tokens 20000]
    python -m benchmarks.transformer_xl_ptb --corpus austen --steps 3000 --train-only --only ptb   # one worker's share
    python -m benchmarks.transformer_xl_ptb --corpus austen --steps 3000 --collect                # evaluate, record

Each run is a recipe run kept in --runs by the sweep harness (resumable; `--train-only --only ptb | ptb_vanilla`
splits the work between workers); a run's evaluations are cached beside it (evals.json). Records
docs/results/transformer_xl_ptb.{md,json}, or transformer_xl_<corpus> for another corpus.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import statistics
from pathlib import Path
from typing import Any

from benchmarks.common import mean_std, reading, render, result_args, write_results
from benchmarks.sweep import Job, Sweep
from genfeat.analysis.recl import context_losses, recl
from genfeat.api import load
from genfeat.data.lm_data import prepare_lm_data
from genfeat.models.transformer_xl.evaluation import eval_nll
from genfeat.registry import RECIPES
from genfeat.tasks.language_modeling import lm_scores

PRESETS = ("ptb", "ptb_vanilla")  # Transformer-XL, and the vanilla model of equal parameters


def page_name(corpus: str, mem: int = 0) -> str:
    return f"transformer_xl_{corpus}" + (f"_mem{mem}" if mem else "")


VOCAB = 10_000  # another corpus keeps its most frequent words, as PTB's vocabulary does (the rest: <unk>)


def config(preset: str, corpus: str, seed: int = 0, steps: int | None = None, mem: int = 0) -> Any:
    """The preset on `corpus` (word level; a corpus other than PTB cut to its `VOCAB` most frequent words); with
    `steps`, that budget and three evaluations; with `mem`, Transformer-XL trains with that memory (the preset's
    M = L = 64 otherwise) and evaluates with twice it, as the preset does (the vanilla model has none)."""
    cfg = RECIPES["transformer_xl"].presets[preset]()
    if mem and cfg.model.mem_len:
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, mem_len=mem),
                                  eval=dataclasses.replace(cfg.eval, mem_len=2 * mem))
    data = dataclasses.replace(cfg.data, corpus=corpus, vocab_size=0 if corpus == "ptb" else VOCAB)
    cfg = dataclasses.replace(cfg, seed=seed, data=data)
    if steps:
        cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, max_steps=steps,
                                                                 eval_every=max(1, steps // 3)))
    return cfg


def job(preset: str, corpus: str, seed: int, steps: int, mem: int = 0) -> Job:
    cfg = config(preset, corpus, seed, steps, mem)
    suffix = f"-mem{cfg.model.mem_len}" if mem and cfg.model.mem_len else ""  # vanilla runs serve every memory
    return Job(f"{preset}-seed{seed}-steps{steps}{suffix}", {"model": preset, "seed": seed},
               "transformer_xl", cfg, group=preset)


def ppl_of(lm, tokens, cfg) -> float:
    """Perplexity of `tokens` under the run's evaluation setting `cfg.eval` (memory or sliding window)."""
    nll = eval_nll(lm, tokens, "test", cfg.eval, cfg.model.tgt_len, cfg.model.mem_len, cfg.data.eval_batch_size)
    return lm_scores(*nll, per_char=False)["ppl"]


@functools.cache
def load_run(run_dir: Path, preset: str, corpus: str, mem: int = 0):
    """(resolved config, model with the run's best weights in eval mode, token streams) of a finished run; loaded
    once per process (the evaluations, RECL, fragmentation and the sweep all read the first seed's pair)."""
    cfg = config(preset, corpus, mem=mem)
    _, streams = prepare_lm_data(cfg.data)
    lm, _ = load(run_dir)
    return cfg, lm, streams


def evaluate(run_dir: Path, preset: str, corpus: str, sliding_tokens: int, mem: int = 0) -> dict[str, float]:
    """TXL: test ppl with evaluation memory M, 2M, 4M, 8M; vanilla: test-prefix ppl on non-overlapping segments and
    with a stride-1 sliding window. Cached in the run directory (evals.json)."""
    cache = run_dir / "evals.json"
    done = json.loads(cache.read_text()) if cache.is_file() else {}
    if done.get("sliding_tokens") == sliding_tokens:
        return done["evals"]
    cfg, lm, streams = load_run(run_dir, preset, corpus, mem)
    out: dict[str, float] = {}
    if cfg.model.mem_len > 0:
        for mem in (cfg.model.mem_len * f for f in (1, 2, 4, 8)):
            ecfg = dataclasses.replace(cfg, eval=dataclasses.replace(cfg.eval, mem_len=mem))
            out[f"test_ppl_mem{mem}"] = round(ppl_of(lm, streams["test"], ecfg), 3)
    else:
        prefix = streams["test"][: sliding_tokens + 1]
        ecfg = dataclasses.replace(cfg, eval=dataclasses.replace(cfg.eval, stride=1))
        out[f"test{sliding_tokens}_ppl_segments"] = round(ppl_of(lm, prefix, cfg), 3)
        out[f"test{sliding_tokens}_ppl_sliding1"] = round(ppl_of(lm, prefix, ecfg), 3)
    cache.write_text(json.dumps({"sliding_tokens": sliding_tokens, "evals": out}) + "\n")
    print(run_dir.name, out, flush=True)
    return out


def group_recl(runs: dict[str, Path], corpus: str, seed: int, contexts: tuple[int, ...] = tuple(range(16, 257, 16)),
               n_positions: int = 400, mem: int = 0) -> dict[str, Any]:
    """RECL (thesis Y §2.1.4) of the group {TXL, vanilla} (`runs`: preset -> run directory, trained with `seed`) on
    the corpus's valid split, exactly c tokens of context per prediction (windows, no memory carried in)."""
    import numpy as np

    losses = {}
    for preset in PRESETS:
        cfg, lm, streams = load_run(runs[preset], preset, corpus, mem)
        tokens = streams["valid"]
        positions = np.linspace(max(contexts), len(tokens) - 1, n_positions).astype(np.int64)
        cap = cfg.model.tgt_len if cfg.model.pos_enc == "absolute" else None  # vanilla: usable context = L
        losses[preset] = context_losses(lm, tokens, list(contexts), positions, max_context=cap)
    out = {"contexts": list(contexts), "positions": n_positions, "seed": seed,
           "vanilla_context_cap": config("ptb_vanilla", corpus).model.tgt_len}
    for r in (0.1, 1.0):
        res = recl(losses, list(contexts), r=r)
        out[f"r={r}"] = {k: {"recl": v.recl, "lower_bound": v.lower_bound} for k, v in res.items()}
    print("RECL", out, flush=True)
    return out


def fragmentation(runs: dict[str, Path], corpus: str, n_tokens: int = 20_000, mem: int = 0) -> dict[str, Any]:
    """Spec §6.3 D3: mean test loss by position within a segment (first 8 vs last 8 of 64), evaluated as
    each model is (TXL: segments with its memory carried; vanilla: independent segments)."""
    import numpy as np
    import torch

    from genfeat.data.streams import OrderedSegments
    from genfeat.losses import nll

    out = {}
    for preset in PRESETS:
        cfg, lm, streams = load_run(runs[preset], preset, corpus, mem)
        L, sums, memory = cfg.model.tgt_len, torch.zeros(cfg.model.tgt_len), {}
        n = 0
        with torch.no_grad():
            for x, y in OrderedSegments(np.asarray(streams["test"][: n_tokens + 1]), 10, L, loop=False):
                if x.size(1) < L:
                    break
                o, bb = lm(x, **memory)
                memory = bb.carry()
                sums += nll(o, y, reduction="none").sum(0)
                n += x.size(0)
        per_pos = (sums / n).tolist()
        out[preset] = {"first8": round(sum(per_pos[:8]) / 8, 4), "last8": round(sum(per_pos[-8:]) / 8, 4)}
    print("fragmentation", out, flush=True)
    return out


def memory_sweep(run_dir: Path, corpus: str, mem: int = 0) -> list[dict[str, Any]]:
    """D2 investigation: TXL test ppl for evaluation memory (M, 2M, 4M) x same_length x clamp_len (clamped at the
    largest distance seen in training, M + L - 1)."""
    cfg, lm, streams = load_run(run_dir, "ptb", corpus, mem)
    m, longest = cfg.model.mem_len, cfg.model.mem_len + cfg.model.tgt_len - 1
    rows = []
    for same in (False, True):
        for mem in (m, 2 * m, 4 * m):
            for clamp in (-1, longest) if mem > m else (-1,):
                e = dataclasses.replace(cfg.eval, mem_len=mem, same_length=same, clamp_len=clamp)
                r = ppl_of(lm, streams["test"], dataclasses.replace(cfg, eval=e))
                rows.append({"mem_len": mem, "same_length": same, "clamp_len": clamp, "test_ppl": round(r, 3)})
                print("sweep", rows[-1], flush=True)
    return rows


def verdict(holds: bool) -> str:
    return "holds" if holds else "fails"


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
    mem = res.get("train_mem", 64)
    rows = [f"| Transformer-XL (relative positions, segment 64, training memory {mem}) | {txl[0]['params']:,} | "
            f"{mean_std([r['valid_ppl'] for r in txl])} | {mean_std([r['test_ppl'] for r in txl])} | {len(txl)} |",
            f"| vanilla (absolute, no memory, non-overlapping segments) | {van[0]['params']:,} | "
            f"{mean_std([r['valid_ppl'] for r in van])} | {mean_std([r['test_ppl'] for r in van])} | {len(van)} |"]
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
                 "evaluation, `clamp_len` at the largest distance seen in training, M + L - 1):\n\n"
                 "| eval memory | same_length | clamp_len | test ppl |\n|---|---|---|---|\n" + sweep_rows + "\n\n")
    gap_ppl = statistics.mean(r["test_ppl"] for r in van) - statistics.mean(r["test_ppl"] for r in txl)
    mem_first = statistics.mean(r[keys_txl[0]] for r in txl)
    mem_last = statistics.mean(r[keys_txl[-1]] for r in txl)
    analysis = (f"RECL, fragmentation and the memory sweep: `{record['analysis_command']}` (from the kept runs).\n\n"
                if record.get("analysis_command") else "")
    corpus = res.get("corpus", "ptb")
    vocab = "" if corpus == "ptb" else f", its {VOCAB:,} most frequent words"
    title = {"ptb": "PTB", "austen": "the Austen novels", "kjv": "the King James Bible"}.get(corpus, corpus)
    wall = ("train_wall_s", "train_s")
    times = {m: statistics.mean(next(r[k] for k in wall if k in r) for r in rs)
             for m, rs in (("txl", txl), ("van", van))}
    return f"""# Transformer-XL vs vanilla Transformer on {title} (equal parameters, equal budget)

{{header}}{analysis}Presets `transformer_xl --preset ptb` and `--preset ptb_vanilla` on `{corpus}`
(word level{vocab}): 4 layers, d=128, 4 heads × 32, segment 64, Transformer-XL's training memory
{res.get('train_mem', 64)}, batch 16 streams, {res['steps']} steps (AdamW lr
1e-3, cosine, clip 0.25), seeds {seeds}; the same data order for both. Test perplexity with the best validation
weights; mean ± std over seeds.

| model | parameters | valid ppl | test ppl | runs |
|---|---|---|---|---|
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

Vanilla - Transformer-XL: {gap_ppl:+.1f} test ppl (D1 expects a positive gap: {verdict(gap_ppl > 0)}). Evaluation
memory {keys_txl[0][12:]} -> {keys_txl[-1][12:]}: {mem_first:.2f} -> {mem_last:.2f} test ppl (D2 expects no rise:
{verdict(mem_last <= mem_first)}).

Training time per model: Transformer-XL {times['txl']:.0f} s, vanilla {times['van']:.0f} s (indicative only: runs
shared the machine with other work; the per-run train_tokens_per_s in the JSON show which).

{reading(record["name"])}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="ptb", help="a word-level corpus of `genfeat.data.corpora` (ptb, austen, kjv)")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--mem", type=int, default=0, help="Transformer-XL's training memory M (0: the preset's 64 = L); "
                    "the page is transformer_xl_<corpus>_mem<M>")
    ap.add_argument("--sliding-tokens", type=int, default=20000)
    ap.add_argument("--recl-positions", type=int, default=400)
    result_args(ap, [0, 1, 2], runs="runs/bench_transformer_xl_<corpus>")
    args = ap.parse_args()
    name = page_name(args.corpus, args.mem)
    if args.render_only:
        print(render(name, markdown))
        return
    args.runs = args.runs.replace("<corpus>", args.corpus)
    sweep = Sweep.from_args(args)
    jobs = [job(p, args.corpus, s, args.steps, args.mem) for p in PRESETS for s in args.seeds]
    finished = [(j, r) for j in jobs if (r := sweep.result(j)) is not None]
    if args.train_only:
        return
    first = {p: sweep.path(job(p, args.corpus, args.seeds[0], args.steps, args.mem)) for p in PRESETS}
    if not all((d / "summary.json").is_file() for d in first.values()):
        raise SystemExit(f"the first seed's pair is not trained yet in {args.runs}: RECL and the sweep need it")
    keep = ("params", "valid_ppl", "test_ppl", "train_s", "train_tokens_per_s", "seed", "device")
    per: dict[str, list[dict[str, Any]]] = {p: [] for p in PRESETS}
    for j, r in finished:
        per[j.tags["model"]].append({k: r.get(k) for k in keep}
                                    | evaluate(sweep.path(j), j.tags["model"], args.corpus, args.sliding_tokens,
                                                     args.mem))
    results = {"corpus": args.corpus, "steps": args.steps, "sliding_tokens": args.sliding_tokens,
               "transformer_xl": per["ptb"], "vanilla": per["ptb_vanilla"],
               "train_mem": args.mem or config("ptb", args.corpus).model.mem_len,
               "recl": group_recl(first, args.corpus, args.seeds[0], n_positions=args.recl_positions, mem=args.mem),
               "fragmentation": fragmentation(first, args.corpus, mem=args.mem),
               "memory_sweep": memory_sweep(first["ptb"], args.corpus, args.mem)}
    records = [r for _, r in finished]
    print(write_results(name, results, markdown, seeds=sorted({r["seed"] for r in records}),
                        machine=sweep.machine()))


if __name__ == "__main__":
    main()
