"""Multi-facet output heads (thesis C §2.3, Eqs. 2.2-2.4, Table 2.1) with the dynamic partitions of §2.4
(Eqs. 2.5-2.11, Table 2.4; spec multi-facet-softmax.md §3-6) on the first softmax:

    Softmax                  K=1, J=1                     f_1 = L^f_1(h^M), identity-initialised
    SigSoftmax               K=1, sigsoftmax=True         P(x) ∝ exp(z_x) σ(z_x)  (Kanai et al. 2018)
    Softmax + Multi-input    K=1, multi_input=True        facets from q (Eq. 2.3, `facets.MultiInput`)
    Softmax + Multi-partition K=1, J=4                    word x scored by the facet of partition x mod J
    MoS(K)                   K=3 or 4                     sum_k π_k softmax(f_k^T W)  (Eq. 2.2, no tanh)
    MFS w/o MP / w/o Mi      K=3 with Mi / with J=4
    MFS                      K=3, J=4, multi_input=True   (Eq. 2.4 on q of Eq. 2.3)
    C / R / L / CLR          dynamic=DynamicSpec(...)     (`dynamic.py`; K softmaxes and Mi combine with them)

DOC (one facet per layer) is `doc.DOCHead`; the static-partition kernel is `partitions.py`.

Facets: linear with bias, initialised to [I | 0] on the h^M block (the head starts as the plain softmax), the
non-h^M columns of every facet but the last get uniform noise 1e-4·(U-0.5) (reference code, symmetry breaking).
Priors L^π: PyTorch default init. With a memory backbone (Transformer-XL) the Mi window does not reach into the
memory: the first positions of a segment see zeros, as at a sequence start (a choice; the memory holds only
states, not the block outputs the window needs at every layer).

Output: logits (K=1: a single softmax, SigSoftmax as g(z) = z + log σ(z), whose softmax is the SigSoftmax
distribution) or log-probabilities log Σ_k π_k softmax_k computed with logsumexp (K>1). `mixture="max_logits"`
instead pools the K facets' logits, max_k z_k, into one softmax: the recommenders' "Multi-Softmax" (thesis C
§2.5; keeps maximum-inner-product retrieval possible); dynamic partitions then act on the first facet's logits
before the max. `positions` (B, P) scores only those query positions (a recommender's read-out, the last step
of generation): facets, priors and rerankers run on P states instead of T, and the context of each selected
position t is still c_t.

Training calls the head with `targets=`: it then returns only log p(target), each softmax's through
`target_log_softmax` and the mixture as a log-sum-exp over K numbers per position -- no (B, T, K, V)
log-probabilities or mixture temporaries, and a partitioned first softmax stays in partition-major order (its
word-order gather is only needed for the full distribution). Same values and gradients as the NLL of the full
distribution (tests/heads/test_head_config.py).

Deviations: none from the equations. The multi-partition first softmax assigns words to partitions by id
(x mod J) as the thesis.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.heads.base import HeadNeeds, HeadOutput, output_embedding, select_positions, target_log_softmax, upcast
from genfeat.heads.dynamic import DynamicPartitions, DynamicSpec
from genfeat.heads.facets import MultiInput, identity_facet
from genfeat.heads.partitions import partition_position, partition_product
from genfeat.nn.outputs import BackboneOutput


class MixtureHead(nn.Module):
    """K softmaxes over one output embedding W, mixed by priors π (MoS), max-pooled, or alone (K = 1): the
    forward and loss paths shared by `MultiFacetSoftmax` and `DOCHead`. A subclass provides `_components`
    (the K logits and log π) and sets K, J, vocab_size, weight, bias, sigsoftmax, max_logits."""

    K: int
    J: int = 1
    sigsoftmax: bool = False
    max_logits: bool = False

    def _components(self, out: BackboneOutput, input_ids: Tensor | None, mem_ids: Tensor | None,
                    positions: Tensor | None = None, word_order: bool = True) -> tuple[list[Tensor], Tensor | None]:
        raise NotImplementedError

    def _logits(self, f: Tensor) -> Tensor:
        return F.linear(f, self.weight, self.bias)

    def partition_position(self, x: Tensor) -> Tensor:
        """Where word x sits in the first softmax's partition-major logits (`partitions.partition_position`)."""
        return partition_position(x, self.vocab_size, self.J)

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


