"""Training-step time with the default Adam(W) against `genfeat.train.optim.adam` (PyTorch's fused kernel), on the
steps the recipes take: MiniLM-L6 fine-tuning with 100 examples (`multi_cls_classify`: batch 4 x 64 tokens, a
38-class head, gradient clipping), MiniLM-L6 continued pretraining's batch shape (`multi_cls_pretrain`: 30 x 128
tokens) and the MNIST complement-GAN iteration (`gan_ssl --preset mnist_100`: the discriminator on 100 labeled,
100 unlabeled and 100 generated images, then the generator's feature matching through the held discriminator).
One process, interleaved rounds, medians; ratio = default / fused (> 1: fused faster). The two optimizers train two
copies of the same weights, so each keeps its own state.

    python -m benchmarks.fused_adam [--repeats 15] [--threads 1] [--device auto]

Weights are random (speed does not depend on them). Losses stand in for the recipes' objectives where those need
data pipelines (a mean of squares over the encoder's states for pretraining, a cross-entropy for the classifier,
the GAN's real/fake and feature-matching terms without LD): the optimizer's share of the step depends on the
parameter count and the forward / backward cost, which these keep. Default Adam(W): the for-loop implementation
on the CPU, the multi-tensor one on CUDA (PyTorch's defaults). Writes docs/results/fused_adam.{md,json}.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable

import torch
import torch.nn.functional as F

from benchmarks.common import interleaved_median_seconds, ran_on, reading, render, timing_args, write_results
from genfeat.models.bert import BertConfig, BertModel
from genfeat.models.gan_ssl.networks import GanNetConfig, build_networks
from genfeat.train.optim import adam

NAME = "fused_adam"
MINILM = BertConfig(vocab_size=30522, d_model=384, n_layer=6, n_head=12, d_inner=1536, max_len=512)


class Classifier(torch.nn.Module):
    def __init__(self, n_classes: int):
        super().__init__()
        self.bert, self.out = BertModel(MINILM), torch.nn.Linear(MINILM.d_model, n_classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(self.bert(ids, attention_mask=torch.ones_like(ids)).hidden[:, 0])


def bert_workload(batch: int, seq: int, device: torch.device) -> tuple[torch.nn.Module, Callable]:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 30000, (batch, seq), generator=g).to(device)
    labels = torch.randint(0, 38, (batch,), generator=g).to(device)

    def loss(model: torch.nn.Module) -> torch.Tensor:
        return F.cross_entropy(model(ids), labels)
    return Classifier(38).to(device), loss


def gan_workload(device: torch.device) -> tuple[torch.nn.Module, Callable]:
    net = GanNetConfig()
    disc, gen, _ = build_networks(net, "mnist")
    nets = torch.nn.ModuleDict({"discriminator": disc, "generator": gen}).to(device)
    g = torch.Generator().manual_seed(0)
    x_l, x_u = (torch.rand(100, 784, generator=g).to(device) * 2 - 1 for _ in range(2))
    y = torch.randint(0, 10, (100,), generator=g).to(device)

    def loss(nets: torch.nn.ModuleDict) -> torch.Tensor:  # D's step and G's, summed: one backward, both optimizers
        d, gen = nets["discriminator"], nets["generator"]
        fake = gen(torch.rand(100, net.d_z, device=device))
        h_u, h_f = d.features(x_u), d.features(fake)
        lse_u, lse_f = d.head(h_u).logsumexp(-1), d.head(h_f).logsumexp(-1)
        d_loss = F.cross_entropy(d(x_l), y) + 0.5 * (F.softplus(-lse_u) + F.softplus(lse_f)).mean()
        return d_loss + (h_f.mean(0) - h_u.detach().mean(0)).pow(2).mean()
    return nets, loss


def timed_steps(model: torch.nn.Module, loss: Callable, decoupled: bool, clip: float
                ) -> tuple[dict[str, Callable], dict[str, Callable]]:
    """({"default": step, "fused": step}, the same for the optimizer's step alone): each trains its own copy of
    `model`; the optimizer-only calls step on the gradients the last full step left."""
    def make(opt_of: Callable) -> tuple[Callable[[], None], Callable[[], None]]:
        m = copy.deepcopy(model)
        opt = opt_of(m.parameters())

        def sync() -> None:
            if next(m.parameters()).is_cuda:
                torch.cuda.synchronize()

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            loss(m).backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
            opt.step()
            sync()

        def opt_step() -> None:
            opt.step()
            sync()
        return step, opt_step
    default = torch.optim.AdamW if decoupled else torch.optim.Adam
    made = {"default": make(lambda ps: default(ps, lr=1e-5)),
            "fused": make(lambda ps: adam(ps, decoupled=decoupled, lr=1e-5))}
    return {k: v[0] for k, v in made.items()}, {k: v[1] for k, v in made.items()}


def markdown(record: dict) -> str:
    r = record["results"]
    rows = "\n".join(f"| {w['name']} | {w['params_m']:.2f} | {w['repeats']} | {w['default_ms']:.1f} | "
                     f"{w['fused_ms']:.1f} | {w['default_ms'] - w['fused_ms']:.0f} | **{w['ratio']:.2f}x** | "
                     f"{w['opt_default_ms']:.1f} | {w['opt_fused_ms']:.1f} |"
                     for w in r["workloads"])
    return f"""# Fused Adam(W): training-step time

{{header}}{r['threads']} torch thread(s); medians over interleaved rounds (the rounds column) of full training steps
(forward, backward, clipping where the recipe clips, optimizer step). Default: `torch.optim.AdamW` / `Adam` as
the recipes built them before (the for-loop implementation on the CPU); fused: `genfeat.train.optim.adam`.
Ratio = default / fused. The last two columns time the optimizer's step alone (on the gradients of the last full
step; {r['repeats']} rounds).

