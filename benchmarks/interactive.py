"""Interactive generation (thesis C §4; spec interactive-generation.md §6, §8.2); records
docs/results/interactive.{md,json}. Every cell is a run through the sweep harness:

    synthetic   `genfeat run interactive --preset tiny` (K = 4, and K = 1 for G2): the Table 4.1 analogue on the
                topic-chain corpus and the claims G1-G4
    prose       `genfeat run lm --preset prose` (the pretrained LM, once), then `genfeat run interactive --preset
                prose --init LM/hf` per seed: Table 4.1 on the BBC News test split (the recipe's test scores);
                Table 4.5 (`tasks.prose_options.continuation_table`: ours, PPLM-BoW and the plain generator on the
                same prompts, perplexity under the pretrained LM, seconds per continuation, in this process) per
                seed; the app's latency on seed 0's run (`genfeat serve interactive` in a subprocess on localhost:
                options and first token for a 100-word prompt, decode tokens/s, 20 concurrent clients, resident
                memory over 200 requests)

    python -m benchmarks.interactive [--seeds 0 1 2] [--runs runs/bench_interactive]
    python -m benchmarks.interactive --train-only --only pretrain      # the LM first (about 75 minutes)
    python -m benchmarks.interactive --train-only --only prose         # the prose runs (workers may share them)
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from benchmarks.common import mean_std, reading, result_args
from benchmarks.sweep import Job, sweep_page
from genfeat.registry import RECIPES

NAME = "interactive"
ROWS = {"k4": 4, "k1": 1}
THESIS = {  # Table 4.1 (Wikipedia test, K = 10): Sim, Sim Diff
    "ours": (48.38, 0.45), "kmeans_local": (47.94, -16.12), "kmeans_global": (40.65, -3.40)}
LABELS = {"ours": "Ours", "kmeans_local": "Kmeans-local", "kmeans_global": "Kmeans-global"}


def job(group: str, seed: int) -> Job:
    cfg = RECIPES["interactive"].presets["tiny"]()
    cfg = dataclasses.replace(cfg, seed=seed, options=dataclasses.replace(cfg.options, k=ROWS[group]))
    return Job(f"{group}-seed{seed}", {"row": group, "seed": seed}, "interactive", cfg, group=group, preset="tiny")


LM_RUN = "lm-prose"
TABLE_45 = {"prompts": 10, "words": 35, "new": 50}  # prompts per seed, their length in words, tokens generated
THESIS_45 = {  # Table 4.5: Token, Word, Topic, PPL, Dist-1, Dist-2, Time (s)
    "pplm": (1.48, 0.99, 0.77, 18.49, 40.29, None, 17.74), "ours": (2.36, 1.79, 1.40, 16.39, 37.98, 79.65, 1.02),
    "plain": (1.27, 0.84, 0.64, 14.24, 39.80, 80.22, 1.00)}
THESIS_41 = {  # Table 4.1: Sim, Sim Short, Sim Diff
    "sample_global": (14.63, 14.42, 0.16), "lda_global": (36.86, 36.02, -2.82), "kmeans_global": (40.65, 39.91, -3.40),
    "sample_local": (41.50, 41.23, -12.51), "kmeans_local": (47.94, 43.89, -16.12), "ours": (48.38, 46.29, 0.45)}
LABELS_41 = {"sample_global": "Global Sample", "lda_global": "Global LDA", "kmeans_global": "Global Kmeans",
             "sample_local": "Local Sample", "kmeans_local": "Local Kmeans", "ours": "Local Ours"}


def lm_job() -> Job:
    return Job(LM_RUN, {"row": "lm"}, "lm", RECIPES["lm"].presets["prose"](), group="pretrain", preset="prose")


def prose_job(runs: Path, seed: int) -> Job:
    lm = runs / LM_RUN
    cfg = dataclasses.replace(RECIPES["interactive"].presets["prose"](), seed=seed, init=str(lm / "hf"))
    return Job(f"prose-seed{seed}", {"row": "prose", "seed": seed}, "interactive", cfg, group="prose",
               preset="prose", needs=(lm,))


def continuations(run: Path, lm: Path, seed: int) -> dict[str, Any]:
    """Table 4.5 on one run: TABLE_45's test prompts, in this process."""
    import torch

    from benchmarks.interactive_latency import held_out_prompts
    from genfeat.models.gpt.hf import from_pretrained
    from genfeat.tasks.prose_options import continuation_table

    gen, prompts = held_out_prompts(run, TABLE_45["prompts"], TABLE_45["words"], seed + 100)
    res = continuation_table(gen, from_pretrained(lm / "hf"), prompts, gen.tokenizer, TABLE_45["new"], seed)
    return res | {"torch_threads": torch.get_num_threads()}