MIXTURES = ("mos", "max_logits")  # K > 1: Eq. 2.2's mixture of softmaxes | one softmax of max_k z_k (§2.5)


class MultiFacetSoftmax(MixtureHead):
    """See the module docstring. `tied_embedding`: the output embedding W (|V|, d) is that Parameter;
    `dynamic`: the C / R / L partitions of the first softmax (None: none)."""

    def __init__(self, d_model: int, vocab_size: int, tied_embedding: nn.Embedding | None = None,
                 num_softmax: int = 1, num_partitions: int = 1, multi_input: bool = False, window: int = 3,
                 depth: int = 3, sigsoftmax: bool = False, bias: bool = False, init_noise: float = 1e-4,
                 mixture: str = "mos", dynamic: DynamicSpec | None = None):
        super().__init__()
        if mixture not in MIXTURES:
            raise ValueError(f"mixture must be one of {', '.join(MIXTURES)}, got {mixture!r}")
        if mixture == "max_logits" and num_softmax == 1:
            raise ValueError("mixture='max_logits' pools K >= 2 facets' logits")
        if num_softmax < 1 or num_partitions < 1:
            raise ValueError("num_softmax and num_partitions must be >= 1")
        if dynamic is not None and not dynamic.any:
            dynamic = None
        if dynamic is not None and (sigsoftmax or num_partitions > 1):
            raise ValueError("dynamic partitions (C/L/R) combine with Mi and K softmaxes, not with SigSoftmax or "
                             "static partitions")
        if sigsoftmax and num_softmax > 1:
            raise ValueError("SigSoftmax is a single-softmax head (num_softmax=1)")
        self.K, self.J, self.sigsoftmax = num_softmax, num_partitions, sigsoftmax
        self.max_logits = mixture == "max_logits"
        self.vocab_size = vocab_size
        self.weight = output_embedding(vocab_size, d_model, tied_embedding)
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None
        self.multi_input = MultiInput(d_model, window, depth) if multi_input else None
        d_q = 2 * d_model if multi_input else d_model
        n_facets = self.J + self.K - 1
        noise = init_noise if multi_input else 0.0
        self.facets = nn.ModuleList([identity_facet(d_q, d_model, noise=noise if k < n_facets - 1 else 0.0)
                                     for k in range(n_facets)])
        self.prior = nn.Linear(d_q, self.K) if self.K > 1 and not self.max_logits else None  # L^π
        self.dynamic = DynamicPartitions(dynamic, d_q, d_model, vocab_size) if dynamic is not None else None
        self.needs = HeadNeeds(all_hidden=multi_input and depth > 1, input_ids=dynamic is not None,
                               memory_ids=dynamic is not None and dynamic.context, targets=True, positions=True)

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

    def _components(self, out: BackboneOutput, input_ids: Tensor | None, mem_ids: Tensor | None,
                    positions: Tensor | None = None, word_order: bool = True) -> tuple[list[Tensor], Tensor | None]:
        """Logits of the K softmaxes as groups [(B, T, k_i, V), ...] with sum k_i = K, in softmax order (their
        concatenation along -2 is the (B, T, K, V) logits; kept apart so that the loss path never copies them
        together), and log π (B, T, K) (None when K = 1 or max-pooled); T -> P with `positions` (B, P).
        `word_order=False`: a partitioned first softmax stays partition-major (see `_partitioned_logits`)."""
        q_all = out.hidden if self.multi_input is None else self.multi_input(out)  # (B, T, d_q)
        q = select_positions(q_all, positions)  # (B, P, d_q)
        fs = [layer(q) for layer in self.facets]  # J + K - 1 facets (B, P, d)
        log_prior = torch.log_softmax(upcast(self.prior(q)), -1) if self.prior is not None else None
        if self.J == 1 and self.dynamic is None:  # every softmax in one product
            return [self._logits(torch.stack(fs, -2))], log_prior
        first = self._logits(fs[0]) if self.J == 1 else self._partitioned_logits(fs[: self.J], word_order)
        if self.dynamic is not None:  # J == 1
            first = self.dynamic(first, fs[0], q, q_all, self.weight, self.bias, input_ids, mem_ids, positions)
        groups = [first.unsqueeze(-2)]
        if self.K > 1:
            groups.append(self._logits(torch.stack(fs[self.J:], -2)))
        return groups, log_prior
