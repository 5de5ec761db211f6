"""The head contract: what every output head returns (`HeadOutput`) and declares it reads (`HeadNeeds`), and
the shared numerics of the heads."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def upcast(x: Tensor) -> Tensor:
    """At least fp32 for softmax / losses under mixed precision (fp64 stays fp64)."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class _TargetLogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
        lsm = torch.log_softmax(logits, -1)
        ctx.save_for_backward(lsm, target)
        lp = lsm.gather(-1, target[:, None]).squeeze(-1)
        return lp, logits.gather(-1, target[:, None]).squeeze(-1) - lp  # log p_t, log-sum-exp

    @staticmethod
    def backward(ctx, g_lp: Tensor, g_lse: Tensor) -> tuple[Tensor, None]:
        lsm, target = ctx.saved_tensors
        out = torch.exp(lsm).mul_((g_lse - g_lp)[:, None])  # d log p_t / dz_c = 1[c = t] - p_c, d lse / dz_c = p_c
        return out.scatter_add_(-1, target[:, None], g_lp[:, None]), None


def target_log_softmax(logits: Tensor, target: Tensor, return_lse: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """log_softmax(logits)[n, target[n]]: logits (N, C), target (N,) in [0, C) -> (N,), in logits' dtype; with
    `return_lse` also logsumexp(logits[n]) (N,) (a head that mixes the softmax with other mass needs it).

    The same numbers as `-F.cross_entropy(..., reduction="none")`, with a backward that writes softmax - one-hot
    straight into one (N, C) buffer instead of zero-filling a gradient, scattering into it and running the
    log-softmax backward over it (one full pass and one (N, C) allocation fewer)."""
    lp, lse = _TargetLogSoftmax.apply(logits, target)
    return (lp, lse) if return_lse else lp


def embedding_rows(weight: Tensor, ids: Tensor) -> Tensor:
    """weight[ids] (ids (...,) -> (..., d)) with a sparse gradient: a head's W also gets the dense gradient of its
    logits product, into which these rows are then added in place, instead of each lookup zero-filling and adding
    a (|V|, d) buffer of its own. Only for a W that every training step also uses densely (the output embedding)."""
    return F.embedding(ids, weight, sparse=weight.requires_grad)


def top_indices(x: Tensor, k: int, chunk: int = 64, sorted: bool = True) -> Tensor:
    """x.topk(k, -1, sorted=sorted).indices (largest first when sorted), exact: the top k lie in the k chunks (of
    `chunk` consecutive entries) with the largest maxima, so when the last dimension is long against k·chunk, one
    max pass over x picks those chunks and the full top-k runs on them (and the tail) only. Tied values may
    resolve differently than topk."""
    V = x.size(-1)
    G = V // chunk
    if G < 16 * k:
        return x.topk(k, -1, sorted=sorted).indices
    blocks = x.unfold(-1, chunk, chunk)  # (..., G, chunk), a view
    best = blocks.amax(-1).topk(k, -1).indices  # (..., k) chunks
    vals = blocks.gather(-2, best[..., None].expand(*best.shape, chunk)).flatten(-2)
    ids = (best[..., None] * chunk + torch.arange(chunk, device=x.device)).flatten(-2)
    if V > G * chunk:
        vals = torch.cat([vals, x[..., G * chunk:]], -1)
        ids = torch.cat([ids, torch.arange(G * chunk, V, device=x.device).expand(*ids.shape[:-1], -1)], -1)
    return ids.gather(-1, vals.topk(k, -1, sorted=sorted).indices)


@dataclass(frozen=True)
class HeadNeeds:
    """What a head reads besides the backbone's final hidden states, declared by every head as `head.needs`;
    the model that drives it (`CausalLM`) passes exactly these and nothing else.

    all_hidden   the outputs of the blocks below the top (`BackboneOutput.all_hidden`): Mi, DOC, the two-stage
                 reranker. The backbone is called with `output_all_hidden=True`.
    input_ids    the segment's token ids (`input_ids=`): the context partition, local embeddings, pointers.
    memory_ids   the ids of the tokens in a memory backbone's memory (`mem_ids=`), carried with the memory.
    targets      the head can return log p(target) only (`targets=` -> `HeadOutput.target_log_probs`), which
                 training asks for instead of the full distribution.
    positions    the head can score selected query positions only (`positions=` (B, P)): generation's last
                 position, a recommender's read-out; otherwise the model slices the full output."""

    all_hidden: bool = False
    input_ids: bool = False
    memory_ids: bool = False
    targets: bool = False
    positions: bool = False


@dataclass
class HeadOutput:
    """scores: (..., V). Logits when `is_log_prob` is False (softmax-like heads), normalised
    log-probabilities when True (mixtures, pointer heads).

    target_log_probs: (...,) log p(target), set instead of `scores` by heads that can score the targets
    without the full distribution (adaptive softmax evaluates only each target's cluster) when the model
    is called with `targets=`. `genfeat.losses.nll` uses whichever is present.

    aux: a first-stage output whose NLL training adds to the loss (the two-stage reranker's stage 1)."""

    scores: Tensor | None
    is_log_prob: bool = False
    target_log_probs: Tensor | None = None
    aux: HeadOutput | None = None

    def log_probs(self) -> Tensor:
        if self.scores is None:
            raise ValueError("this HeadOutput holds only target log-probabilities; call the model without targets")
        return self.scores if self.is_log_prob else torch.log_softmax(upcast(self.scores), dim=-1)


def output_embedding(vocab_size: int, d_model: int, tied_embedding: nn.Embedding | None) -> nn.Parameter:
    """The output embedding W (|V|, d): the tied embedding's Parameter itself, or a new N(0, 0.02^2) one."""
    if tied_embedding is None:
        return nn.Parameter(torch.randn(vocab_size, d_model) * 0.02)
    if tied_embedding.weight.shape != (vocab_size, d_model):
        raise ValueError(f"tied embedding has shape {tuple(tied_embedding.weight.shape)}, "
                         f"expected ({vocab_size}, {d_model})")
    return tied_embedding.weight


def select_positions(x: Tensor, positions: Tensor | None) -> Tensor:
    """x (B, T, ...) at `positions` (B, P) -> (B, P, ...); x itself when positions is None."""
    if positions is None:
        return x
    return x[torch.arange(x.size(0), device=x.device)[:, None], positions]