def _vals(runs: list[dict[str, Any]], row: str, key: str) -> list[float]:
    return [r[key] for r in runs if r["row"] == row]


def prose_markdown(res: dict[str, Any]) -> str:
    """The real-prose sections: the LM, Table 4.1, Table 4.5 and the app's latency ("" before any prose run)."""
    runs = res["runs"]
    prose = [r for r in runs if r["row"] == "prose"]
    lm = next((r for r in runs if r["row"] == "lm"), None)
    if not prose or lm is None:
        return ""
    seeds = " ".join(str(r["seed"]) for r in prose)
    pre = RECIPES["interactive"].presets["prose"]()
    t41 = ["| Method | Sim | Sim Short | Sim Diff | Sim Short Diff | thesis Sim | thesis Sim Short | thesis Sim Diff |",
           "|---|---|---|---|---|---|---|---|"]
    for m, (a, b, c) in THESIS_41.items():
        cells = [mean_std(_vals(runs, "prose", f"test_{m}_{k}")) for k in ("sim", "sim_short", "sim_diff",
                                                                            "sim_short_diff")]
        t41.append(f"| {LABELS_41[m]} | " + " | ".join(cells) + f" | {a} | {b} | {c} |")
    cont = res.get("continuations", {})
    rows45 = {"ours": "Ours", "pplm": "PPLM-BoW", "plain": "Plain generator (n = 0)"}
    keys45 = ("token", "word", "topic", "ppl", "dist1", "dist2", "seconds")
    t45 = ["| Method | Token | Word | Topic | PPL ↓ | Dist-1 | Dist-2 | s / continuation | thesis (Token, Word, Topic, "
           "PPL, Dist-1, Dist-2, s) |", "|---|---|---|---|---|---|---|---|---|"]
    for m, label in rows45.items():
        cells = [mean_std([c[m][k] for c in cont.values()], 3 if k == "seconds" else 2) for k in keys45]
        thesis = ", ".join("n/r" if v is None else str(v) for v in THESIS_45[m])
        t45.append(f"| {label} | " + " | ".join(cells) + f" | {thesis} |")
    ratio = [c["pplm"]["seconds"] / c["ours"]["seconds"] for c in cont.values()]
    n45 = [c["prompts"]["n"] for c in cont.values()]
    lat = res.get("latency")
    lat_md = ""
    if lat:
        ld = lat["load"]
        rss = lat["rss_mib"]
        lat_md = f"""### The app on this CPU (seed {prose[0]['seed']}'s run)

`genfeat serve interactive` in a subprocess on 127.0.0.1 (startup {lat['startup_s']:.1f} s), driven over HTTP;
prompts of {lat['prompt_words']} words from the test split.

| Measure | Value | Goal |
|---|---|---|
| options (client wall time), median / max of 5 prompts | {lat['options_s']['median']:.3f} / {lat['options_s']['max']:.3f} s | < 1 s |
| first streamed token (client), median / max | {lat['first_token_s']['median_client']:.3f} / {lat['first_token_s']['max_client']:.3f} s | < 1 s |
| first token (server's first_token_s), median | {lat['first_token_s']['median_server']:.3f} s | |
| decode speed (server's decode_tokens_per_s), median | {lat['decode_tokens_per_s']:.1f} tokens/s | |
| continuation time, PPLM / ours (Table 4.5, same process) | {mean_std(ratio, 1)}× | ≥ 20× |
| {ld['clients']} concurrent clients: completed / 429 / 503 / other | {ld['completed']} / {ld['refused_429']} / {ld['refused_503']} / {ld['other']} | no other, no 5xx |
| refusals carry Retry-After; server alive after | {ld['retry_after_on_refusals']}; {ld['server_alive']} | |
| completed requests p50 / p95 (20 new tokens) | {ld['p50_s']:.2f} / {ld['p95_s']:.2f} s | |
| resident memory over {lat['requests']} requests (every 20) | {rss[0]:.0f} → {rss[-1]:.0f} MiB (max {max(rss):.0f}) | flat |
"""  # noqa: E501
    return f"""## Real prose: BBC News on a GPT-2 BPE LM pretrained here

The LM: `genfeat run lm --preset prose` ({lm['params']:,} parameters; {lm['steps']:,} steps of 16 × 128 tokens of
`austen+kjv+shakespeare+python-doc+linux-doc+wiki-xml`, GPT-2 BPE; validation perplexity {lm['valid_ppl']:.1f}, test
{lm['test_ppl']:.1f} on their first 65,536 tokens; {lm['train_s'] / 60:.0f} minutes on the CPU). BBC News is not in it.
Each seed: `genfeat run interactive --preset prose --init {LM_RUN}/hf --seed S` (K = 10, M = 5; the conditional
generator fine-tuned {pre.generator_train.max_steps} steps of 16 × 128 tokens, then the option generator
{pre.train.max_steps} steps of 16 prompts; {mean_std([r['wall_s'] / 60 for r in prose], 1)} minutes a run), seeds
{seeds}; mean ± std over seeds.

### Table 4.1 analogue: topic options on held-out news

{pre.data.eval_prompts} test prompts of {pre.data.prompt_words[0]} words (Sim, Sim Diff) and {pre.data.eval_prompts}
of {pre.data.prompt_words[1]} words (Sim Short), each ending at a word; Ȳ the next {pre.data.o_eval} content words,
X̄ the prompt's; topics by Eq. 4.1 from M = 5 words of the content vocabulary ({prose[0]['vocab']:,} words with a
GloVe 50d vector seen ≥ {pre.data.min_count} times in the training split). Global K-means: J = 1,000 clusters of the
vocabulary; LDA: J = 150 topics of the {pre.data.seq_len}-token training blocks.

{chr(10).join(t41)}

### Table 4.5 analogue: topic-conditioned continuations

Per seed, {TABLE_45['prompts']} test prompts of {TABLE_45['words']} words ({mean_std(n45, 1)} kept: a prompt whose
chosen topics have no one-token word is left out for every method, as PPLM's code needs), n ~ U{{1..10}} of our
topics chosen at random; {TABLE_45['new']} new tokens, top-k 40; PPLM-BoW with the repository's defaults on the
generator with nothing inserted; perplexity under the pretrained LM (not fine-tuned on news: the thesis's GPT-2
medium plays this part); seconds per continuation on {next(iter(cont.values()))['torch_threads'] if cont else '?'}
torch threads, every method in one process.

{chr(10).join(t45)}

{lat_md}
Conditional generator, validation NLL per token with hints / without: {mean_std(_vals(runs, 'prose',
'valid_generator_loss'), 3)} / {mean_std(_vals(runs, 'prose', 'valid_generator_plain_loss'), 3)}.
"""


