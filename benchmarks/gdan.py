"""GDAN's small-scale claims (spec gdan.md §5.2: Q1-Q3) on the synthetic QA world and the Table 3.4 analogue on
the CBT-style books set; records docs/results/gdan.{md,json}. Each cell is a `genfeat run gdan --preset synthetic
--method M --seed S` (or `--preset cbt_books --data.rate R`) run through the sweep harness; a table's run keeps
the other table's records.

    python -m benchmarks.gdan [--seeds 0 1 2] [--runs runs/bench_gdan]
    python -m benchmarks.gdan --train-only --only sl context &      # two workers, one thread each
    python -m benchmarks.gdan --train-only --only gen_domain gdan
    python -m benchmarks.gdan --table cbt --rates 0.1 0.2 0.5 --train-only &   # twice: two workers share the list
    python -m benchmarks.gdan --table cbt --rates 0.1 0.2 0.5 --collect
    python -m benchmarks.gdan --table speed [--repeats 7]     # nn.recurrent.BiRNN against a packed cell

Rows at |L| = 50 (SL's dev F1 < 70 there, the smallest budget Q3 names): SL, Context, Gen + domain, GDAN (Gen +
domain + adv), 1,500 D updates each (GDAN: 300 rounds of 5 D + 1 G), the generators' MLE 800 steps; one hypothesis
cell, Gen + domain with greedy instead of sampled questions for D (`--adapt.greedy true`).

The CBT table (`--table cbt`): every method of Table 3.4 and the passage-only control at each labelling rate, the
jobs ordered rate by rate and seed by seed (a partial sweep fills whole rows of the lowest rates first), test
accuracy over the 10 candidates; beside it the no-training baselines of Hill et al. (a random candidate, the
candidate most frequent in the passage).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from benchmarks.common import interleaved_median_seconds, load_result, mean_std, reading, result_args, write_results
from benchmarks.sweep import Job, sweep_page
from genfeat.data.cbt_books import last_occurrence
from genfeat.registry import RECIPES

NAME = "gdan"
ROWS = {"sl": "SL", "context": "Context", "gen_domain": "Gen + domain", "gdan": "Gen + domain + adv (GDAN)",
        "gen_domain_greedy": "Gen + domain, greedy questions (hypothesis cell)"}
THESIS_RATE01 = {"sl": 38.15, "context": 45.15, "gen_domain": 47.03, "gdan": 48.02,
                 "gen_domain_greedy": "–"}  # Table 3.4, rate 0.1, |U| 50K: test F1
# the hypothesis cell: Q3's Gen + domain does not beat SL with sampled questions; are G's samples (trained on 50
# questions) too noisy, so that its greedy questions help where samples do not?


CBT_ROWS = {"sl": "SL", "passage_only": "Passage only (questions blanked)", "context": "Context",
            "context_domain": "Context + domain", "gen": "Gen", "gen_gan": "Gen + GAN", "gen_dual": "Gen + dual",
            "gen_domain": "Gen + domain", "gdan": "Gen + domain + adv (GDAN)"}
# the hypothesis cell: D at this scale stays near the passage-frequency baseline because 878 questions cannot train
# 30,000 random embeddings; does D started from GloVe (50d, the spec's "GloVe if available") rise above it?
CBT_HYPOTHESES = {"sl_glove": "SL, GloVe-50d embeddings (hypothesis cell)"}
THESIS_TEST_F1 = {  # Table 3.4, |U| 50K, SQuAD test F1 × 100 (spec gdan.md §4.3)
    0.1: {"sl": 38.15, "context": 45.15, "context_domain": 45.75, "gen": 45.53, "gen_gan": 43.73,
          "gen_dual": 45.55, "gen_domain": 47.03, "gdan": 48.02},
    0.2: {"sl": 46.74, "context": 51.32, "context_domain": 52.00, "gen": 51.59, "gen_gan": 50.37,
          "gen_dual": 51.92, "gen_domain": 52.16, "gdan": 53.94},
    0.5: {"sl": 57.22, "context": 57.40, "context_domain": 57.91, "gen": 57.17, "gen_gan": 55.90,
          "gen_dual": 57.46, "gen_domain": 58.26, "gdan": 58.31}}


def cbt_job(row: str, rate: float, seed: int) -> Job:
    base = RECIPES["gdan"].presets["cbt_books"]()
    cfg = dataclasses.replace(base, seed=seed, method=row.removesuffix("_glove"),
                              data=dataclasses.replace(base.data, rate=rate))
    if row.endswith("_glove"):
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, d_embed=50, word_vectors="glove-6b-50d"))
    return Job(f"cbt-r{rate}-{row}-seed{seed}", {"row": row, "rate": rate, "seed": seed}, "gdan", cfg,
               group=f"{row}@{rate}", preset="cbt_books")


def cbt_baselines() -> dict[str, float]:
    """Test accuracy (×100) of a random candidate (its expectation) and of the candidate most frequent in the
    passage (ties: the first candidate in alphabetical order), as Hill et al. report them."""
    from collections import Counter

    from genfeat.data.cbt_books import cbt_books

    test = cbt_books().splits["test"]
    hits = []
    for e in test:
        n = Counter(e.paragraph)
        hits.append(max(e.candidates, key=lambda c: (n[c], -e.candidates.index(c))) == e.answer)
    return {"random": 100.0 / len(test[0].candidates), "most_frequent": 100.0 * sum(hits) / len(hits),
            "n_test": len(test)}


def cbt_markdown(record: dict[str, Any]) -> str:
    runs = record["results"].get("cbt_runs", [])
    if not runs:
        return ""
    rates = sorted({r["rate"] for r in runs})
    seeds = " ".join(map(str, sorted({r["seed"] for r in runs})))
    base = record["results"]["cbt_baselines"]
    head = "| Method | " + " | ".join(f"test acc., rate {r} | thesis F1 (SQuAD) | dev acc." for r in rates) + " |"
    table = [head, "|---|" + "---|---|---|" * len(rates)]
    for row, label in (CBT_ROWS | CBT_HYPOTHESES).items():
        cells = []
        for rate in rates:
            got = [r for r in runs if r["row"] == row and r["rate"] == rate]
            n = f" (n = {len(got)})" if got and len(got) < 3 else ""
            cells += [mean_std([r["test_accuracy"] for r in got]) + n, str(THESIS_TEST_F1[rate].get(row, "–")),
                      mean_std([r["dev_accuracy"] for r in got])]
        table.append(f"| {label} | " + " | ".join(cells) + " |")
    # a resumed run's wall_s counts its last invocation only, which can be shorter than its (cumulative) train_s
    wall = {row: [r["wall_s"] / 60 for r in runs if r["row"] == row and r["wall_s"] >= r["train_s"]]
            for row in CBT_ROWS}
    speed = [r["d_paragraphs_per_s"] for r in runs if r["row"] == "sl" and r.get("d_paragraphs_per_s")]
    g_speed = [r["generator_tokens_per_s"] for r in runs if r.get("generator_tokens_per_s")]
    return f"""