| step | parameters (M) | rounds | default ms | fused ms | saved ms | ratio | optimizer alone: default ms | fused ms |
|---|---|---|---|---|---|---|---|---|
{rows}

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    timing_args(ap, repeats=15, threads=1, device=True)  # one thread: the sweeps run one per worker
    ap.add_argument("--pretrain-repeats", type=int, default=5, help="rounds of the (slow) pretraining-shaped step")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    torch.set_num_threads(args.threads)
    device = torch.device(ran_on())
    torch.manual_seed(0)
    workloads = []
    for name, (model, loss), decoupled, clip, repeats in (
            ("MiniLM-L6 fine-tuning, batch 4 x 64 (multi_cls_classify, 100 examples)",
             bert_workload(4, 64, device), True, 1.0, args.repeats),
            ("MNIST complement-GAN iteration (gan_ssl mnist_100: D and G)", gan_workload(device), False, 0.0,
             args.repeats),
            ("MiniLM-L6 continued-pretraining batch, 30 x 128 (multi_cls_pretrain's shape)",
             bert_workload(30, 128, device), True, 1.0, args.pretrain_repeats)):
        steps, opt_steps = timed_steps(model, loss, decoupled, clip)
        t = interleaved_median_seconds(steps, repeats)
        t_opt = interleaved_median_seconds(opt_steps, args.repeats)
        row = {"name": name, "params_m": sum(p.numel() for p in model.parameters()) / 1e6, "repeats": repeats,
               "default_ms": 1e3 * t["default"], "fused_ms": 1e3 * t["fused"], "ratio": t["default"] / t["fused"],
               "opt_default_ms": 1e3 * t_opt["default"], "opt_fused_ms": 1e3 * t_opt["fused"]}
        print(row, flush=True)
        workloads.append(row)
    print(write_results(NAME, {"threads": args.threads, "repeats": args.repeats, "workloads": workloads}, markdown,
                        seeds=[0]))


if __name__ == "__main__":
    main()
