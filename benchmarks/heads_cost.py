"""Cost of every output head relative to the softmax; records docs/results/heads_cost.{md,json}.

    python -m benchmarks.heads_cost [--vocab 10000 50257] [--hidden 256 768] [--repeats 5] [--model-heads ...]

Head-only forward + backward on random backbone states (B x T = 4 x 128, three layers for the multi-input
heads; states N(0, 1) as after a LayerNorm, output embedding N(0, 0.1^2), so the logits have a trained LM's
scale), one process, torch's default threads; median of `--repeats` rounds after one warm-up, each round
timing every head once in turn (a slow spell of the machine touches all heads alike); heads are called as
training calls them (with the targets where the head has a target-only path). Then the whole model, as
thesis C Table 2.1 times it: a GPT-2 Small-shaped decoder (12 layers, d=768, 12 heads, V=50,257, random weights)
with each of `--model-heads`, training step (forward + backward) and inference (forward without gradients),
on the reference scripts' evaluation batch (4 chunks of 200 tokens; `--model-batch`, `--model-length`), interleaved the
same way. Every step's matrix-product FLOPs are also counted once (torch.utils.flop_counter): the ratio a
FLOP-bound device would show, so each time ratio can be read against the arithmetic the head adds.
Goals from the issue: CLR <= 1.15x softmax, MFS <= MoS(3), MoS(3) <= 1.6x.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from benchmarks.common import interleaved_median_seconds, reading, render, write_results
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
    kw = {"targets": targets} if head.needs.targets else {}  # as CausalLM calls it in training
    if head.needs.input_ids:
        kw["input_ids"] = ids

    def step() -> None:
        loss = nll(head(out, **kw), targets)
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


def counted_flops(step: Callable[[], None]) -> int:
    """FLOPs of the matrix products (mm, bmm, addmm, baddbmm, ...) of one call, forward and backward."""
    with FlopCounterMode(display=False) as counter:
        step()
    return counter.get_total_flops()


def training_step(model_cfg, batch: int, length: int, device: str | torch.device = "cpu") -> Callable[[], None]:
    """One whole-model training step of the GPT `model_cfg` on random ids (forward + backward of the NLL, plus a
    two-stage head's first-stage NLL, as training computes it), synchronised on CUDA so that a timer sees the work."""
    from genfeat.models.gpt import build_gpt_lm

    torch.manual_seed(0)
    lm = build_gpt_lm(model_cfg).to(device).train()
    x = torch.randint(0, model_cfg.vocab_size, (batch, length), device=device)

    def step() -> None:
        o, _ = lm(x, targets=x)  # as training calls it (heads with a target-only path use it)
        (nll(o, x) + (nll(o.aux, x) if o.aux is not None else 0.0)).backward()
        lm.zero_grad(set_to_none=True)
        if x.is_cuda:
            torch.cuda.synchronize()

    return step


def model_step(name: str, train: bool, batch: int = B, length: int = T) -> Callable[[], None]:
    """A GPT-2 Small-shaped decoder with head `name`: a training step (`training_step`) or an inference forward
    (no gradients), on random ids."""
    from genfeat.models.gpt import GPTConfig, build_gpt_lm

    vocab = 50_257
    cfg = GPTConfig(vocab_size=vocab, n_layer=12, n_head=12, d_model=768, max_len=length, dropout=0.0,
                    head=named_head(name))
    if train:
        return training_step(cfg, batch, length)
    torch.manual_seed(0)
    lm = build_gpt_lm(cfg).eval()
    x = torch.randint(0, vocab, (batch, length))

    def step() -> None:
        with torch.no_grad():
            nll(lm(x, targets=x)[0], x)

    return step


def flop_ratio(entry: dict[str, Any], name: str, mode: str | None = None) -> str:
    """", FLOPs r×" against the softmax where the entry has counted FLOPs."""
    flops = entry.get("flops") if mode is None else entry.get("flops", {}).get(mode)
    return f"; FLOPs {flops[name] / flops['softmax_facet']:.2f}×" if flops else ""


def goal_ratio(config: dict[str, Any], a: str, b: str = "softmax_facet") -> str:
    """Time ratio a / b in one head-only configuration, with the FLOP ratio where counted."""
    t, f = config["seconds"], config.get("flops")
    return f"{t[a] / t[b]:.2f}" + (f" (FLOPs {f[a] / f[b]:.2f})" if f else "")


def markdown(record: dict[str, Any]) -> str:
    res = record["results"]
    cols = [f"d={c['d']}, V={c['vocab']:,}" for c in res["configs"]]
    rows = []
    for name in res["heads"]:
        cells = []
        for c in res["configs"]:
            t, base = c["seconds"][name], c["seconds"]["softmax_facet"]
            cells.append(f"{t * 1000:.0f} ms ({t / base:.2f}×{flop_ratio(c, name)})")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    goals = []
    for c in res["configs"]:
        ratio = functools.partial(goal_ratio, c)
        goals.append(f"- d={c['d']}, V={c['vocab']:,}: CLR:20 / softmax = {ratio('clr20')}, CLR:20+Mi / Softmax+Mi = "
                     f"{ratio('clr20+mi', 'softmax+mi')}, CLR:20+Mi / softmax = {ratio('clr20+mi')} (goal ≤ 1.15); "
                     f"MFS / MoS(3) = {ratio('mfs', 'mos3')} (goal ≤ 1); MoS(3) / softmax = {ratio('mos3')} "
                     f"(goal ≤ 1.6)")
    model = ""
    if res.get("model"):
        m = res["model"]

        def cell(mode: str, h: str) -> str:
            return f"{m[mode][h] * 1000:.0f} ms ({m[mode][h] / m[mode]['softmax_facet']:.2f}×{flop_ratio(m, h, mode)})"
        mrows = "\n".join(f"| {h} | {cell('train', h)} | {cell('infer', h)} |" for h in m["train"])
        model = f"""
Whole model, GPT-2 Small-shaped decoder (12 layers, d=768, 12 heads, V=50,257, random weights),
B×T = {m.get('batch', B)}×{m.get('length', T)}, median of {m['repeats']} interleaved rounds after a warm-up
(thesis C Table 2.1 reports whole-model inference times of one evaluation batch, 4 × 200 tokens in the reference
scripts: MoS(3) / Softmax 1.55× on GPT-2 Small, MFS 1.64×, hardware not stated):

| head | training step (forward + backward) | inference (forward) |
|---|---|---|
{mrows}
"""
    return f"""# Output-head cost relative to the softmax

{{header}}Head-only forward + backward, B×T = {B}×{T}, median of {res['repeats']} rounds after a warm-up, in one
process, the heads timed in turn within each round; ratio to the softmax head with its facet layer (the thesis's
GPT-2 baseline) and, where recorded, the ratio of counted matrix-product FLOPs (forward + backward). Head names
as thesis C Tables 2.1 and 2.4 (`genfeat.heads.config.HEADS`).

| head | {' | '.join(cols)} |
|---|{'---|' * len(cols)}
{chr(10).join(rows)}
{model}
Goals from the issue:

{chr(10).join(goals)}

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, nargs="+", default=[10_000, 50_257])
    ap.add_argument("--hidden", type=int, nargs="+", default=[256, 768])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--model-heads", nargs="*", default=MODEL_HEADS, help="whole-model timings (none: skip)")
    ap.add_argument("--model-batch", type=int, default=4, help="whole model: sequences per batch (thesis: 4)")
    ap.add_argument("--model-length", type=int, default=200, help="whole model: tokens per sequence (thesis: 200)")
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
            flops = {n: counted_flops(head_step(n, d, vocab)) for n in HEADS}
            configs.append({"d": d, "vocab": vocab, "seconds": secs, "flops": flops})
    model = None
    if args.model_heads:
        model = {"repeats": args.repeats, "batch": args.model_batch, "length": args.model_length, "flops": {}}
        for mode in ("train", "infer"):
            steps = {n: model_step(n, mode == "train", args.model_batch, args.model_length) for n in args.model_heads}
            model[mode] = interleaved_median_seconds(steps, args.repeats)
            model["flops"][mode] = {n: counted_flops(step) for n, step in steps.items()}
            for name, sec in model[mode].items():
                print(f"GPT-2 Small {mode:5s} {name:14s} {sec * 1000:8.1f} ms", flush=True)
    print(write_results(NAME, {"heads": HEADS, "configs": configs, "repeats": args.repeats, "model": model}, markdown))


if __name__ == "__main__":
    main()