def markdown(record: dict[str, Any]) -> str:
    runs = record["results"]["runs"]
    seeds = sorted({r["seed"] for r in runs if "seed" in r})
    table = ["| Method | Sim (ours, K=4) | Sim Diff (ours, K=4) | Sim (thesis) | Sim Diff (thesis) |",
             "|---|---|---|---|---|"]
    for m, (t_sim, t_diff) in THESIS.items():
        table.append(f"| {LABELS[m]} | {mean_std(_vals(runs, 'k4', f'test_{m}_sim'))} | "
                     f"{mean_std(_vals(runs, 'k4', f'test_{m}_sim_diff'))} | {t_sim} | {t_diff} |")
    k4 = {r["seed"]: r for r in runs if r["row"] == "k4"}
    k1 = {r["seed"]: r for r in runs if r["row"] == "k1"}
    g1 = [k4[s]["test_ours_sim"] - k4[s]["test_kmeans_local_sim"] for s in k4]
    g2 = [k4[s]["test_ours_sim"] - k1[s]["test_ours_sim"] for s in k4 if s in k1]
    claims = [
        "| Claim | Gate (spec §8.2) | Measured (mean ± std over seeds) | Holds in every seed |", "|---|---|---|---|",
        f"| G1 Sim(ours) − Sim(Kmeans-local) | ≥ 10 | {mean_std(g1)} | {all(v >= 10 for v in g1)} |",
        f"| G1 Sim Diff ours / Kmeans-local | > 0 / < 0 | {mean_std(_vals(runs, 'k4', 'test_ours_sim_diff'))} / "
        f"{mean_std(_vals(runs, 'k4', 'test_kmeans_local_sim_diff'))} | "
        f"{all(r['test_ours_sim_diff'] > 0 > r['test_kmeans_local_sim_diff'] for r in k4.values())} |",
        f"| G2 Sim(K=4) − Sim(K=1) | ≥ 5 | {mean_std(g2)} | {bool(g2) and all(v >= 5 for v in g2)} |",
        f"| G2 both successors covered (cos > 0.8), K=4 | most prompts | "
        f"{mean_std(_vals(runs, 'k4', 'test_coverage'), 3)} | {all(r['test_coverage'] > 0.5 for r in k4.values())} |",
        f"| G2 both successors covered, K=1 | (cannot) | {mean_std(_vals(runs, 'k1', 'test_coverage'), 3)} | – |",
        f"| G3 Kmeans-global Sim Diff | < 0, Sim below ours | "
        f"{mean_std(_vals(runs, 'k4', 'test_kmeans_global_sim_diff'))} | "
        f"{all(r['test_kmeans_global_sim_diff'] < 0 and r['test_kmeans_global_sim'] < r['test_ours_sim'] for r in k4.values())} |",  # noqa: E501
        f"| G4 share of s_1 words, s_1 inserted | ≥ 0.7 | {mean_std(_vals(runs, 'k4', 'test_cond_s1_share_s1'), 3)} | "
        f"{all(r['test_cond_s1_share_s1'] >= 0.7 for r in k4.values())} |",
        f"| G4 share of s_2 words, s_2 inserted | ≥ 0.7 | {mean_std(_vals(runs, 'k4', 'test_cond_s2_share_s2'), 3)} | "
        f"{all(r['test_cond_s2_share_s2'] >= 0.7 for r in k4.values())} |",
        f"| G4 share of s_1 words, nothing inserted | 0.5 ± 0.15 | "
        f"{mean_std(_vals(runs, 'k4', 'test_cond_none_share_s1'), 3)} | "
        f"{all(abs(r['test_cond_none_share_s1'] - 0.5) <= 0.15 for r in k4.values())} |",
    ]
    gen = ["| Conditional generator (valid NLL / token) | with hints | without |", "|---|---|---|",
           f"| K=4 runs | {mean_std(_vals(runs, 'k4', 'valid_generator_loss'), 3)} | "
           f"{mean_std(_vals(runs, 'k4', 'valid_generator_plain_loss'), 3)} |"]
    wall = [r["wall_s"] for r in runs]
    return f"""# Interactive generation: the synthetic topic-chain claims

{{header}}Command: `python -m benchmarks.interactive --seeds {' '.join(map(str, seeds))}` (each run `genfeat run
interactive --preset tiny [--options.k 1] --seed S`: both generators, {mean_std(wall, 0)} s a run on the CPU).

300 held-out prompts per seed for Sim (Eq. 4.2, mean × 100, O' = the next sentence's 4 content words; topics by
Eq. 4.1 from M = 5 words, stop words excluded), 200 for G4 (8 tokens, top-k 5). The thesis's columns are
Wikipedia with GPT-2 and K = 10: they give the direction, not a target.

{chr(10).join(table)}

{chr(10).join(claims)}

{chr(10).join(gen)}

{prose_markdown(record["results"])}
{reading(NAME)}
"""


def results(runs: list[dict[str, Any]], root: Path) -> dict[str, Any]:
    from benchmarks.interactive_latency import app_latency

    prose = sorted(r["seed"] for r in runs if r["row"] == "prose")
    out: dict[str, Any] = {"runs": runs}
    if prose:
        out["continuations"] = {str(s): continuations(root / f"prose-seed{s}", root / LM_RUN, s) for s in prose}
        out["latency"] = app_latency(root / f"prose-seed{prose[0]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    result_args(ap, [0, 1, 2], runs="runs/bench_interactive")
    args = ap.parse_args()
    root = Path(args.runs)
    jobs = [job(g, s) for g in ROWS for s in args.seeds] + [lm_job()] + [prose_job(root, s) for s in args.seeds]
    sweep_page(args, NAME, jobs, markdown, lambda runs: results(runs, root))


if __name__ == "__main__":
    main()
