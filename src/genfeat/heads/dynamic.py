"""Dynamic partitioning of the first softmax (thesis C §2.4, Eqs. 2.5-2.11, Table 2.4; spec
multi-facet-softmax.md §3-6): the context partition (C), reranker partitions (R), local context word
embeddings (L) and their hybrid CLR.

    R   reranker_sizes=(n,) or (n1, n2, n3): largest ring first, S_p = top-n_p of the *current* logits
        (already modified by the larger rings), logits[S_p] = f_{R_p} · W[S_p] (merge "assign") or += it
        ("add"); top-k is not differentiated (Eqs. 2.7-2.8, the reference's order of operations)
    C   context=True: words x in the context c_t get f_C · w_x (Eq. 2.5)
    L   local=True: words in the context get + f_L · mean_i e_i over their occurrences i, e_i = L^f_E(q_i)
        (Eqs. 2.9-2.10; with C the sum replaces the base logit, Eq. 2.11, without C it adds to it)
    priority: context > reranker > base (the top-n is taken over all words, context assignment overrides)

c_t = the input tokens at positions <= t (thesis; `includes_current=False`: < t, as the reference code), ids
equal to `pad_id` never count. With a memory backbone (Transformer-XL) the tokens held in the memory count
for C too: `CausalLM` carries their ids along with the memory and passes them as `mem_ids` (L needs their
states, which the memory does not keep: L uses the current segment only).
Initialisation (§2.4.1.5): f_C, f_R identity; L^f_L, L^f_E 1e-10·I; in "add" mode every non-base facet
(C, R, L, E) starts at 1e-10·I, so every head starts as the softmax.

Cost: context scores are (B, T, S) products, averaged over a word's occurrences in context space and added once
per context word into the vocabulary axis; the rings run on the sum of their sizes best words of the base
logits. Both are sparse `scatter_add_`s into the fresh base logits (an "assign" adds new - base, the base part
recomputed on those words only), so no B×T×T×D expansion, no B×T×V temporaries and no dense gradient copy in
backward; the candidates' and context words' rows of W are looked up with a sparse gradient
(`embedding_rows`) and the rings' candidates found by a chunked exact top-k (`top_indices`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.heads.base import embedding_rows, top_indices
from genfeat.heads.facets import identity_facet

MERGES = ("assign", "add")  # how a partition's logits enter the first softmax's (module docstring)


@dataclass(frozen=True)
class DynamicSpec:
    """Which dynamic partitions a head has and how they merge (see the module docstring)."""

    context: bool = False  # C
    local: bool = False  # L
    reranker_sizes: tuple[int, ...] = ()  # R rings
    merge: str = "assign"  # assign (the equations' "replace") | add (the thesis-era reference code)
    includes_current: bool = True  # c_t holds position t itself (thesis) or stops before it (reference code)
    pad_id: int | None = None  # never a context word, never a ring candidate
    local_init: float = 1e-10  # scale of L^f_L, L^f_E (and of every non-base facet in "add" mode)

    def __post_init__(self) -> None:
        if self.merge not in MERGES:
            raise ValueError(f"merge must be one of {', '.join(MERGES)}, got {self.merge!r}")
        if len(set(self.reranker_sizes)) != len(self.reranker_sizes) or any(n < 1 for n in self.reranker_sizes):
            raise ValueError(f"reranker sizes must be distinct and >= 1, got {self.reranker_sizes}")

    @property
    def any(self) -> bool:
        return self.context or self.local or bool(self.reranker_sizes)


def context_positions(input_ids: Tensor, mem_ids: Tensor | None = None, includes_current: bool = True,
                      pad_id: int | None = None, positions: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The context c_t of every query position t: (ids (B, S), mask (B, T, S)) over S = memory + segment
    positions; position i counts for t when i <= t (`includes_current`, thesis) or i < t (reference code),
    and its id is not `pad_id`. `positions` (B, P): only these query positions (mask (B, P, S))."""
    T = input_ids.size(1)
    ctx = input_ids if mem_ids is None else torch.cat([mem_ids, input_ids], 1)
    M = ctx.size(1) - T
    t = (torch.arange(T, device=ctx.device)[None] if positions is None else positions)[..., None] + M
    i = torch.arange(ctx.size(1), device=ctx.device)[None, None, :]
    mask = ((i <= t) if includes_current else (i < t)).expand(ctx.size(0), t.size(1), -1)
    if pad_id is not None:
        mask = mask & (ctx != pad_id)[:, None, :]
    if mem_ids is not None:  # unknown memory tokens (-1) never count
        mask = mask & (ctx >= 0)[:, None, :]
        ctx = ctx.clamp_min(0)
    return ctx, mask



