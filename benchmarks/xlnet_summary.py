"""docs/results/xlnet.{md,json}: the XLNet results of the issue in one page, collected from the recorded benchmark
JSONs (it measures nothing itself; each section names the page and command that produced its numbers).

    python -m benchmarks.xlnet_summary

Parts: the dependency toy (benchmarks/xlnet_dependency), pretrain -> fine-tune on BBC News with 100 labels
(benchmarks/xlnet_bbc; every recorded budget, `xlnet_bbc*.json`), training speed against Hugging Face's XLNet
(benchmarks/xlnet_vs_hf).
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.common import RESULTS, load_result, result_sources, summary_main
from benchmarks.xlnet_bbc import INITS

NAME = "xlnet"


def _ms(values: list[float]) -> dict[str, float]:
    v = [100 * x for x in values]
    return {"mean": round(statistics.mean(v), 1), "std": round(statistics.stdev(v), 1) if len(v) > 1 else 0.0,
            "n": len(v)}


def collect() -> dict[str, Any]:
    names = ["xlnet_dependency", "xlnet_vs_hf"] + sorted(p.stem for p in RESULTS.glob("xlnet_bbc*.json"))
    out: dict[str, Any] = {"sources": result_sources(names)}
    if (dep := load_result("xlnet_dependency")) is not None:
        runs = dep["results"]["runs"]
        keys = {"d1_plm_a_first": "D1 joint NLL, permutation LM", "d1_mlm": "D1 joint NLL, masked LM",
                "d2_plm": "D2 fill-in NLL, permutation LM", "d2_ar": "D2 fill-in NLL, left-to-right LM"}
        out["dependency"] = {label: round(statistics.mean(r[k] for r in runs), 3)
                             for k, label in keys.items() if all(k in r for r in runs)}
    out["bbc"] = {}
    for name in (n for n in names if n.startswith("xlnet_bbc")):
        res = load_result(name)["results"]
        acc = {init: _ms([r["test_accuracy"] for r in res["runs"] if r["init_name"] == init]) for init in INITS
               if any(r["init_name"] == init for r in res["runs"])}
        out["bbc"][name] = {"pretrain_steps": res["pretrain_steps"], "corpus": res.get("corpus", "bbc-news"),
                            "test_accuracy": acc}
    if (hf := load_result("xlnet_vs_hf")) is not None:
        res = hf["results"]
        out["vs_hf"] = {"dtype": res["dtype"], "device": hf["machine"].get("device", "cpu"),
                        "rows": [{k: r[k] for k in ("workload", "batch", "seq_len", "genfeat_tokens_per_s",
                                                    "hf_tokens_per_s", "speedup")} for r in res["rows"]]}
    return out


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    parts = []
    if "dependency" in res:
        rows = "\n".join(f"| {k} | {v:.3f} |" for k, v in res["dependency"].items())
        parts.append("## Dependency toy ([xlnet_dependency](xlnet_dependency.md): optima, per-seed checks)\n\n"
                     "Mean NLL in nats over seeds. D1 optimum: ln 2 = 0.693 for the permutation LM, the masked LM "
                     "cannot go below 2 ln 2 = 1.386; D2: 0 for the permutation LM, ln 16 = 2.773 for the "
                     f"left-to-right LM.\n\n| quantity | NLL |\n|---|---|\n{rows}")
    for name, b in res.get("bbc", {}).items():
        acc = b["test_accuracy"]
        rows = "\n".join(f"| {INITS[i]} | {a['mean']:.1f} ± {a['std']:.1f} | {a['n']} |" for i, a in acc.items())
        verdict = ""
        if {"plm", "mlm", "scratch"} <= set(acc):
            m = {i: a["mean"] for i, a in acc.items()}
            verdict = (f"\n\nThesis direction, on the means: pretraining helps (PLM > no pretraining): "
                       f"**{'yes' if m['plm'] > m['scratch'] else 'no'}**; permutation LM ≥ masked LM: "
                       f"**{'yes' if m['plm'] >= m['mlm'] else 'no'}**.")
        parts.append(f"## Pretrain -> fine-tune on BBC News, 100 labels, {b['pretrain_steps']:,} pretraining steps on "
                     f"{b['corpus']} ([{name}]({name}.md): probes, reading)\n\n| initialisation | test accuracy % "
                     f"| seeds |\n|---|---|---|\n{rows}{verdict}")
    if "vs_hf" in res:
        h = res["vs_hf"]
        rows = "\n".join(f"| {r['workload']} | {r['batch']}×{r['seq_len']} | {r['genfeat_tokens_per_s']:,.0f} | "
                         f"{r['hf_tokens_per_s']:,.0f} | {r['speedup']:.2f}× |" for r in h["rows"])
        parts.append(f"## Speed against Hugging Face XLNet ([xlnet_vs_hf](xlnet_vs_hf.md): config, memory)\n\n"
                     f"Forward + backward + AdamW, {h['dtype']} on {h['device']}; goal ≥ 1.3×.\n\n| workload | "
                     f"batch × T | genfeat tokens/s | HF tokens/s | speed-up |\n|---|---|---|---|---|\n{rows}"
                     + ("" if h["device"].startswith("cuda") else "\n\nNo GPU / bf16 row: the sessions that ran this "
                        "benchmark had no GPU."))
    sources = "\n".join(f"- {n}: `{s['command']}` ({s['date']}, {s['machine']})"
                        for n, s in res["sources"].items())
    body = "\n\n".join(parts)
    return f"# XLNet results\n\n{{header}}\n{body}\n\n## Sources\n\n{sources}\n"


def main() -> None:
    print(summary_main(NAME, collect, markdown))


if __name__ == "__main__":
    main()
