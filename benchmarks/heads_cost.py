"""Cost of every output head relative to the softmax; records docs/results/heads_cost.{md,json}.

    python -m benchmarks.heads_cost [--vocab 10000 50257] [--hidden 256 768] [--repeats 5]

Head-only forward + backward on random backbone states (B x T = 4 x 128, three layers for the multi-input
heads; states N(0, 1) as after a LayerNorm, output embedding N(0, 0.1^2), so the logits have a trained LM's
scale), one process, torch's default threads; median of `--repeats` timed runs after one warm-up, every head
timed in the same process as the softmax it is divided by. Goals from the issue: CLR <= 1.15x softmax,
MFS <= MoS(3), MoS(3) <= 1.6x.
"""

from __future__ import annotations

import argparse
from typing import Any

import torch

from benchmarks.common import median_seconds, render, write_results
from genfeat.heads.config import build_head, named_head
from genfeat.losses.nll import nll
from genfeat.nn.outputs import BackboneOutput

NAME = "heads_cost"
HEADS = ["softmax_facet", "sigsoftmax", "mos3", "doc", "softmax+mi", "mfs", "c+mi", "clr20+mi", "clr20,100+mi",
         "pointer_sentinel+mi"]
B, T = 4, 128


def time_head(name: str, d: int, vocab: int, repeats: int, batch: int = B, length: int = T) -> float:
    """Median seconds of one head-only forward + backward on random states of shape (batch, length, d)."""
    torch.manual_seed(0)
    emb = torch.nn.Embedding(vocab, d)
    torch.nn.init.normal_(emb.weight, std=0.1)  # logits ~ N(0, 0.01 d), as a trained LM's (std 1.6 at d=256)
    head = build_head(named_head(name), d, vocab, emb)
    states = [torch.randn(batch, length, d, requires_grad=True) for _ in range(3)]
    out = BackboneOutput(states[-1], all_hidden=tuple(states))
    ids = torch.randint(0, vocab, (batch, length))
    targets = torch.randint(0, vocab, (batch, length))

    kw = {"targets": targets} if getattr(head, "scores_targets", False) else {}  # as CausalLM calls it in training

    def step() -> None:
        loss = nll(head(out, ids, **kw), targets)
        loss.backward()
        head.zero_grad(set_to_none=True)
        emb.zero_grad(set_to_none=True)

    return median_seconds(step, repeats)


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    cols = [f"d={c['d']}, V={c['vocab']:,}" for c in res["configs"]]
    rows = []
    for name in res["heads"]:
        cells = []
        for c in res["configs"]:
            t, base = c["seconds"][name], c["seconds"]["softmax_facet"]
            cells.append(f"{t * 1000:.0f} ms ({t / base:.2f}×)")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    goals = []
    for c in res["configs"]:
        s = c["seconds"]
        clr, mfs, mos = s["clr20+mi"] / s["softmax_facet"], s["mfs"], s["mos3"]
        noise = ", within run-to-run noise" if abs(mfs / mos - 1) < 0.02 else ""
        goals.append(f"- d={c['d']}, V={c['vocab']:,}: CLR:20+Mi / softmax = {clr:.2f} (goal ≤ 1.15: "
                     f"{'met' if clr <= 1.15 else 'not met'}); MFS / MoS(3) = {mfs / mos:.3f} (goal ≤ 1: "
                     f"{'met' if mfs <= mos else 'not met'}{noise}"
                     f"); MoS(3) / softmax = {mos / s['softmax_facet']:.2f} "
                     f"(goal ≤ 1.6: {'met' if mos / s['softmax_facet'] <= 1.6 else 'not met'})")
    return f"""# Output-head cost relative to the softmax

{{header}}Head-only forward + backward, B×T = {B}×{T}, median of {res['repeats']} runs after a warm-up, in one process;
ratio to the softmax head with its facet layer (the thesis's GPT-2 baseline). Head names as thesis C Tables 2.1
and 2.4 (`genfeat.heads.config.HEADS`).

| head | {' | '.join(cols)} |
|---|{'---|' * len(cols)}
{chr(10).join(rows)}

Goals from the issue:

{chr(10).join(goals)}

A K-softmax mixture needs K vocabulary products, so MoS(3) costs about 3× the softmax *head*; the thesis's
Table 2.1 times (MoS(3)/Softmax 1.55× on GPT-2 Small) are whole-model inference times, where the transformer
body dilutes the head's share.
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, nargs="+", default=[10_000, 50_257])
    ap.add_argument("--hidden", type=int, nargs="+", default=[256, 768])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    configs = []
    for d in args.hidden:
        for vocab in args.vocab:
            secs = {}
            for name in HEADS:
                secs[name] = time_head(name, d, vocab, args.repeats)
                print(f"d={d} V={vocab} {name:22s} {secs[name] * 1000:8.1f} ms "
                      f"({secs[name] / secs['softmax_facet']:.2f}x)", flush=True)
            configs.append({"d": d, "vocab": vocab, "seconds": secs})
    print(write_results(NAME, {"heads": HEADS, "configs": configs, "repeats": args.repeats}, markdown))


if __name__ == "__main__":
    main()