def in_context(cand: Tensor, ctx: Tensor, mask: Tensor, vocab_size: int) -> Tensor:
    """(B, P, m): is word cand[b, p, j] among the context words ctx[b, s] that count for query p (mask (B, P, S))?
    Compared pairwise ((B, P, m, S)) or, when that is larger, through a (B, P, V) membership table."""
    if cand.size(-1) * ctx.size(-1) <= vocab_size:
        return ((cand[..., None] == ctx[:, None, None, :]) & mask[:, :, None, :]).any(-1)
    table = torch.zeros(*mask.shape[:2], vocab_size, dtype=torch.bool, device=cand.device)
    return table.scatter_reduce_(-1, ctx[:, None, :].expand_as(mask), mask, "amax").gather(-1, cand)


class DynamicPartitions(nn.Module):
    """The C / R / L facets of one head's first softmax, applied to its base logits (`forward`)."""

    def __init__(self, spec: DynamicSpec, d_q: int, d_model: int, vocab_size: int):
        super().__init__()
        if any(n > vocab_size for n in spec.reranker_sizes):
            raise ValueError(f"reranker sizes must be in [1, {vocab_size}], got {spec.reranker_sizes}")
        self.spec = spec
        small = spec.local_init
        scale = 1.0 if spec.merge == "assign" else small
        self.reranker_sizes = tuple(sorted(spec.reranker_sizes))  # ring p has size reranker_sizes[p]
        self.f_rerank = nn.ModuleList([identity_facet(d_q, d_model, scale) for _ in self.reranker_sizes])
        self.f_context = identity_facet(d_q, d_model, scale) if spec.context else None
        self.f_local = identity_facet(d_q, d_model, small) if spec.local else None  # L^f_L
        self.f_key = identity_facet(d_q, d_model, small) if spec.local else None  # L^f_E

    def top_ids(self, logits: Tensor, n: int) -> Tensor:
        """Ids of the n largest logits in no particular order, never the padding id: the top n + 1 less the
        padding id where it is among them, else less the smallest (no (B, T, V) copy with the padding logit at
        -inf)."""
        ranked = logits.detach()
        if self.spec.pad_id is None:
            return top_indices(ranked, n, sorted=False)
        k = min(n + 1, ranked.size(-1))
        idx = top_indices(ranked, k, sorted=False)
        is_pad = idx == self.spec.pad_id
        drop = torch.where(is_pad.any(-1, keepdim=True), is_pad.to(torch.uint8).argmax(-1, keepdim=True),
                           ranked.gather(-1, idx).argmin(-1, keepdim=True))
        keep = torch.ones_like(idx, dtype=torch.bool).scatter_(-1, drop, False)
        return idx[keep].view(*idx.shape[:-1], k - 1)[..., :n]

    def rings(self, logits: Tensor, f1: Tensor, q: Tensor, weight: Tensor,
              bias: Tensor | None) -> tuple[Tensor, Tensor]:
        """Reranker rings, largest first, each taking the top n of the *current* logits (Eq. 2.8 as the
        reference), as (candidates (B, P, m), their logit changes (B, P, m)) over the m = sum of the ring sizes
        best words of the base logits: every ring's top n of the current logits lies among them (the words
        outside are unchanged and rank below the m-th), so the rings run in this compact space.

        assign: a ring word's change is (f_R - f_1) · w_x, the ring logit minus the base logit (bias cancels),
        recomputed on the candidates so that the gradient never needs a dense pass (the caller adds the changes
        with `scatter_add_`, whose backward passes the logits' gradient through); add: + f_R · w_x (+ b_x)."""
        assign = self.spec.merge == "assign"
        m = min(sum(self.reranker_sizes), weight.size(0) - (self.spec.pad_id is not None))
        cand = self.top_ids(logits, m)  # never the padding id
        rank = logits.detach().gather(-1, cand)
        rings = list(reversed(list(zip(self.reranker_sizes, self.f_rerank, strict=True))))
        g = torch.stack([layer(q) - f1 if assign else layer(q) for _, layer in rings], -2)  # (B, P, R, d)
        if g.size(-2) * weight.size(0) <= 16 * cand.size(-1):  # candidates a large share of V: one product
            # with every word costs less than gathering the candidates' rows and scattering their gradient
            new = F.linear(g, weight).gather(-1, cand.unsqueeze(-2).expand(*g.shape[:-1], cand.size(-1)))
        else:
            new = g @ embedding_rows(weight, cand).transpose(-1, -2)  # (B, P, R, m)
        if bias is not None and not assign:
            new = new + bias[cand].unsqueeze(-2)
        delta = torch.zeros_like(rank)
        for r, (n, _) in enumerate(rings):
            best = (rank + delta.detach()).topk(min(n, m), -1, sorted=False).indices  # top n of the current
            top = torch.zeros_like(rank, dtype=torch.bool).scatter_(-1, best, True)
            delta = torch.where(top, new[..., r, :], delta) if assign else delta + top * new[..., r, :]
        return cand, delta

    def forward(self, logits: Tensor, f1: Tensor, q: Tensor, q_all: Tensor, weight: Tensor, bias: Tensor | None,
                input_ids: Tensor | None, mem_ids: Tensor | None, positions: Tensor | None) -> Tensor:
        """R rings, then C and/or L on the context words (Eqs. 2.5, 2.7-2.11), written into the fresh base
        logits (B, P, V) in place as sparse additions, each by one `scatter_add_` (the rings' changes; every
        context word's at its first occurrence, zeros at the others). `scatter_add_` passes the gradient through
        to the base logits unchanged (no dense copy, unlike an assignment), and the assign mode's "replace" is
        an addition of (new - base) whose base part is recomputed sparsely from f_1. q: the query positions'
        states (B, P, d_q); q_all: every segment position's (B, T, d_q), the keys of L; weight, bias: the head's W
        (V, d) and b (V,) or None.

        The means over a word's occurrences (L) are taken in context space with a (B, S, S) same-word matrix;
        C's value f_C · w_x is the same at every occurrence."""
        ring = self.rings(logits, f1, q, weight, bias) if self.reranker_sizes else None
        if self.f_context is None and self.f_local is None:
            return logits.scatter_add_(-1, ring[0], ring[1].to(logits.dtype))
        if input_ids is None:
            raise ValueError("context partition / local embeddings need the input ids")
        ctx, mask = context_positions(input_ids, mem_ids, self.spec.includes_current, self.spec.pad_id, positions)
        replace = self.f_context is not None and self.spec.merge == "assign"  # C replaces the base logit (Eq. 2.11)
        if ring is not None:
            cand, delta = ring
            if replace:  # a context word's logit is C's: its ring change is dropped
                delta = delta.masked_fill(in_context(cand, ctx, mask, weight.size(0)), 0.0)
            logits = logits.scatter_add_(-1, cand, delta.to(logits.dtype))
        B, P, S = mask.shape
        T = input_ids.size(1)
        valid = mask.any(1)  # (B, S) positions that count for some query
        same = (ctx[:, :, None] == ctx[:, None, :]) & valid[:, :, None] & valid[:, None, :]  # (B, S, S)
        earlier = torch.ones(S, S, dtype=torch.bool, device=ctx.device).tril(-1)
        first = valid & ~(same & earlier).any(-1)  # first occurrence of its word
        value = torch.zeros(B, P, S, dtype=q.dtype, device=q.device)
        if self.f_local is not None:  # mean over occurrences of f_L(t) · e_i, e_i = L^f_E(q_i); segment only
            local = F.pad(torch.einsum("btd,bsd->bts", self.f_local(q), self.f_key(q_all)), (S - T, 0))
            m_local = F.pad(mask[..., S - T:].to(q.dtype), (S - T, 0))  # memory positions have no key
            same_f = same.to(q.dtype)
            n = torch.einsum("bsk,bpk->bps", same_f, m_local)
            value = torch.einsum("bsk,bpk->bps", same_f, local * m_local) / n.clamp_min(1)
        if self.f_context is not None:  # f_C(t) · w_x (- f_1(t) · w_x when it replaces the base logit)
            fc = self.f_context(q) - f1 if replace else self.f_context(q)
            value = value + torch.einsum("btd,bsd->bts", fc, embedding_rows(weight, ctx))
            if bias is not None and not replace:
                value = value + bias[ctx][:, None, :]
        value = value.masked_fill(~(mask & first[:, None, :]), 0.0)  # each context word of each query once
        return logits.scatter_add_(-1, ctx[:, None, :].expand(B, P, S), value.to(logits.dtype))
