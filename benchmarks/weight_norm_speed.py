"""Training-step time of the weight-normalised layers (`genfeat.nn.weight_norm`): W = g · v / ‖v‖ written as
PyTorch operations (pow, sum, sqrt, a broadcast multiply and divide, each with its own backward) against
`torch._weight_norm`, the fused kernel behind `torch.nn.utils.parametrizations.weight_norm` that the layers use.

Workloads: the MNIST complement-GAN iteration (`gan_ssl --preset mnist_100`; the discriminator on 100 labeled,
100 unlabeled and 100 generated images, then feature matching through it: `benchmarks.fused_adam`'s workload, with
its Adam step) and the 32x32 discriminator of `svhn_1000` / `cifar10_4000` (forward and backward of a batch of
`--conv-batch` images). One process, interleaved rounds, medians; each implementation trains its own copy of the
same weights; ratio = composite / fused (> 1: fused faster).

    python -m benchmarks.weight_norm_speed [--repeats 15] [--threads 1] [--device auto]

Writes docs/results/weight_norm_speed.{md,json}.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable

import torch

from benchmarks.common import interleaved_median_seconds, ran_on, reading, render, timing_args, write_results
from benchmarks.fused_adam import gan_workload
from genfeat.models.gan_ssl.networks import GanNetConfig, build_networks
from genfeat.nn.weight_norm import _WeightNorm
from genfeat.train.optim import adam

NAME = "weight_norm_speed"
FUSED = _WeightNorm.weight


def composite(self: _WeightNorm) -> torch.Tensor:
    """The same W from separate operations (the layers' formula before the fused kernel)."""
    dims = tuple(d for d in range(self.v.dim()) if d != self._out_dim)
    shape = [1] * self.v.dim()
    shape[self._out_dim] = -1
    return self.g.view(shape) * self.v / self.v.pow(2).sum(dims, keepdim=True).sqrt()


def conv_workload(batch: int, device: torch.device) -> tuple[torch.nn.Module, Callable]:
    disc, _, _ = build_networks(GanNetConfig(), "svhn")
    disc = disc.to(device)
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(batch, 3, 32, 32, generator=g) * 2 - 1).to(device)
    y = torch.randint(0, 10, (batch,), generator=g).to(device)

    def loss(d: torch.nn.Module) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(d(x), y)
    return disc, loss


def timed_steps(model: torch.nn.Module, loss: Callable) -> dict[str, Callable[[], None]]:
    """{"composite": step, "fused": step}, each training its own copy of `model` with the recipes' Adam."""
    def make(weight: Callable) -> Callable[[], None]:
        m = copy.deepcopy(model)
        opt = adam(m.parameters(), decoupled=False, lr=1e-5)

        def step() -> None:
            _WeightNorm.weight = weight
            try:
                opt.zero_grad(set_to_none=True)
                loss(m).backward()
                opt.step()
                if next(m.parameters()).is_cuda:
                    torch.cuda.synchronize()
            finally:
                _WeightNorm.weight = FUSED
        return step
    return {"composite": make(composite), "fused": make(FUSED)}


def markdown(record: dict) -> str:
    r = record["results"]
    rows = "\n".join(f"| {w['name']} | {w['wn_layers']} | {w['params_m']:.2f} | {w['composite_ms']:.1f} | "
                     f"{w['fused_ms']:.1f} | **{w['ratio']:.2f}x** |" for w in r["workloads"])
    return f"""# Weight normalisation: the fused kernel against the composite formula

{{header}}{r['threads']} torch thread(s); medians over {r['repeats']} interleaved rounds of full training steps
(forward, backward, Adam step). Composite: W = g · v / ‖v‖ from pow / sum / sqrt / multiply / divide (the layers
before); fused: `torch._weight_norm` (what `genfeat.nn.weight_norm` uses). Ratio = composite / fused.

| step | weight-normalised layers | parameters (M) | composite ms | fused ms | ratio |
|---|---|---|---|---|---|
{rows}

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    timing_args(ap, repeats=15, threads=1, device=True)  # one thread: the GAN runs take one per worker
    ap.add_argument("--conv-batch", type=int, default=32)
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    torch.set_num_threads(args.threads)
    device = torch.device(ran_on())
    torch.manual_seed(0)
    workloads = []
    for name, (model, loss) in (
            ("MNIST complement-GAN iteration (gan_ssl mnist_100: D and G)", gan_workload(device)),
            (f"32x32 discriminator, batch {args.conv_batch} (svhn_1000 / cifar10_4000)",
             conv_workload(args.conv_batch, device))):
        t = interleaved_median_seconds(timed_steps(model, loss), args.repeats)
        row = {"name": name, "wn_layers": sum(isinstance(m, _WeightNorm) for m in model.modules()),
               "params_m": sum(p.numel() for p in model.parameters()) / 1e6,
               "composite_ms": 1e3 * t["composite"], "fused_ms": 1e3 * t["fused"],
               "ratio": t["composite"] / t["fused"]}
        print(row, flush=True)
        workloads.append(row)
    print(write_results(NAME, {"threads": args.threads, "repeats": args.repeats, "conv_batch": args.conv_batch,
                               "workloads": workloads}, markdown, seeds=[0]))


if __name__ == "__main__":
    main()
