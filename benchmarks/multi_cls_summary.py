"""docs/results/multi_cls_summary.{md,json}: thesis C Table 5.1's analogue collected from the recorded Multi-CLS
pages (`multi_cls.json`, `multi_cls_<task>.json`, written by `benchmarks.multi_cls`); it measures nothing itself.

    python -m benchmarks.multi_cls_summary

One row per task and setting, each task's label counts in turn (test accuracy of the dev-selected runs, mean ±
standard error), and the macro average over the tasks that share one continued-pretraining setting (steps,
heads_lr), label count, rate grid and fine-tuning budget (a budget above `benchmarks.multi_cls.SHORT_FINETUNE_STEPS`
is its own setting), as the thesis averages its GLUE tasks; tasks recorded with another setting are listed but not
averaged with them, and two pages of one task at one setting are refused (the average takes one page per task).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.common import RESULTS, load_result, mean_std, reading, result_sources, summary_main
from benchmarks.multi_cls import DEFAULT_LR, MODELS, SHORT_FINETUNE_STEPS, THESIS_TABLE_5_1, paired, selected_lr

NAME = "multi_cls_summary"


CORE = ("released", "k1", "k5")  # the models every recorded page has; the MTL baseline came later


def collect() -> dict[str, Any]:
    records = {p.stem: load_result(p.stem) for p in sorted(RESULTS.glob("multi_cls*.json"))}
    pages = {name: rec["results"] for name, rec in records.items()
             if "pretrain_steps" in rec["results"]}  # the benchmarks.multi_cls pages only
    names = list(pages)
    tasks = []
    for name, r in pages.items():
        long_ft = r["finetune_steps"] if r["finetune_steps"] > SHORT_FINETUNE_STEPS else None  # as page_name
        setting = {"pretrain_steps": r["pretrain_steps"], "heads_lr": r.get("heads_lr", 0.0), "labels": r["labels"],
                   "lrs": r.get("lrs", [DEFAULT_LR]), "long_finetune_steps": long_ft}
        models, chosen = {}, {}
        for m in MODELS:
            lr, chosen[m] = selected_lr([x for x in r["runs"] if x["model"] == m])
            if chosen[m]:
                models[m] = {"lr": lr, "test_accuracy": [x["test_accuracy"] for x in chosen[m]]}
        machine = records[name]["machine"]
        tasks.append({"page": name, "task": r.get("task", "bbc"), "setting": setting, "models": models,
                      "device": machine.get("gpu") or f"CPU ({machine['cpu']})",
                      "k5_minus_k1": paired(chosen["k5"], chosen["k1"])})
    tasks.sort(key=lambda t: (t["task"], *order(t["setting"])))  # each task's 100 / 1k / all labels in turn
    groups: dict[str, list[dict[str, Any]]] = {}
    for t in sorted(tasks, key=lambda t: order(t["setting"])):
        groups.setdefault(key(t["setting"]), []).append(t)
    macro = []
    for k, ts in groups.items():
        if len(ts) < 2 or any(not set(CORE) <= set(t["models"]) for t in ts):
            continue
        seen: dict[str, str] = {}
        for t in ts:  # a task counted twice would weigh double in the average
            if (other := seen.setdefault(t["task"], t["page"])) != t["page"]:
                raise ValueError(f"pages {other} and {t['page']} both record {t['task']} at {k}: the macro average "
                                 "takes one page per task; record one of them with another setting or remove it")
        macro.append({"setting": k, "tasks": [t["task"] for t in ts],
                      "mean": {m: float(np.mean([np.mean(t["models"][m]["test_accuracy"]) for t in ts]))
                               for m in MODELS if all(m in t["models"] for t in ts)}})
    return {"sources": result_sources(names), "tasks": tasks, "macro": macro}


def order(setting: dict[str, Any]) -> tuple:
    """Where a setting's rows stand: by label count (all last), pretraining steps and heads_lr, fine-tuning budget,
    rate grid."""
    return (setting["labels"] or float("inf"), setting["pretrain_steps"], setting["heads_lr"],
            setting.get("long_finetune_steps") or 0, len(setting["lrs"]), setting["lrs"])


def key(setting: dict[str, Any]) -> str:
    hlr = f", heads_lr {setting['heads_lr']:g}" if setting["heads_lr"] else ""
    lrs = setting.get("lrs", [DEFAULT_LR])
    lr = f"lr {lrs[0]:g}" if len(lrs) == 1 else f"lr selected from {' / '.join(f'{v:g}' for v in lrs)}"
    labels = setting["labels"] or "all"
    ft = f", {n} fine-tuning updates" if (n := setting.get("long_finetune_steps")) else ""
    return f"{labels} labels, {setting['pretrain_steps']} pretraining steps{hlr}, {lr}{ft}"


def thesis_row(labels: int) -> str:
    """Table 5.1's row at a label count (BERT-Base, the GLUE average): Pretrained, MTL, Ours K = 1, Ours K = 5
    (λ 0.1) in the models' columns, and K = 5 - K = 1."""
    t = THESIS_TABLE_5_1[labels]
    return (f"| thesis, {t.glue} (Table 5.1, BERT-Base) | 2 x 10^9 pretraining tokens | {t.pretrained:.2f} | "
            f"{t.mtl:.2f} | {t.k1:.2f} | {t.k5:.2f} | {t.k5 - t.k1:+.2f} |")


def markdown(record: dict[str, Any]) -> str:
    r = record["results"]
    rows = []
    for t in r["tasks"]:
        cells = [mean_std(t["models"][m]["test_accuracy"], 2, scale=100, spread="se") if m in t["models"] else "–"
                 for m in MODELS]
        pair = t.get("k5_minus_k1")
        cells.append(f"{mean_std(pair['diffs'], 2, spread='se')} ({pair['wins']}/{len(pair['diffs'])})" if pair
                     else "–")
        rows.append(f"| {t['task']} ([page]({t['page']}.md)) | {key(t['setting'])}; {t['device']} | "
                    + " | ".join(cells) + " |")
    macro = [f"| **macro average**: {', '.join(g['tasks'])} | {g['setting']} | "
             + " | ".join(f"**{100 * g['mean'][m]:.2f}**" if m in g["mean"] else "–" for m in MODELS) + " | |"
             for g in r["macro"]]
    counts = sorted({t["setting"]["labels"] for t in r["tasks"]}, key=lambda n: n or float("inf"))  # 0 (all) last
    thesis = [thesis_row(n) for n in counts if n in THESIS_TABLE_5_1]
    return f"""# Multi-CLS BERT: Table 5.1's analogue across the real tasks

{{header}}Collected from the recorded pages (each names its command); test accuracy (%) of the runs at the learning
rate selected on validation, mean ± standard error over pretraining x fine-tuning seeds. The macro average is the
mean of the task means, over tasks that share one pretraining setting, label count, rate grid and long fine-tuning
budget (the setting column); a model's average is shown where every task of the setting has it (the MTL baseline:
only the pages recorded since it was added). The last column
is K = 5 minus K = 1 over the runs that share pretraining and fine-tuning seeds (points; pairs K = 5 wins / pairs).

| task | setting | {' | '.join(MODELS.values())} | K = 5 - K = 1, paired |
|---|---|{'---|' * (len(MODELS) + 1)}
{chr(10).join(rows + macro + thesis)}

{reading(record['name'])}
"""


def main() -> None:
    print(summary_main(NAME, collect, markdown))


if __name__ == "__main__":
    main()
