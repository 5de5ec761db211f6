"""Speed of the multi-facet sentence model (issue: training throughput, the E-step, inference beside MiniLM), at the
`bbc_glove50` preset's shapes (K = 10, 50d targets, batches of 64 sentences with up to 30 target words):

    E-step        `losses.nnsc.nnsc_coefficients` on a batch (B = 64, E = 50, K = 10, N = 30) against the same
                  function called once per example (a Python loop over the batch), for the training solver (RMSprop,
                  60 iterations) and the exact one (projected gradient / FISTA, 100 iterations, no early stop)
    training      sentences per second of full training steps (forward, both E-steps of Eq. 3.2, backward, AdamW)
    inference     sentences per second of `recipes.facets.sentence_facets` (K facets per sentence) against
                  MiniLM-L6's mean-pooled embeddings of the same sentences, batch 64, eval mode

    python -m benchmarks.facets_speed [--repeats 5] [--sentences 1024]

Sentences: the BBC News validation articles' sentences (`genfeat data fetch bbc-news`); weights are freshly
initialised (speed does not depend on them); the target table is random unit vectors of GloVe's shape. Medians of
interleaved rounds in one process. Writes docs/results/facets_speed.{md,json}.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

import torch

from benchmarks.common import interleaved_median_seconds, reading, render, timing_args, write_results
from genfeat.data.facets import build_vocab, collate, sentence_examples
from genfeat.data.sentences import documents
from genfeat.losses.nnsc import NNSCObjective, nnsc_coefficients
from genfeat.models.facets import FacetModel

NAME = "facets_speed"


def e_step(repeats: int) -> list[dict[str, Any]]:
    g = torch.Generator().manual_seed(0)
    F = torch.nn.functional.normalize(torch.randn(64, 50, 10, generator=g), dim=1)
    W = torch.nn.functional.normalize(torch.randn(64, 50, 30, generator=g), dim=1)
    out = []
    for solver, kw in (("rmsprop", {"iters": 60}), ("pgd", {"iters": 100, "tol": 0.0})):
        def batched(solver=solver, kw=kw):
            nnsc_coefficients(F, W, 0.4, solver, generator=torch.Generator().manual_seed(1), **kw)

        def loop(solver=solver, kw=kw):
            gen = torch.Generator().manual_seed(1)
            for b in range(F.size(0)):
                nnsc_coefficients(F[b: b + 1], W[b: b + 1], 0.4, solver, generator=gen, **kw)
        t = interleaved_median_seconds({"batched": batched, "loop": loop}, repeats)
        out.append({"solver": solver, "batched_ms": 1e3 * t["batched"], "loop_ms": 1e3 * t["loop"],
                    "ratio": t["loop"] / t["batched"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    timing_args(ap, repeats=5)
    ap.add_argument("--sentences", type=int, default=1024)
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    from genfeat.models.facets.inference import sentence_facets
    from genfeat.registry import RECIPES

    cfg = RECIPES["facets"].presets["bbc_glove50"]()
    docs = documents("bbc-news", 0, dedupe=False)
    sentences = [s for d in docs["valid"] for s in d][: args.sentences]
    vocab = build_vocab(docs["train"], cfg.data.min_count)
    torch.manual_seed(0)
    model = FacetModel(dataclasses.replace(cfg.model, vocab_size=len(vocab), max_len=cfg.data.max_len))
    table = torch.nn.functional.normalize(torch.randn(len(vocab), cfg.model.d_target), dim=1)
    ex = sentence_examples(docs["valid"], vocab, vocab, cfg.data.max_len, cfg.data.max_targets, 0)
    batches = [collate(ex.inputs[a: a + 64], ex.targets[a: a + 64]) for a in range(0, 64 * 8, 64)]
    lc = cfg.loss
    objective = NNSCObjective(table, lc.lam, lc.solver, lc.iters, 0, lc.neg_weight)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    state = {"i": 0}

    def train_step():
        b = batches[state["i"] % len(batches)]
        state["i"] += 1
        loss, _, _ = objective(model.train(), b)
        opt.zero_grad()
        loss.backward()
        opt.step()

    from genfeat.models.bert import bert_dir, from_pretrained, mean_pool
    from genfeat.models.bert.tokenizer import encode, load_wordpiece

    src = bert_dir("minilm-l6")
    bert, _ = from_pretrained(src)
    bert.eval()
    tok = load_wordpiece(src)

    @torch.no_grad()
    def minilm():
        for a in range(0, len(sentences), 64):
            x = encode(tok, sentences[a: a + 64], max_len=128)
            mean_pool(bert(**x).hidden, x["attention_mask"])

    def facets():
        sentence_facets(model.eval(), vocab, sentences, batch=64)

    t0 = time.perf_counter()
    steps = interleaved_median_seconds({"train": train_step}, args.repeats * 4)
    infer = interleaved_median_seconds({"facets": facets, "minilm": minilm}, args.repeats)
    results = {"e_step": e_step(args.repeats), "train_step_s": steps["train"],
               "train_sentences_per_s": 64 / steps["train"], "sentences": len(sentences),
               "facets_sentences_per_s": len(sentences) / infer["facets"],
               "minilm_sentences_per_s": len(sentences) / infer["minilm"],
               "params": sum(p.numel() for p in model.parameters()), "wall_s": time.perf_counter() - t0}
    print(write_results(NAME, results, markdown))


def markdown(record: dict[str, Any]) -> str:
    r = record["results"]
    rows = "\n".join(f"| {e['solver']} | {e['batched_ms']:.1f} | {e['loop_ms']:.1f} | **{e['ratio']:.1f}x** |"
                     for e in r["e_step"])
    return f"""# Multi-facet sentence model: speed

{{header}}Shapes of the `bbc_glove50` preset (K = 10, 50d targets, {r['params'] / 1e6:.2f}M parameters); medians of
interleaved rounds in one process (module docstring of `benchmarks/facets_speed.py`).

E-step of one batch (B = 64 sentences, N = 30 target words, K = 10 facets), batched against a loop over the examples
(the issue's goal: at least 20x):

| solver | batched ms | per-example loop ms | speed-up |
|---|---|---|---|
{rows}

| what | sentences / s |
|---|---|
| training (forward, two E-steps, backward, AdamW; batch 64) | {r['train_sentences_per_s']:.0f} |
| inference: K = 10 facets per sentence (`sentence_facets`) | {r['facets_sentences_per_s']:.0f} |
| inference: MiniLM-L6 mean pooling, same {r['sentences']:,} sentences | {r['minilm_sentences_per_s']:.0f} |

{reading(record['name'])}
"""


if __name__ == "__main__":
    main()
