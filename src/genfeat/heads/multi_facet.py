"""Multi-facet output heads: SigSoftmax, MoS, DOC, multiple input hidden states (Mi), multiple partitions
(MP), MFS (thesis C §2.3, Eqs. 2.2-2.4, Table 2.1) and dynamic partitioning: context partition (C), reranker
partitions (R), local context word embeddings (L) and their hybrid CLR (thesis C §2.4, Eqs. 2.5-2.11,
Table 2.4; spec multi-facet-softmax.md §3-6).

One configurable head, `MultiFacetSoftmax`, covers every row of Table 2.1:

    Softmax                  K=1, J=1                     f_1 = L^f_1(h^M), identity-initialised
    SigSoftmax               K=1, sigsoftmax=True         P(x) ∝ exp(z_x) σ(z_x)  (Kanai et al. 2018)
    Softmax + Multi-input    K=1, multi_input=True        facets from q (Eq. 2.3)
    Softmax + Multi-partition K=1, J=4                    word x scored by the facet of partition x mod J
    MoS(K)                   K=3 or 4                     sum_k π_k softmax(f_k^T W)  (Eq. 2.2, no tanh)
    DOC                      doc=True (K=3)               facet k from layer M-3+k, priors from the 3 layers
    MFS w/o MP / w/o Mi      K=3 with Mi / with J=4
    MFS                      K=3, J=4, multi_input=True   (Eq. 2.4 on q of Eq. 2.3)

q (Eq. 2.3) = h^M ⊕ GELU_tanh(L^h(⊕_{m<H} ⊕_{i<W} h^{M-m}_{t-i})), W×H = 3×3, positions before the
sequence start are zeros, concatenation per layer from the top: [h_t, h_{t-1}, h_{t-2}]. h^M is the
backbone's final output (`BackboneOutput.hidden`, after a final LayerNorm where the backbone has one),
h^{M-1}, h^{M-2} the outputs of the blocks below (`all_hidden[-2]`, `all_hidden[-3]`); the head asks the
backbone for them (`needs_all_hidden`). Facets: linear with bias, initialised to [I | 0] on the h^M block
(the head starts as the plain softmax), the non-h^M columns of every facet but the last get uniform noise
1e-4·(U-0.5) (reference code, symmetry breaking). Priors L^π: PyTorch default init.

Dynamic partitioning (Table 2.4) acts on the first softmax only (the others stay full-vocabulary):

    R   reranker_sizes=(n,) or (n1, n2, n3): largest ring first, S_p = top-n_p of the *current* logits
        (already modified by the larger rings), logits[S_p] = f_{R_p} · W[S_p] (merge "assign") or += it
        ("add"); top-k is not differentiated (Eqs. 2.7-2.8, the reference's order of operations)
    C   context=True: words x in the context c_t get f_C · w_x (Eq. 2.5)
    L   local=True: words in the context get + f_L · mean_i e_i over their occurrences i, e_i = L^f_E(q_i)
        (Eqs. 2.9-2.10; with C the sum replaces the base logit, Eq. 2.11, without C it adds to it)
    priority: context > reranker > base (the top-n is taken over all words, context assignment overrides)

c_t = the input tokens at positions <= t (thesis; `context_includes_current=False`: < t, as the reference
code), ids equal to `pad_id` never count. With a memory backbone (Transformer-XL) the tokens held in the
memory count for C too: `CausalLM` carries their ids along with the memory and passes them as `mem_ids`
(L needs their states, which the memory does not keep: L uses the current segment only).
Initialisation (§2.4.1.5): f_1, f_C, f_R identity; L^f_L, L^f_E 1e-10·I; in "add" mode every non-base
facet (C, R, L, E) starts at 1e-10·I, so every head starts as the softmax.
Context scores are computed as (B, T, S) products, averaged over a word's occurrences in context space and
added once per context word into the vocabulary axis; the rings run on the sum of their sizes best words of the
base logits. Both are sparse `scatter_add_`s into the fresh base logits (an "assign" adds new - base, the base
part recomputed on those words only), so no B×T×T×D expansion, no B×T×V temporaries, and no dense gradient
copy in backward (`_dynamic`); the candidates' and context words' rows of W are looked up with a sparse
gradient (`embedding_rows`) and the rings' candidates found by a chunked exact top-k (`top_indices`). The J
partition products are J GEMMs on strided views of W writing partition-major logits (`partition_product`).

Output: logits (K=1: a single softmax, SigSoftmax as g(z) = z + log σ(z), whose softmax is the SigSoftmax
distribution) or log-probabilities log Σ_k π_k softmax_k computed with logsumexp (K>1). `mixture="max_logits"`
instead pools the K facets' logits, max_k z_k, into one softmax: the recommenders' "Multi-Softmax" (thesis C
§2.5; keeps maximum-inner-product retrieval possible); dynamic partitions then act on the first facet's logits
before the max. `positions` (B, P) scores only those query positions (a recommender's read-out, the last step
of generation): facets, priors and rerankers run on P states instead of T, and the context of each selected
position t is still c_t.

Training calls the head with `targets=` (`scores_targets`): it then returns only log p(target), each softmax's
through `target_log_softmax` and the mixture as a log-sum-exp over K numbers per position -- no (B, T, K, V)
log-probabilities or mixture temporaries, and a partitioned first softmax stays in partition-major order (its
word-order gather is only needed for the full distribution). Same values and gradients as the NLL of the full
distribution (tests/heads/test_head_config.py).

With a memory backbone (Transformer-XL) the Mi window does not reach into the memory: the first
positions of a segment see zeros, as at a sequence start (a choice; the memory holds only states, not
the block outputs the window needs at every layer).

Deviations: none from the equations. The multi-partition first softmax assigns words to partitions by id
(x mod J) as the thesis.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.heads.base import (
    HeadOutput,
    embedding_rows,
    output_embedding,
    select_positions,
    target_log_softmax,
    top_indices,
    upcast,
)
from genfeat.nn.outputs import BackboneOutput


def identity_facet(d_in: int, d_out: int, scale: float = 1.0, noise: float = 0.0) -> nn.Linear:
    """Linear d_in -> d_out with weight [scale·I | noise·(U-0.5)] and zero bias (spec §7)."""
    layer = nn.Linear(d_in, d_out)
    with torch.no_grad():
        layer.weight.zero_()
        layer.weight[:, :d_out].copy_(torch.eye(d_out) * scale)
        if noise and d_in > d_out:
            layer.weight[:, d_out:].uniform_(-0.5 * noise, 0.5 * noise)
        layer.bias.zero_()
    return layer


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


class _PartitionProduct(torch.autograd.Function):
    """z[:, j·n + r] = f_j · w_{r·J + j} (n = V // J), and z[:, x] = f_{x - J·n} · w_x for the last V - J·n words:
    every product is one GEMM between the strided views W.view(n, J, d)[:, j] and the output's (N, n) column
    block, in forward and in both backward products, so W is never gathered or padded and its gradient is
    written in place."""

    @staticmethod
    def forward(ctx, f: Tensor, weight: Tensor) -> Tensor:
        J, N, d = f.shape
        V = weight.size(0)
        n = V // J
        z = f.new_empty(N, V)
        w, zb = weight[: J * n].view(n, J, d), z[:, : J * n].view(N, J, n)
        for j in range(J):
            torch.mm(f[j], w[:, j].T, out=zb[:, j])
        if V > J * n:  # the incomplete last row of words: word J·n + j uses facet j
            z[:, J * n:] = torch.einsum("jnd,jd->nj", f[: V - J * n], weight[J * n:])
        ctx.save_for_backward(f, weight)
        return z

    @staticmethod
    def backward(ctx, g: Tensor) -> tuple[Tensor, Tensor]:
        f, weight = ctx.saved_tensors
        J, N, d = f.shape
        V = weight.size(0)
        n = V // J
        g = g.contiguous()
        gf, gw = torch.empty_like(f), torch.empty_like(weight)
        w, gwb, gb = weight[: J * n].view(n, J, d), gw[: J * n].view(n, J, d), g[:, : J * n].view(N, J, n)
        for j in range(J):
            torch.mm(gb[:, j], w[:, j], out=gf[j])
            torch.mm(gb[:, j].T, f[j], out=gwb[:, j])
        if V > J * n:
            rem, gt = V - J * n, g[:, J * n:]
            gf[:rem] += gt.T[:, :, None] * weight[J * n:, None, :]
            gw[J * n:] = torch.einsum("nj,jnd->jd", gt, f[:rem])
        return gf, gw


def partition_product(f: Tensor, weight: Tensor) -> Tensor:
    """Logits of J interleaved partitions in partition-major order (see `_PartitionProduct`): f (J, N, d) facets,
    weight (V, d) -> (N, V). Under autocast both run in the autocast dtype, as F.linear would."""
    dev = f.device.type
    if torch.is_autocast_enabled(dev):
        dt = torch.get_autocast_dtype(dev)
        f, weight = f.to(dt), weight.to(dt)
    with torch.autocast(dev, enabled=False):
        return _PartitionProduct.apply(f.contiguous(), weight.contiguous())


def in_context(cand: Tensor, ctx: Tensor, mask: Tensor, vocab_size: int) -> Tensor:
    """(B, P, m): is word cand[b, p, j] among the context words ctx[b, s] that count for query p (mask (B, P, S))?
    Compared pairwise ((B, P, m, S)) or, when that is larger, through a (B, P, V) membership table."""
    if cand.size(-1) * ctx.size(-1) <= vocab_size:
        return ((cand[..., None] == ctx[:, None, None, :]) & mask[:, :, None, :]).any(-1)
    table = torch.zeros(*mask.shape[:2], vocab_size, dtype=torch.bool, device=cand.device)
    return table.scatter_reduce_(-1, ctx[:, None, :].expand_as(mask), mask, "amax").gather(-1, cand)


class MultiInput(nn.Module):
    """q_{c_t} of Eq. 2.3 from the top `depth` layers at the last `window` positions."""

    def __init__(self, d_model: int, window: int = 3, depth: int = 3):
        super().__init__()
        self.window, self.depth = window, depth
        self.proj = nn.Linear(window * depth * d_model, d_model)  # L^h

    def layers(self, out: BackboneOutput) -> list[Tensor]:
        """[h^M, h^{M-1}, ..., h^{M-depth+1}], each (B, T, d)."""
        if self.depth == 1:
            return [out.hidden]
        if out.all_hidden is None or len(out.all_hidden) < self.depth:
            raise ValueError(f"multi-input needs the top {self.depth} layers; call the backbone with "
                             "output_all_hidden=True (CausalLM does this for heads with needs_all_hidden)")
        return [out.hidden, *[out.all_hidden[-1 - m] for m in range(1, self.depth)]]

    def forward(self, out: BackboneOutput) -> Tensor:
        blocks = []
        for h in self.layers(out):
            for i in range(self.window):  # h_{t-i}, zeros before the start
                blocks.append(F.pad(h, (0, 0, i, 0))[:, : h.size(1)] if i else h)
        return torch.cat([out.hidden, F.gelu(self.proj(torch.cat(blocks, -1)), approximate="tanh")], -1)


class MultiFacetSoftmax(nn.Module):
    """See the module docstring. `tied_embedding`: the output embedding W (|V|, d) is that Parameter."""

    scores_targets = True  # CausalLM passes targets= in training: only log p(target) is computed

    def __init__(self, d_model: int, vocab_size: int, tied_embedding: nn.Embedding | None = None,
                 num_softmax: int = 1, num_partitions: int = 1, multi_input: bool = False, window: int = 3,
                 depth: int = 3, sigsoftmax: bool = False, doc: bool = False, bias: bool = False,
                 init_noise: float = 1e-4, context: bool = False, local: bool = False,
                 reranker_sizes: tuple[int, ...] = (), merge: str = "assign", context_includes_current: bool = True,
                 pad_id: int | None = None, local_init: float = 1e-10, mixture: str = "mos"):
        super().__init__()
        if merge not in ("assign", "add"):
            raise ValueError(f"merge must be 'assign' or 'add', got {merge!r}")
        if mixture not in ("mos", "max_logits"):
            raise ValueError(f"mixture must be 'mos' or 'max_logits', got {mixture!r}")
        if mixture == "max_logits" and (doc or num_softmax == 1):
            raise ValueError("mixture='max_logits' pools K >= 2 facets' logits (not DOC)")
        if any(n < 1 or n > vocab_size for n in reranker_sizes) or len(set(reranker_sizes)) != len(reranker_sizes):
            raise ValueError(f"reranker sizes must be distinct and in [1, {vocab_size}], got {reranker_sizes}")
        if (context or local or reranker_sizes) and (doc or sigsoftmax or num_partitions > 1):
            raise ValueError("dynamic partitions (C/L/R) combine with Mi and K softmaxes, not with DOC, "
                             "SigSoftmax or static partitions")
        if num_softmax < 1 or num_partitions < 1:
            raise ValueError("num_softmax and num_partitions must be >= 1")
        if doc and (multi_input or num_partitions > 1 or sigsoftmax):
            raise ValueError("DOC takes one layer per facet; it does not combine with Mi, partitions or SigSoftmax")
        if sigsoftmax and num_softmax > 1:
            raise ValueError("SigSoftmax is a single-softmax head (num_softmax=1)")
        self.K, self.J, self.doc, self.sigsoftmax = (3 if doc else num_softmax), num_partitions, doc, sigsoftmax
        self.max_logits = mixture == "max_logits"
        self.vocab_size = vocab_size
        self.weight = output_embedding(vocab_size, d_model, tied_embedding)
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None
        self.multi_input = MultiInput(d_model, window, depth) if multi_input else None
        d_q = 2 * d_model if multi_input else d_model
        n_facets = self.J + self.K - 1
        noise = init_noise if multi_input else 0.0
        self.facets = nn.ModuleList([identity_facet(d_q, d_model, noise=noise if k < n_facets - 1 else 0.0)
                                     for k in range(n_facets)])  # DOC: one per layer, d -> d
        # L^π; DOC reads the concatenation of its three layers
        self.prior = nn.Linear(3 * d_model if doc else d_q, self.K) if self.K > 1 and not self.max_logits else None
        self.needs_all_hidden = doc or (multi_input and depth > 1)
        # dynamic partitions of the first softmax
        small = local_init
        scale = 1.0 if merge == "assign" else small
        self.merge, self.context_includes_current, self.pad_id = merge, context_includes_current, pad_id
        self.reranker_sizes = tuple(sorted(reranker_sizes))  # ring p has size reranker_sizes[p]
        self.f_rerank = nn.ModuleList([identity_facet(d_q, d_model, scale) for _ in self.reranker_sizes])
        self.f_context = identity_facet(d_q, d_model, scale) if context else None
        self.f_local = identity_facet(d_q, d_model, small) if local else None  # L^f_L
        self.f_key = identity_facet(d_q, d_model, small) if local else None  # L^f_E

    @property
    def uses_memory_ids(self) -> bool:
        """The context partition also counts the tokens in a memory backbone's memory (CausalLM passes them)."""
        return self.f_context is not None

    @property
    def dynamic(self) -> bool:
        return bool(self.reranker_sizes) or self.f_context is not None or self.f_local is not None

    def _logits(self, f: Tensor) -> Tensor:
        return F.linear(f, self.weight, self.bias)

    def _partitioned_logits(self, fs: list[Tensor], word_order: bool = True) -> Tensor:
        """First softmax with J interleaved partitions: logits[..., x] = f_{x mod J} · w_x (+ b_x), computed by
        `partition_product` in partition-major order (word x at `partition_position(x)`; no copy of W, no
        padding); `word_order` puts the logits back in word order (one index_select), which only the full
        distribution needs (the loss reads the target's)."""
        V = self.vocab_size
        z = partition_product(torch.stack(fs, 0).flatten(1, -2), self.weight).view(*fs[0].shape[:-1], V)
        pos = self.partition_position(torch.arange(V, device=z.device)) if word_order or self.bias is not None else None
        if self.bias is not None:
            z = z + torch.empty_like(self.bias).index_copy_(0, pos, self.bias)  # b in partition-major order
        return z.index_select(-1, pos) if word_order else z

    def partition_position(self, x: Tensor) -> Tensor:
        """Where word x sits in the partition-major logits: with n = V // J, word x < J·n at (x mod J)·n + x // J
        (partition x mod J, rank x // J), a word of the incomplete last row (x >= J·n) at x itself."""
        n = self.vocab_size // self.J
        return torch.where(x < self.J * n, (x % self.J) * n + x // self.J, x)

    def _top_ids(self, logits: Tensor, n: int) -> Tensor:
        """Ids of the n largest logits in no particular order, never the padding id: the top n + 1 less the
        padding id where it is among them, else less the smallest (no (B, T, V) copy with the padding logit at
        -inf)."""
        ranked = logits.detach()
        if self.pad_id is None:
            return top_indices(ranked, n, sorted=False)
        k = min(n + 1, ranked.size(-1))
        idx = top_indices(ranked, k, sorted=False)
        is_pad = idx == self.pad_id
        drop = torch.where(is_pad.any(-1, keepdim=True), is_pad.to(torch.uint8).argmax(-1, keepdim=True),
                           ranked.gather(-1, idx).argmin(-1, keepdim=True))
        keep = torch.ones_like(idx, dtype=torch.bool).scatter_(-1, drop, False)
        return idx[keep].view(*idx.shape[:-1], k - 1)[..., :n]

    def _rings(self, logits: Tensor, f1: Tensor, q: Tensor) -> tuple[Tensor, Tensor]:
        """Reranker rings, largest first, each taking the top n of the *current* logits (Eq. 2.8 as the
        reference), as (candidates (B, P, m), their logit changes (B, P, m)) over the m = sum of the ring sizes
        best words of the base logits: every ring's top n of the current logits lies among them (the words
        outside are unchanged and rank below the m-th), so the rings run in this compact space.

        assign: a ring word's change is (f_R - f_1) · w_x, the ring logit minus the base logit (bias cancels),
        recomputed on the candidates so that the gradient never needs a dense pass (the caller adds the changes
        with `scatter_add_`, whose backward passes the logits' gradient through); add: + f_R · w_x (+ b_x)."""
        assign = self.merge == "assign"
        m = min(sum(self.reranker_sizes), self.vocab_size - (self.pad_id is not None))
        cand = self._top_ids(logits, m)  # never the padding id
        rank = logits.detach().gather(-1, cand)
        rings = list(reversed(list(zip(self.reranker_sizes, self.f_rerank, strict=True))))
        g = torch.stack([layer(q) - f1 if assign else layer(q) for _, layer in rings], -2)  # (B, P, R, d)
        if g.size(-2) * self.vocab_size <= 16 * cand.size(-1):  # candidates a large share of V: one product
            # with every word costs less than gathering the candidates' rows and scattering their gradient
            new = F.linear(g, self.weight).gather(-1, cand.unsqueeze(-2).expand(*g.shape[:-1], cand.size(-1)))
        else:
            new = g @ embedding_rows(self.weight, cand).transpose(-1, -2)  # (B, P, R, m)
        if self.bias is not None and not assign:
            new = new + self.bias[cand].unsqueeze(-2)
        delta = torch.zeros_like(rank)
        for r, (n, _) in enumerate(rings):
            best = (rank + delta.detach()).topk(min(n, m), -1, sorted=False).indices  # top n of the current
            top = torch.zeros_like(rank, dtype=torch.bool).scatter_(-1, best, True)
            delta = torch.where(top, new[..., r, :], delta) if assign else delta + top * new[..., r, :]
        return cand, delta

    def _dynamic(self, logits: Tensor, f1: Tensor, q: Tensor, q_all: Tensor, input_ids: Tensor | None,
                 mem_ids: Tensor | None, positions: Tensor | None) -> Tensor:
        """R rings, then C and/or L on the context words (Eqs. 2.5, 2.7-2.11), written into the fresh base
        logits (B, P, V) in place as sparse additions, each by one `scatter_add_` (the rings' changes; every
        context word's at its first occurrence, zeros at the others). `scatter_add_` passes the gradient through
        to the base logits unchanged (no dense copy, unlike an assignment), and the assign mode's "replace" is
        an addition of (new - base) whose base part is recomputed sparsely from f_1. q: the query positions'
        states (B, P, d_q); q_all: every segment position's (B, T, d_q), the keys of L.

        The means over a word's occurrences (L) are taken in context space with a (B, S, S) same-word matrix;
        C's value f_C · w_x is the same at every occurrence."""
        ring = self._rings(logits, f1, q) if self.reranker_sizes else None
        if self.f_context is None and self.f_local is None:
            return logits.scatter_add_(-1, ring[0], ring[1].to(logits.dtype))
        if input_ids is None:
            raise ValueError("context partition / local embeddings need the input ids")
        ctx, mask = context_positions(input_ids, mem_ids, self.context_includes_current, self.pad_id, positions)
        replace = self.f_context is not None and self.merge == "assign"  # C replaces the base logit (Eq. 2.11)
        if ring is not None:
            cand, delta = ring
            if replace:  # a context word's logit is C's: its ring change is dropped
                delta = delta.masked_fill(in_context(cand, ctx, mask, self.vocab_size), 0.0)
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
            value = value + torch.einsum("btd,bsd->bts", fc, embedding_rows(self.weight, ctx))
            if self.bias is not None and not replace:
                value = value + self.bias[ctx][:, None, :]
        value = value.masked_fill(~(mask & first[:, None, :]), 0.0)  # each context word of each query once
        return logits.scatter_add_(-1, ctx[:, None, :].expand(B, P, S), value.to(logits.dtype))

    def _components(self, out: BackboneOutput, input_ids: Tensor | None, mem_ids: Tensor | None,
                    positions: Tensor | None = None, word_order: bool = True) -> tuple[list[Tensor], Tensor | None]:
        """Logits of the K softmaxes as groups [(B, T, k_i, V), ...] with sum k_i = K, in softmax order (their
        concatenation along -2 is the (B, T, K, V) logits; kept apart so that the loss path never copies them
        together), and log π (B, T, K) (None when K = 1 or max-pooled); T -> P with `positions` (B, P).
        `word_order=False`: a partitioned first softmax stays partition-major (see `_partitioned_logits`)."""
        if self.doc:
            if out.all_hidden is None or len(out.all_hidden) < 3:
                raise ValueError("DOC needs the top 3 layers; call the backbone with output_all_hidden=True")
            hs = [select_positions(h, positions) for h in (out.all_hidden[-3], out.all_hidden[-2], out.hidden)]
            f = torch.stack([layer(h) for layer, h in zip(self.facets, hs, strict=True)], -2)  # facet k <- M-3+k
            return [self._logits(f)], torch.log_softmax(upcast(self.prior(torch.cat(hs, -1))), -1)
        q_all = out.hidden if self.multi_input is None else self.multi_input(out)
        q = select_positions(q_all, positions)
        fs = [layer(q) for layer in self.facets]
        log_prior = torch.log_softmax(upcast(self.prior(q)), -1) if self.prior is not None else None
        if self.J == 1 and not self.dynamic:  # every softmax in one product
            return [self._logits(torch.stack(fs, -2))], log_prior
        first = self._logits(fs[0]) if self.J == 1 else self._partitioned_logits(fs[: self.J], word_order)
        if self.dynamic:  # J == 1
            first = self._dynamic(first, fs[0], q, q_all, input_ids, mem_ids, positions)
        groups = [first.unsqueeze(-2)]
        if self.K > 1:
            groups.append(self._logits(torch.stack(fs[self.J:], -2)))
        return groups, log_prior

    def facet_logits(self, out: BackboneOutput, input_ids: Tensor | None = None, mem_ids: Tensor | None = None,
                     positions: Tensor | None = None) -> tuple[list[Tensor], Tensor | None]:
        """Logits of each of the K softmaxes, (B, T, V) each, and log π (B, T, K) (None when K = 1 or
        max-pooled)."""
        groups, log_prior = self._components(out, input_ids, mem_ids, positions)
        return [z for g in groups for z in g.unbind(-2)], log_prior

    def _sig(self, z: Tensor) -> Tensor:
        """SigSoftmax's g(z) = z + log σ(z), whose softmax is the SigSoftmax distribution; z itself otherwise."""
        return upcast(z) + F.logsigmoid(upcast(z)) if self.sigsoftmax else z

    def forward(self, out: BackboneOutput, input_ids: Tensor | None = None, mem_ids: Tensor | None = None,
                positions: Tensor | None = None, targets: Tensor | None = None) -> HeadOutput:
        """Scores (B, T, V) at every position, or (B, P, V) at `positions` (B, P) only (a recommender's
        read-out, the last position in generation); the context of position t stays c_t.

        `targets` (B, T) (or (B, P)): only log p(target) (`HeadOutput.target_log_probs`), what training needs:
        each softmax contributes its target log-probability through `target_log_softmax` (no (B, T, V)
        log-probabilities, no (B, T, K, V) mixture tensor, softmax - one-hot written once in backward) and the
        mixture is a log-sum-exp over K numbers per position; a partitioned first softmax is never put back
        in word order. Out-of-range targets (ignore_index) score as word 0."""
        if targets is not None:
            return HeadOutput(None, is_log_prob=True, target_log_probs=self._target_log_probs(
                out, input_ids, mem_ids, positions, targets))
        groups, log_prior = self._components(out, input_ids, mem_ids, positions)
        z = torch.cat(groups, -2) if len(groups) > 1 else groups[0]  # (B, T, K, V)
        if self.max_logits:  # multi-softmax of the recommenders (thesis C §2.5): one softmax of max_k z_k
            return HeadOutput(z.amax(-2), is_log_prob=False)
        if self.K == 1:
            return HeadOutput(self._sig(z.squeeze(-2)), is_log_prob=False)
        logp = torch.logsumexp(torch.log_softmax(upcast(z), -1) + log_prior.unsqueeze(-1), dim=-2)
        return HeadOutput(logp, is_log_prob=True)

    def _target_log_probs(self, out: BackboneOutput, input_ids: Tensor | None, mem_ids: Tensor | None,
                          positions: Tensor | None, targets: Tensor) -> Tensor:
        V = self.vocab_size
        t = targets.clamp(0, V - 1).reshape(-1)  # (N,)
        if self.max_logits:  # one softmax of the pooled logits
            z = self.forward(out, input_ids, mem_ids, positions).scores
            return target_log_softmax(upcast(z).reshape(-1, V), t).view(targets.shape)
        groups, log_prior = self._components(out, input_ids, mem_ids, positions, word_order=False)
        lps = []
        for i, g in enumerate(groups):  # g (B, T, k, V)
            k = g.size(-2)
            idx = self.partition_position(t) if i == 0 and self.J > 1 else t
            lp = target_log_softmax(self._sig(upcast(g)).flatten(0, -2), idx.repeat_interleave(k))
            lps.append(lp.view(-1, k))
        lp = torch.cat(lps, -1) if len(lps) > 1 else lps[0]  # (N, K)
        if self.K == 1:
            return lp.view(targets.shape)
        return torch.logsumexp(lp + log_prior.reshape(-1, self.K), -1).view(targets.shape)
