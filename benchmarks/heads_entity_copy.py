"""Entity copying in generation (thesis C §2.4, Table 2.5 protocol at CPU scale); records
docs/results/heads_entity_copy.{md,json}.

    genfeat data fetch austen
    python -m benchmarks.heads_entity_copy [--heads softmax+mi c+mi clr20+mi] [--prompts 600] [--seeds 0]

The six Austen novels (names everywhere: Elinor, Darcy, Mrs. Jennings ...) as paragraphs, punctuation split off
words; a GPT-style decoder (2 layers, d=128, context 128, 10k-word vocabulary, the quickstart budget of 3,200
steps of 4x128 tokens) per head, only the head differing. Then `--prompts` prompts of 64 tokens from the test
novels' text, 32 tokens generated per prompt with top-k 40 sampling (the same random stream for every model),
and ROUGE-1 F1 (multiset unigram overlap) of the generated tokens against the prompt ("context") and against the
true next 32 tokens ("continuation"), for all word tokens, capitalised tokens, and proper nouns; averaged over
prompts (an empty restricted multiset scores 0).

Proper nouns: no tagger is available offline, so a corpus statistic stands in for spaCy's PROPN: a capitalised
word type seen >= 5 times in training whose lower-case form occurs less than 5% as often ("Elinor", "Bath", "Mr";
not "The", "She"; "I" excluded). Deviation from the thesis: Wikipedia / GPT-2 Small / 6,000 prompts of 50 tokens
there; a small model trained from scratch on Austen here.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.common import mean_std, reading, render, result_args, write_results
from benchmarks.sweep import Job, Sweep
from genfeat.api import load
from genfeat.data.corpora import load_corpus
from genfeat.data.lm_data import prepare_lm_data
from genfeat.heads.config import HEADS, LABELS
from genfeat.models.sampling import sample
from genfeat.registry import RECIPES

NAME = "heads_entity_copy"
TOKEN = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|[0-9]+|[^\sA-Za-z0-9]")


def write_corpus(root: Path) -> Path:
    """Austen as paragraphs (blank lines separate them), punctuation split off words, in dir: layout."""
    out = root / "austen-paragraphs"
    if (out / "test.txt").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    for split, lines in load_corpus("austen").items():
        paras, cur = [], []
        for line in [*lines, ""]:
            if line.strip():
                cur.extend(TOKEN.findall(line))
            elif cur:
                paras.append(" ".join(cur))
                cur = []
        (out / f"{split}.txt").write_text("\n".join(paras) + "\n")
    return out


def proper_nouns(train_text: str, min_count: int = 5, max_lower_ratio: float = 0.05) -> set[str]:
    counts = Counter(train_text.split())
    return {w for w, c in counts.items() if w.istitle() and w != "I" and c >= min_count and w.isalpha()
            and counts.get(w.lower(), 0) < max_lower_ratio * c}


def rouge1_f1(gen: list[str], ref: list[str]) -> float:
    if not gen or not ref:
        return 0.0
    overlap = sum((Counter(gen) & Counter(ref)).values())
    if overlap == 0:
        return 0.0
    p, r = overlap / len(gen), overlap / len(ref)
    return 2 * p * r / (p + r)


def config(corpus: Path, head: str, seed: int, steps: int) -> Any:
    cfg = RECIPES["lm"].presets["quickstart"]()
    return dataclasses.replace(
        cfg, seed=seed,
        data=dataclasses.replace(cfg.data, corpus=f"dir:{corpus}", seq_len=128, batch_size=4, vocab_size=10_000),
        model=dataclasses.replace(cfg.model, max_len=128, head=HEADS[head]),
        train=dataclasses.replace(cfg.train, max_steps=steps, eval_every=steps // 4))


def evaluate(lm, tok, tokens: np.ndarray, nouns: set[str], n_prompts: int, seed: int) -> dict[str, Any]:
    L, G = 64, 32
    starts = np.linspace(0, len(tokens) - L - G - 1, n_prompts).astype(np.int64)
    tokens = np.asarray(tokens, dtype=np.int64)
    prompts = torch.from_numpy(np.stack([tokens[s: s + L] for s in starts]))
    gen = torch.cat([sample(lm, prompts[a: a + 100], G, top_k=40, generator=torch.Generator().manual_seed(seed + a))
                     for a in range(0, n_prompts, 100)])[:, L:]
    words = tok.itos
    filters = {"all": lambda w: w.isalpha(), "uppercase": lambda w: w[:1].isupper() and w.isalpha(),
               "proper": lambda w: w in nouns}
    out: dict[str, Any] = {}
    for name, keep in filters.items():
        ctx_f1, cont_f1, n_gen, n_new = [], [], [], []
        for i, s in enumerate(starts):
            g = [words[t] for t in gen[i].tolist() if keep(words[t])]
            c = [words[t] for t in tokens[s: s + L] if keep(words[t])]
            r = [words[t] for t in tokens[s + L: s + L + G] if keep(words[t])]
            ctx_f1.append(rouge1_f1(g, c))
            cont_f1.append(rouge1_f1(g, r))
            n_gen.append(len(g))
            n_new.append(sum(w not in set(c) for w in g))
        out[name] = {"context_f1": 100 * statistics.mean(ctx_f1), "continuation_f1": 100 * statistics.mean(cont_f1),
                     "per_prompt": statistics.mean(n_gen), "new_per_prompt": statistics.mean(n_new)}
    out["example"] = {"prompt": tok.decode(prompts[0].tolist()), "generated": tok.decode(gen[0].tolist())}
    return out


def job(corpus: Path, head: str, seed: int, steps: int) -> Job:
    cfg = config(corpus, head, seed, steps)
    return Job(f"{head}-seed{seed}", {"head": head, "seed": seed},
               "lm", cfg, group=head)


def evaluated(run_dir: Path, rec: dict[str, Any], corpus: Path, nouns: set[str], args) -> dict[str, Any]:
    """The run's record with its entity-copy evaluation (kept in the run directory's entity.json)."""
    done = run_dir / "entity.json"
    if not done.exists():
        cfg = config(corpus, rec["head"], rec["seed"], args.steps)
        tok, streams = prepare_lm_data(cfg.data)
        lm, _ = load(run_dir)
        with torch.no_grad():
            rouge = evaluate(lm, tok, streams["test"], nouns, args.prompts, rec["seed"])
        done.write_text(json.dumps(rouge, indent=1))
        print(rec["head"], rec["seed"], json.dumps({k: v for k, v in rouge.items() if k != "example"}), flush=True)
    return {"head": rec["head"], "seed": rec["seed"], "test_ppl": rec["test_ppl"], "params": rec["params"],
            "device": rec["device"], "rouge": json.loads(done.read_text())}


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    rows = []
    for head in res["heads"]:
        runs = [r for r in res["runs"] if r["head"] == head]
        if not runs:
            continue

        def c(kind, key, runs=runs):
            return mean_std([r["rouge"][kind][key] for r in runs], 2)
        ppl = [r["test_ppl"] for r in runs]
        ppl_std = f" ± {statistics.stdev(ppl):.1f}" if len(ppl) > 1 else ""
        rows.append(f"| {LABELS.get(head, head)} | {statistics.mean(ppl):.1f}{ppl_std} | "
                    f"{c('all', 'context_f1')} | {c('all', 'continuation_f1')} | {c('uppercase', 'context_f1')} | "
                    f"{c('uppercase', 'continuation_f1')} | {c('proper', 'context_f1')} | "
                    f"{c('proper', 'continuation_f1')} | {c('proper', 'per_prompt')} | "
                    f"{c('proper', 'new_per_prompt')} |")
    ex = res["runs"][0]["rouge"]["example"] if res["runs"] else {}
    return f"""# Entity copying in generation: ROUGE-1 F1 with the context and the continuation (thesis C Table 2.5)