## Table 3.4 on the CBT-style books set

Command: `python -m benchmarks.gdan --table cbt --rates {' '.join(map(str, rates))} --seeds {seeds}` (each run
`genfeat run gdan --preset cbt_books --method M --data.rate R --seed S`; minutes a run: SL {mean_std(wall['sl'], 0)},
GDAN {mean_std(wall['gdan'], 0)}, over the runs not resumed after an interruption).

`genfeat data build cbt-books` (docs/results/data_tasks.md): {base['n_test']:,} test questions from held-out
books (Austen's Persuasion, 6 KJV books, a fifth of the BBC articles), 10 candidates each. L = rate × the
8,788 training questions; U = five typed words a passage of the training passages no labelled question uses
(30,145 pairs at rate 0.1). D: embeddings 64, BiGRU 32, K = 2, batches 16 + 16, 500 D updates, the best dev accuracy
kept; G: GRU 64, output vocabulary 5,000 + copying, MLE 300 steps. Mean ± std over seeds (n < 3 marked). The
thesis's column is SQuAD test F1 at the same rate, for the direction only. Without training: a random candidate
{base['random']:.2f}, the candidate most frequent in the passage {base['most_frequent']:.2f}. D trains at
{mean_std(speed, 0)} passages / s (SL, one thread); G samples {mean_std(g_speed, 0)} tokens / s.

{chr(10).join(table)}
{cbt_generator_markdown(record)}"""


def cbt_generator_markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    gdan_runs = [r for r in res.get("cbt_runs", []) if r["row"] == "gdan"]
    if not gdan_runs:
        return ""
    health = ["| Generator | UNK rate | repeated-bigram rate | copy rate | mean length |", "|---|---|---|---|---|"]
    for which, label in (("health_mle", "MLE"), ("health_final", "GDAN final (RL)")):
        health.append(f"| {label} | " + " | ".join(mean_std([r[which][k] for r in gdan_runs], 3) for k in
                                                   ("unk_rate", "repeat_rate", "copy_rate", "mean_length")) + " |")
    q = res.get("cbt_questions")
    shown = ""
    if q:
        lines = ["| passage around the answer | answer | MLE question | RL (GDAN) question |", "|---|---|---|---|"]
        esc = lambda t: t.replace("|", "\\|")  # noqa: E731
        lines += [f"| … {esc(r['context'])} … | {esc(r['answer'])} | {esc(r['mle'])} | {esc(r['final'])} |"
                  for r in q["rows"]]
        shown = (f"\nQuestions for 20 held-out unlabelled pairs of run `{q['run']}` (one sample each, the MLE "
                 f"generator and the final one):\n\n" + "\n".join(lines) + "\n")
    curve = ""
    if c := res.get("cbt_curve"):
        pts = {k: {int(x): y for x, y in c[k]} for k in ("gen_domain", "gdan")}
        xs = sorted(set(pts["gen_domain"]) & set(pts["gdan"]))
        curve = (f"\nFigure 3.8's analogue at rate {c['rate']}, seed {c['seed']}: D's loss on generated questions "
                 f"(the mean over each log window) against D updates:\n\n| D updates | "
                 + " | ".join(map(str, xs)) + " |\n|---|" + "---|" * len(xs) + "\n"
                 + "".join(f"| {label} | " + " | ".join(f"{pts[k][x]:.3f}" for x in xs) + " |\n"
                           for k, label in (("gen_domain", "Gen + domain"), ("gdan", "GDAN"))))
    return f"""{curve}
The generator on the books (GDAN runs, {len(gdan_runs)} of them; one sampled question for each of the 200
held-out pairs; copy rate = the share of tokens only copying can produce):

{chr(10).join(health)}
{shown}"""


def job(row: str, seed: int) -> Job:
    cfg = dataclasses.replace(RECIPES["gdan"].presets["synthetic"](), seed=seed, method=row.removesuffix("_greedy"))
    if row.endswith("_greedy"):
        cfg = dataclasses.replace(cfg, adapt=dataclasses.replace(cfg.adapt, greedy=True))
    return Job(f"{row}-seed{seed}", {"row": row, "seed": seed}, "gdan", cfg, group=row, preset="synthetic")


def _v(runs: list[dict[str, Any]], row: str, key: str) -> list[float]:
    return [r[key] for r in runs if r["row"] == row and r.get(key) is not None]


def markdown(record: dict[str, Any]) -> str:
    runs = record["results"]["runs"]  # the synthetic world's
    seeds = sorted({r["seed"] for r in runs})
    by = {(r["row"], r["seed"]): r for r in runs}
    table = ["| Method | test F1 | test EM | dev F1 | thesis test F1 (SQuAD, rate 0.1) | D paragraphs / s |",
             "|---|---|---|---|---|---|"]
    for row, label in ROWS.items():
        table.append(f"| {label} | {mean_std(_v(runs, row, 'test_f1'))} | {mean_std(_v(runs, row, 'test_exact'))} | "
                     f"{mean_std(_v(runs, row, 'dev_f1'))} | {THESIS_RATE01[row]} | "
                     f"{mean_std(_v(runs, row, 'd_paragraphs_per_s'), 0)} |")
    q1 = [by["gdan", s]["reward_final"] - by["gdan", s]["reward_mle"] for s in seeds if ("gdan", s) in by]
    q2 = [by["gen_domain", s]["generated_nll_last20"] - by["gdan", s]["generated_nll_last20"] for s in seeds
          if ("gdan", s) in by and ("gen_domain", s) in by]
    q3c = [by["context", s]["test_f1"] - by["sl", s]["test_f1"] for s in seeds
           if ("context", s) in by and ("sl", s) in by]
    q3g = [by["gen_domain", s]["test_f1"] - by["sl", s]["test_f1"] for s in seeds
           if ("gen_domain", s) in by and ("sl", s) in by]
    sl_dev = _v(runs, "sl", "dev_f1")
    claims = [
        "| Claim (spec §5.2) | Gate | Measured (mean ± std over seeds) | Holds in every seed |", "|---|---|---|---|",
        f"| Q1 RL raises the reward: mean log P_D,d_true(a \\| p, q) of the final GDAN generator − the MLE one, under "
        f"the final D, 500 held-out pairs | > 0 | {mean_std(q1, 3)} | {bool(q1) and all(v > 0 for v in q1)} |",
        f"| Q2 (Fig. 3.8) D's loss on generated questions over the last 20 %: Gen + domain − GDAN | > 0 | "
        f"{mean_std(q2, 3)} | {bool(q2) and all(v > 0 for v in q2)} |",
        f"| Q3 Context − SL, test F1 (SL dev F1 {mean_std(sl_dev)} < 70) | > 0 | {mean_std(q3c)} | "
        f"{bool(q3c) and all(v > 0 for v in q3c)} |",
        f"| Q3 Gen + domain − SL, test F1 | > 0 | {mean_std(q3g)} | {bool(q3g) and all(v > 0 for v in q3g)} |",
    ]
    health = ["| Generator | UNK rate | repeated-bigram rate | copy rate | mean length | tokens / s |",
              "|---|---|---|---|---|---|"]
    for which, label in (("health_mle", "MLE (GDAN runs' phase 1)"), ("health_final", "GDAN final (RL)")):
        h = [r[which] for r in runs if r["row"] == "gdan"]
        speed = mean_std(_v(runs, "gdan", "generator_tokens_per_s"), 0) if which == "health_final" else "–"
        health.append(f"| {label} | " + " | ".join(mean_std([x[k] for x in h], 3) for k in
                                                   ("unk_rate", "repeat_rate", "copy_rate", "mean_length"))
                      + f" | {speed} |")
    wall = [r["wall_s"] for r in runs]
    return f"""# GDAN: the synthetic-world claims and the books table

{{header}}Command: `python -m benchmarks.gdan --seeds {' '.join(map(str, seeds))}` (each run `genfeat run gdan --preset
synthetic --method M --seed S`; {mean_std(wall, 0)} s a run on the CPU).

The spec §5.1 world: 300 persons, templated biographies (2-3 persons, 4-8 sentences a paragraph), six question
types with three human paraphrases each that use words the paragraphs never do; |L| = 50 labelled questions,
|U| = 5,000 (paragraph, answer) pairs from the simulated entity recogniser, dev 300 and test 1,000 questions on
fresh paragraphs. D: the gated-attention reader (embeddings 32, BiGRU 32 a direction, K = 2, BiGRUs between hops),
random weights, Adam lr 5e-4, batch 32 + 32, 1,500 updates, the best dev F1 kept. G: GRU 64 with attention and copy
(output vocabulary: the 100 first words, L's question words first), MLE 800 steps at lr 1e-3 (the best dev NLL
kept), REINFORCE at lr 1e-4 with the leave-one-out baseline. SQuAD EM / F1 × 100 (the official normalisation),
mean ± std over seeds. The thesis's numbers are SQuAD's at labelling rate 0.1 (8.8K labelled questions) and are
beside ours for the direction only.

{chr(10).join(table)}

{chr(10).join(claims)}

Generator health on the held-out pairs (one sampled question each; copy rate = the share of tokens only copying can
produce):

{chr(10).join(health)}
{cbt_markdown(record)}{speed_markdown(record)}
{reading(NAME)}
"""


def recurrent_speed(repeats: int) -> list[dict[str, Any]]:
    """Forward + backward of `nn.recurrent.BiRNN` against a packed bidirectional `nn.GRU` (the same sizes) on
    rows of random lengths in [T/2, T], one thread, interleaved (`common.interleaved_median_seconds`)."""
    import torch

    torch.set_num_threads(1)
    return [_time_birnn(B, T, d_in, repeats) for B, T, d_in in ((16, 600, 64), (32, 600, 32), (32, 60, 32))]


def _time_birnn(B: int, T: int, d_in: int, repeats: int) -> dict[str, Any]:
    import torch
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    from genfeat.nn.recurrent import BiRNN

    torch.manual_seed(0)
    ours, packed = BiRNN(d_in, 32), torch.nn.GRU(d_in, 32, batch_first=True, bidirectional=True)
    x = torch.randn(B, T, d_in)
    lengths = torch.randint(T // 2, T + 1, (B,))
    lengths[0] = T
    mask = torch.arange(T)[None, :] < lengths[:, None]

    def run_ours() -> None:
        ours(x, mask)[0].sum().backward()

    def run_packed() -> None:
        o, _ = packed(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        pad_packed_sequence(o, batch_first=True, total_length=T)[0].sum().backward()

    t = interleaved_median_seconds({"packed": run_packed, "ours": run_ours}, repeats)
    return {"batch": B, "length": T, "d_in": d_in, "d_hidden": 32, "packed_ms": 1000 * t["packed"],
            "ours_ms": 1000 * t["ours"], "speedup": t["packed"] / t["ours"], "repeats": repeats}


def speed_markdown(record: dict[str, Any]) -> str:
    rows = record["results"].get("recurrent_speed", [])
    if not rows:
        return ""
    table = ["| batch × length, d_in → 32 a direction | packed nn.GRU (ms) | nn.recurrent.BiRNN (ms) | speed-up |",
             "|---|---|---|---|"]
    table += [f"| {r['batch']} × {r['length']}, {r['d_in']} | {r['packed_ms']:.0f} | {r['ours_ms']:.0f} | "
              f"{r['speedup']:.2f}x |" for r in rows]
    return f"""
## The reader's recurrent block

Command: `python -m benchmarks.gdan --table speed --repeats {rows[0]['repeats']}`. One training pass (forward +
backward) of a bidirectional GRU over right-padded rows of random lengths in [T/2, T], one thread, the median of
interleaved rounds: `pack_padded_sequence` through a bidirectional `nn.GRU` against `nn.recurrent.BiRNN` (two
one-directional cells over the unpacked rows, the backward one over per-row flipped rows; equal outputs,
tests/gdan/test_blocks.py). The machine's 1-minute load average when the timing began:
{record['results']['speed_load']:.2f}.

{chr(10).join(table)}
"""


def cbt_questions(root: Path, jobs: list[Job]) -> dict[str, Any]:
    """{"cbt_questions": the 20 held-out pairs' MLE and final questions of the first finished GDAN run of the
    list, with ±8 words around the answer's last occurrence}, or {} when none finished."""
    for j in jobs:
        path = root / j.name / "questions.jsonl"
        if j.tags["row"] == "gdan" and path.is_file() and (root / j.name / "summary.json").is_file():
            rows = []
            for line in path.read_text().splitlines():
                q = json.loads(line)
                words = q["paragraph"].split()
                at = last_occurrence(words, q["answer"])
                rows.append({"context": " ".join(words[max(0, at - 8):at + 9]), "answer": q["answer"],
                             "mle": q["mle"], "final": q["final"]})
            return {"cbt_questions": {"run": j.name, "rows": rows}}
    return {}


def cbt_curve(root: Path, jobs: list[Job]) -> dict[str, Any]:
    """{"cbt_curve": Figure 3.8's analogue, D's logged loss on generated questions (generated_nll, the mean over
    each log window) against D updates, for Gen + domain and GDAN at the first (rate, seed) where both
    finished}, or {}."""
    done = {(j.tags["row"], j.tags["rate"], j.tags["seed"]): root / j.name for j in jobs
            if (root / j.name / "summary.json").is_file()}
    for (row, rate, seed), path in done.items():
        if row != "gdan" or ("gen_domain", rate, seed) not in done:
            continue
        series = {}
        for name, d in (("gen_domain", done["gen_domain", rate, seed]), ("gdan", path)):
            per_step = json.loads((d / "summary.json").read_text())["d_updates"] / json.loads(
                (d / "summary.json").read_text())["steps"]
            series[name] = [[int(m["step"] * per_step), m["generated_nll"]] for m in map(
                json.loads, (d / "metrics.jsonl").read_text().splitlines()) if "generated_nll" in m]
        return {"cbt_curve": {"rate": rate, "seed": seed, **series}}
    return {}


def merged(kept: list[dict[str, Any]], runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The CBT cells accumulate over sweeps (its ~27 CPU-hours do not fit one sitting): a cell this sweep measured
    replaces its recorded one, the others stay."""
    key = lambda r: (r["row"], r["rate"], r["seed"])  # noqa: E731
    new = {key(r) for r in runs}
    return sorted([r for r in kept if key(r) not in new] + runs, key=lambda r: (r["rate"], r["seed"], r["row"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    result_args(ap, [0, 1, 2], runs="runs/bench_gdan")
    ap.add_argument("--table", choices=["synthetic", "cbt", "speed"], default="synthetic")
    ap.add_argument("--repeats", type=int, default=7, help="--table speed: interleaved rounds")
    ap.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.2, 0.5], help="--table cbt: labelling rates")
    args = ap.parse_args()
    kept = (load_result(NAME) or {}).get("results", {})
    if args.table == "speed" and not args.render_only:
        load = os.getloadavg()[0]  # what else ran on the machine, recorded rather than described
        kept |= {"speed_load": load, "recurrent_speed": recurrent_speed(args.repeats)}
        print(write_results(NAME, kept, markdown, seeds=args.seeds, device="cpu"))
    elif args.table == "cbt":
        jobs = [cbt_job(row, rate, s) for rate in args.rates for s in args.seeds for row in CBT_ROWS | CBT_HYPOTHESES]
        sweep_page(args, NAME, jobs, markdown, lambda runs: kept | {"cbt_runs": merged(kept.get("cbt_runs", []), runs),
                                                                    "cbt_baselines": cbt_baselines(),
                                                                    **cbt_questions(Path(args.runs), jobs),
                                                                    **cbt_curve(Path(args.runs), jobs)})
    else:
        sweep_page(args, NAME, [job(r, s) for r in ROWS for s in args.seeds], markdown,
                   lambda runs: {k: v for k, v in kept.items() if k != "runs"} | {"runs": runs})


if __name__ == "__main__":
    main()
