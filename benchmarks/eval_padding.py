"""Evaluation with dynamic padding (`tasks.base.predict_rows(trim_padding=True)`) against rows padded to the split's
longest example, on the real validation splits the Multi-CLS fine-tuning evaluates (MiniLM-L6 as a sequence
classifier, batch 32): seconds per pass as interleaved medians in one process, the ratio, and the largest
difference of the logits.

    python -m benchmarks.eval_padding [--repeats 3]

Writes docs/results/eval_padding.{md,json}.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import torch

from benchmarks.common import interleaved_median_seconds, write_results
from genfeat.data.labelled import load_labelled
from genfeat.models.multi_cls.inference import load_classifier
from genfeat.tasks.base import predict_rows
from genfeat.tasks.classification import encode_rows

NAME = "eval_padding"
CASES = (("wordnet-lexnames", 64), ("debian-sections", 128), ("bbc", 128))


def measure(task: str, max_len: int, repeats: int) -> dict[str, Any]:
    data = load_labelled(task)[0]
    n_labels = int(max(int(y.max()) for _, y in data.values())) + 1
    model, tok, _ = load_classifier("minilm-l6", n_labels)
    pairs, y = data["valid"]
    rows = encode_rows(tok, pairs, y, np.arange(len(y)), max_len)
    inputs = {k: v for k, v in rows.items() if k != "labels"}
    torch.manual_seed(0)
    model.eval()
    full, trimmed = predict_rows(model, inputs), predict_rows(model, inputs, trim_padding=True)
    t = interleaved_median_seconds({"padded": lambda: predict_rows(model, inputs),
                                    "dynamic": lambda: predict_rows(model, inputs, trim_padding=True)}, repeats)
    lengths = inputs["attention_mask"].sum(1).float()
    return {"task": task, "max_len": max_len, "rows": len(y), "width": int(inputs["input_ids"].size(1)),
            "mean_length": float(lengths.mean()), "padded_s": t["padded"], "dynamic_s": t["dynamic"],
            "ratio": t["padded"] / t["dynamic"], "max_abs_diff": float((full - trimmed).abs().max()),
            "same_argmax": bool((full.argmax(-1) == trimmed.argmax(-1)).all())}


def markdown(record: dict[str, Any]) -> str:
    rows = "\n".join(f"| {r['task']} | {r['rows']:,} | {r['width']} | {r['mean_length']:.1f} | {r['padded_s']:.2f} | "
                     f"{r['dynamic_s']:.2f} | **{r['ratio']:.2f}x** | {r['max_abs_diff']:.1e} | "
                     f"{'yes' if r['same_argmax'] else 'no'} |" for r in record["results"]["cases"])
    return f"""# Evaluation with dynamic padding

{{header}}MiniLM-L6 (as released) as a sequence classifier on each task's validation split, batch 32; padded: every
chunk at the split's longest row (the width); dynamic: rows visited shortest first, each chunk cut to its longest
row. Medians of {record['results']['repeats']} interleaved passes in one process.

| task | rows | width | mean tokens | padded s | dynamic s | speed-up | max logit diff | same predictions |
|---|---|---|---|---|---|---|---|---|
{rows}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    cases = [measure(task, max_len, args.repeats) for task, max_len in CASES]
    print(write_results(NAME, {"repeats": args.repeats, "cases": cases}, markdown))


if __name__ == "__main__":
    main()
