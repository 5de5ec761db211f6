"""Cost of every output head relative to the softmax; records docs/results/heads_cost.{md,json}.

    python -m benchmarks.heads_cost [--vocab 10000 50257] [--hidden 256 768] [--repeats 5] [--model-heads ...]

Head-only forward + backward on random backbone states (B x T = 4 x 128, three layers for the multi-input
heads; states N(0, 1) as after a LayerNorm, output embedding N(0, 0.1^2), so the logits have a trained LM's
scale), one process, torch's default threads; median of `--repeats` rounds after one warm-up, each round
timing every head once in turn (a slow spell of the machine touches all heads alike); heads are called as
training calls them (with the targets where the head has a target-only path). Then the whole model, as
thesis C Table 2.1 times it: a GPT-2 Small-shaped decoder (12 layers, d=768, 12 heads, V=50,257, random weights)
with each of `--model-heads`, training step (forward + backward) and inference (forward without gradients),
B x T = 4 x 128, interleaved the same way.
Goals from the issue: CLR <= 1.15x softmax, MFS <= MoS(3), MoS(3) <= 1.6x.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import torch

from benchmarks.common import interleaved_median_seconds, render, write_results
from genfeat.heads.config import build_head, named_head
from genfeat.losses.nll import nll
from genfeat.nn.outputs import BackboneOutput

NAME = "heads_cost"
HEADS = ["softmax_facet", "sigsoftmax", "mos3", "doc", "softmax+mi", "mfs", "c", "clr20", "c+mi", "clr20+mi",
         "clr20,100+mi", "pointer_sentinel+mi"]
MODEL_HEADS = ["softmax_facet", "mos3", "mfs", "c+mi", "clr20+mi"]
B, T = 4, 128


def head_step(name: str, d: int, vocab: int, batch: int = B, length: int = T) -> Callable[[], None]:
    """One head-only forward + backward on random states of shape (batch, length, d), as training calls it."""
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
        for s in states:
            s.grad = None

    return step


def time_heads(names: list[str], d: int, vocab: int, repeats: int, batch: int = B,
               length: int = T) -> dict[str, float]:
    """Median seconds of one head-only forward + backward per head, interleaved in one process."""
    return interleaved_median_seconds({n: head_step(n, d, vocab, batch, length) for n in names}, repeats)


def model_step(name: str, train: bool, batch: int = B, length: int = T) -> Callable[[], None]:
    """A GPT-2 Small-shaped decoder with head `name`: a training step (forward + backward of the NLL) or an
    inference forward (no gradients), on random ids."""
    from genfeat.models.gpt import GPTConfig, build_gpt_lm

    torch.manual_seed(0)
    vocab = 50_257
    lm = build_gpt_lm(GPTConfig(vocab_size=vocab, n_layer=12, n_head=12, d_model=768, max_len=length, dropout=0.0,
                                head=named_head(name))).train(train)
    x = torch.randint(0, vocab, (batch, length))
    y = torch.randint(0, vocab, (batch, length))

    def step() -> None:
        if train:
            nll(lm(x, targets=y)[0], y).backward()
            lm.zero_grad(set_to_none=True)
        else:
            with torch.no_grad():
                nll(lm(x, targets=y)[0], y)

    return step


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
        r = {h: t / s["softmax_facet"] for h, t in s.items()}
        goals.append(f"- d={c['d']}, V={c['vocab']:,}: CLR:20 / softmax = {r['clr20']:.2f}, CLR:20+Mi / Softmax+Mi = "
                     f"{s['clr20+mi'] / s['softmax+mi']:.2f}, CLR:20+Mi / softmax = {r['clr20+mi']:.2f} (goal ≤ 1.15); "
                     f"MFS / MoS(3) = {s['mfs'] / s['mos3']:.2f} (goal ≤ 1); MoS(3) / softmax = {r['mos3']:.2f} "
                     f"(goal ≤ 1.6)")
    model = ""
    if res.get("model"):
        m = res["model"]

        def cell(mode: str, h: str) -> str:
            return f"{m[mode][h] * 1000:.0f} ms ({m[mode][h] / m[mode]['softmax_facet']:.2f}×)"
        mrows = "\n".join(f"| {h} | {cell('train', h)} | {cell('infer', h)} |" for h in m["train"])
        model = f"""
Whole model, GPT-2 Small-shaped decoder (12 layers, d=768, 12 heads, V=50,257, random weights), B×T = {B}×{T},
median of {m['repeats']} interleaved rounds after a warm-up (thesis C Table 2.1 reports whole-model inference
times: MoS(3) / Softmax 1.55× on GPT-2 Small, MFS 1.64×, on a GPU):

| head | training step (forward + backward) | inference (forward) |
|---|---|---|
{mrows}
"""
    return f"""# Output-head cost relative to the softmax

{{header}}Head-only forward + backward, B×T = {B}×{T}, median of {res['repeats']} rounds after a warm-up, in one
process, the heads timed in turn within each round; ratio to the softmax head with its facet layer (the thesis's
GPT-2 baseline). Head names as thesis C Tables 2.1 and 2.4 (`genfeat.heads.config.HEADS`).

| head | {' | '.join(cols)} |
|---|{'---|' * len(cols)}
{chr(10).join(rows)}
{model}
Goals from the issue:

{chr(10).join(goals)}

{res.get('reading', '')}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, nargs="+", default=[10_000, 50_257])
    ap.add_argument("--hidden", type=int, nargs="+", default=[256, 768])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--model-heads", nargs="*", default=MODEL_HEADS, help="whole-model timings (none: skip)")
    ap.add_argument("--reading", default="", help="an interpretation paragraph kept in the JSON")
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    configs = []
    for d in args.hidden:
        for vocab in args.vocab:
            secs = time_heads(HEADS, d, vocab, args.repeats)
            for name in HEADS:
                print(f"d={d} V={vocab} {name:22s} {secs[name] * 1000:8.1f} ms "
                      f"({secs[name] / secs['softmax_facet']:.2f}x)", flush=True)
            configs.append({"d": d, "vocab": vocab, "seconds": secs})
    model = None
    if args.model_heads:
        model = {"repeats": args.repeats}
        for mode in ("train", "infer"):
            model[mode] = interleaved_median_seconds(
                {n: model_step(n, train=mode == "train") for n in args.model_heads}, args.repeats)
            for name, sec in model[mode].items():
                print(f"GPT-2 Small {mode:5s} {name:14s} {sec * 1000:8.1f} ms", flush=True)
    print(write_results(NAME, {"heads": HEADS, "configs": configs, "repeats": args.repeats, "model": model,
                               "reading": args.reading}, markdown))


if __name__ == "__main__":
    main()