{{header}}Austen's six novels, punctuation split off words, one paragraph per line; a 2-layer d=128 GPT-style decoder
with a 128-token context and a 10,000-word vocabulary trained for {res['steps']} steps of 4×128 tokens per head (only
the head differs; seeds {record['seeds']}). {res['prompts']} prompts of 64 test tokens, 32 tokens generated each with
top-k 40 sampling (within a seed, the same random stream for every model). ROUGE-1 F1 ×100 of the generated tokens
vs the prompt ("context") and vs the true next 32 tokens ("cont."), over word tokens, capitalised tokens and proper
nouns ({res['n_proper_nouns']} types by the corpus statistic in the benchmark's docstring); proper nouns generated per
prompt and how many of them are not in the prompt.

| head | test ppl | all: context | all: cont. | upper: context | upper: cont. | proper: context | proper: cont. \
| proper / prompt | new proper / prompt |
|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Thesis direction (Table 2.5, GPT-2 Small on Wikipedia): Softmax + C + Mi copies proper nouns from the context 26% more
than Softmax + Mi (16.66 vs 13.20) and matches the continuation's 14% more (7.55 vs 6.65).

{reading(NAME)}

Example (first prompt, first model): *{ex.get('prompt', '')}* → **{ex.get('generated', '')}**
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heads", nargs="+", default=["softmax+mi", "c+mi", "clr20+mi"])
    ap.add_argument("--steps", type=int, default=3200)
    ap.add_argument("--prompts", type=int, default=600)
    result_args(ap, [0], runs="runs/bench_entity_copy")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    root = Path(args.runs)
    corpus = write_corpus(root)
    nouns = proper_nouns((corpus / "train.txt").read_text())
    print(f"{len(nouns)} proper-noun types, e.g. {sorted(nouns)[:12]}", flush=True)
    sweep = Sweep.from_args(args)
    jobs = [job(corpus, head, seed, args.steps) for seed in args.seeds for head in args.heads]
    runs = [evaluated(sweep.path(j), rec, corpus, nouns, args) for j in jobs if (rec := sweep.result(j)) is not None]
    if args.train_only:
        return
    print(write_results(NAME, {"heads": args.heads, "steps": args.steps, "prompts": args.prompts,
                               "n_proper_nouns": len(nouns), "runs": runs},
                        markdown, seeds=args.seeds, machine=sweep.machine()))


if __name__ == "__main__":
    main()
