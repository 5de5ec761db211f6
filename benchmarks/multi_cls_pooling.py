"""What Eq. 5.4's mean subtraction leaves at the start of fine-tuning (thesis C §5.2.1.6, the sum-aggregation
ablation of Table 5.2): for continued-pretraining runs of K facets, the pooled vector of each training text under
Eq. 5.4, Σ_k (W_k - W̄) h_k, and under the sum, Σ_k W_k h_k (W_k: the pretraining heads' W_{O,k}, biases 0), and how
alike the K facet states are. Records docs/results/multi_cls_pooling.{md,json}.

    python -m benchmarks.multi_cls_pooling --pretrained RUN [RUN ...] [--tasks wordnet-lexnames debian-sections]
                                           [--texts 128] [--max-len 64]

Per (run, task): mean norm of each pooled vector, their ratio, the relative spread between texts
(mean ||c_i - c̄|| / mean ||c_i||: how much the vector the classifier starts from varies with the text) and the mean
cosine between a text's facet states (1: collapsed facets, for which Eq. 5.4 gives exactly zero).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import reading, render, write_results
from genfeat.analysis.facet_pooling import pooled_stats

NAME = "multi_cls_pooling"


def measure(run: str, task: str, texts: int, max_len: int) -> dict[str, Any]:
    import numpy as np

    from genfeat.data.labelled import load_labelled
    from genfeat.models.multi_cls.inference import load_classifier
    from genfeat.tasks.classification import encode_rows

    pairs, y = load_labelled(task)[0]["train"]
    clf, tok, _ = load_classifier(run, int(y.max()) + 1, aggregation="sum")
    clf.eval()
    b = encode_rows(tok, pairs, y, np.arange(min(texts, len(y))), max_len)
    with torch.no_grad():
        h = clf.facet_states(**{k: v for k, v in b.items() if k != "labels"})  # (B, K, D)
    return {"run": Path(run).name, "task": task, "texts": int(h.size(0))} | pooled_stats(h, clf.pooler.weight.detach())


def markdown(record: dict[str, Any]) -> str:
    rows = [f"| {r['run']} | {r['task']} | {r['norm_reparam']:.2f} | {r['norm_sum']:.2f} | "
            f"{r['norm_reparam'] / r['norm_sum']:.3f} | {r['spread_reparam']:.3f} | {r['spread_sum']:.3f} | "
            f"{r['facet_cosine']:.3f} |" for r in record["results"]["rows"]]
    res = record["results"]
    return f"""# Eq. 5.4 against the sum at the start of fine-tuning

{{header}}Pooled vectors of the first {res['texts']} training texts ({res['max_len']} tokens) from the
pretraining heads' W_k (`benchmarks/multi_cls_pooling.py`). Relative spread: mean ||c_i - c̄|| / mean ||c_i|| over
the texts. Facet cosine: mean cosine between two facet states of one text (1: collapsed).

| pretraining run | task | norm, Eq. 5.4 | norm, sum | ratio | spread, Eq. 5.4 | spread, sum | facet cosine |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pretrained", nargs="+", help="multi_cls_pretrain run directories (K > 1)")
    ap.add_argument("--tasks", nargs="+", default=["wordnet-lexnames", "debian-sections"])
    ap.add_argument("--texts", type=int, default=128)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    if not args.pretrained:
        ap.error("--pretrained RUN ... is required (multi_cls_pretrain run directories)")
    rows = [measure(run, task, args.texts, args.max_len) for run in args.pretrained for task in args.tasks]
    print(write_results(NAME, {"rows": rows, "texts": args.texts, "max_len": args.max_len}, markdown))


if __name__ == "__main__":
    main()
