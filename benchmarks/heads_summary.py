"""docs/results/heads.{md,json}: the output-head results of the issue in one page, collected from the recorded
benchmark JSONs (it measures nothing itself; each number links to the page and command that produced it).

    python -m benchmarks.heads_summary
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.common import load_result, result_sources, summary_main

NAME = "heads"
PARTS = ["heads_synthetic", "heads_ptb", "heads_pretrained", "heads_rerank", "heads_bottleneck", "heads_cost",
         "heads_entity_copy",
         "softmax_bottleneck_ratios"]


def _means(runs: list[dict[str, Any]], key: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """Mean test perplexity and seed count per `key` of the runs (joined with ':')."""
    rows: dict[str, list[float]] = {}
    for r in runs:
        rows.setdefault(":".join(str(r[k]) for k in key), []).append(r["test_ppl"])
    return {k: {"mean": round(statistics.mean(v), 2), "seeds": len(v)} for k, v in rows.items()}


def collect() -> dict[str, Any]:
    out: dict[str, Any] = {"sources": result_sources(PARTS)}
    if (syn := load_result("heads_synthetic")) is not None:
        res = syn["results"]
        by_head: dict[str, list[float]] = {}
        for r in res["runs"]:  # one record a run: the head, the seed, the recipe's train_ce_group (diagonal CE)
            by_head.setdefault(r["head"], []).append(r["train_ce_group"])
        out["synthetic"] = {h: round(statistics.mean(v), 4) for h, v in by_head.items()}
        out["synthetic_bound"] = {"log4": round(res["log4"], 4), "log2": 0.6931}
    if (ptb := load_result("heads_ptb")) is not None:
        out["ptb_test_ppl"] = _means(ptb["results"]["runs"], ("arch", "head"))
    for part, key, digits in (("heads_pretrained", "pretrained_test_ppl", 2), ("heads_rerank", "rerank_test_ppl", 1)):
        if (rec := load_result(part)) is not None:
            mt = rec["results"]["model_seconds"]
            out[key] = {h: v | {"model_time_ratio": round(mt[h] / mt["softmax"], digits)}
                        for h, v in _means(rec["results"]["runs"], ("head",)).items()}
    if (bn := load_result("heads_bottleneck")) is not None:
        out["bottleneck_test_ppl"] = _means(bn["results"]["runs"], ("head", "dim"))
    if (cost := load_result("heads_cost")) is not None:
        out["cost_ratio_to_softmax"] = {
            f"d={c['d']},V={c['vocab']}": {h: round(t / c["seconds"]["softmax_facet"], 2)
                                           for h, t in c["seconds"].items()}
            for c in cost["results"]["configs"]}
    if (ent := load_result("heads_entity_copy")) is not None:
        by_head: dict[str, list[dict[str, Any]]] = {}
        for r in ent["results"]["runs"]:
            by_head.setdefault(r["head"], []).append(r["rouge"]["proper"])
        out["entity_copy_proper_noun_f1"] = {
            h: {"context": round(statistics.mean(x["context_f1"] for x in rs), 2),
                "continuation": round(statistics.mean(x["continuation_f1"] for x in rs), 2), "seeds": len(rs)}
            for h, rs in by_head.items()}
    return out


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    parts = []
    if "synthetic" in res:
        rows = "\n".join(f"| {h} | {v:.4f} |" for h, v in res["synthetic"].items())
        parts.append(f"## Synthetic multimodal task ([heads_synthetic](heads_synthetic.md))\n\nCross-entropy on the "
                     f"diagonal contexts (softmax bound log 4 = {res['synthetic_bound']['log4']}, reachable log 2 = "
                     f"0.6931), mean over seeds:\n\n| head | CE |\n|---|---|\n{rows}")
    if "ptb_test_ppl" in res:
        rows = "\n".join(f"| {k.split(':')[0]} | {k.split(':')[1]} | {v['mean']:.2f} | {v['seeds']} |"
                         for k, v in res["ptb_test_ppl"].items())
        parts.append(f"## PTB from scratch ([heads_ptb](heads_ptb.md): std, parameters, head and model time there)\n\n"
                     f"| backbone | head | test ppl | seeds |\n|---|---|---|---|\n{rows}")
    for key, title in (("pretrained_test_ppl", "A pretrained GPT-2-shaped LM fine-tuned on BBC News "
                                               "([heads_pretrained](heads_pretrained.md))"),
                       ("rerank_test_ppl", "The two-stage reranker Rs2 ([heads_rerank](heads_rerank.md))")):
        if key in res:
            rows = "\n".join(f"| {h} | {v['mean']:.2f} | {v['model_time_ratio']}× | {v['seeds']} |"
                             for h, v in res[key].items())
            parts.append(f"## {title}\n\n| head | test ppl | model time / softmax | seeds |\n|---|---|---|---|\n{rows}")
    if "bottleneck_test_ppl" in res:
        cells = res["bottleneck_test_ppl"]
        heads = list(dict.fromkeys(k.split(":")[0] for k in cells))
        dims = sorted({int(k.split(":")[1]) for k in cells})
        rows = "\n".join(f"| {h} | " + " | ".join(f"{cells[f'{h}:{d}']['mean']:.2f} ({cells[f'{h}:{d}']['seeds']})"
                                                  if f"{h}:{d}" in cells else "–" for d in dims) + " |" for h in heads)
        parts.append(f"## The head's input width ([heads_bottleneck](heads_bottleneck.md))\n\nTest ppl (seeds) "
                     f"against d_head:\n\n| head | {' | '.join(f'd = {d}' for d in dims)} |\n"
                     f"|---|{'---|' * len(dims)}\n{rows}")
    if "cost_ratio_to_softmax" in res:
        cols = list(res["cost_ratio_to_softmax"])
        heads = list(next(iter(res["cost_ratio_to_softmax"].values())))
        rows = "\n".join(f"| {h} | " + " | ".join(f"{res['cost_ratio_to_softmax'][c][h]:.2f}×" for c in cols) + " |"
                         for h in heads)
        parts.append(f"## Cost ([heads_cost](heads_cost.md))\n\nHead-only forward + backward time / softmax:\n\n"
                     f"| head | {' | '.join(cols)} |\n|---|{'---|' * len(cols)}\n{rows}")
    if "entity_copy_proper_noun_f1" in res:
        rows = "\n".join(f"| {h} | {v['context']:.2f} | {v['continuation']:.2f} | {v.get('seeds', 1)} |"
                         for h, v in res["entity_copy_proper_noun_f1"].items())
        parts.append(f"## Entity copying on Austen ([heads_entity_copy](heads_entity_copy.md))\n\nProper-noun ROUGE-1 "
                     f"F1 ×100 of generated text, mean over seeds:\n\n| head | with the context | with the "
                     f"continuation | seeds |\n|---|---|---|---|\n{rows}")
    parts.append("## Softmax bottleneck\n\nMin-eigenvalue ratios on GloVe 6B 50d and an LM's output embeddings, with "
                 "the plot: [softmax_bottleneck_ratios](softmax_bottleneck_ratios.md).")
    sources = "\n".join(f"- {n}: `{s['command']}` ({s['date']})" for n, s in res["sources"].items())
    return f"""# Output heads (thesis C §2.2-2.4): all results

{{header}}Collected from the benchmark records below (this page measures nothing itself).

{chr(10).join(p + chr(10) for p in parts)}
Sources:

{sources}
"""


def main() -> None:
    print(summary_main(NAME, collect, markdown))


if __name__ == "__main__":
    main()
