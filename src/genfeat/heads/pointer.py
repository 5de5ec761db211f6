"""Pointer-network baselines on a causal LM, as thesis C re-implements them on GPT-2 (§2.4, Table 2.4;
spec multi-facet-softmax.md §5.6): CopyNet (Gu et al. 2016), Pointer-Generator (See et al. 2017) and
Pointer-Sentinel (Merity et al. 2017).

All three share the base logits z_x = f_1 · w_x (f_1 = L^f_1(q), identity-initialised), a query
u_t = L_Q(q_t) and keys k_i = L_K(q_i) at the context positions (the same layers and 1e-10·I init as the
L facets of dynamic partitioning); q = h^M, or Eq. 2.3 with `multi_input`. With I_t the context positions
(i <= t, or i < t with `context_includes_current=False`; pad ids excluded) and I_t(x) those holding x:

    CopyNet            P(x) ∝ exp(z_x) + Σ_{i∈I_t(x)} exp(u_t · tanh(k_i))
    Pointer-Generator  a = softmax_{I_t}(v · tanh(u_t + k_i + b)),  p_gen = σ(w_g · h^M_t + b_g),
                       P(x) = p_gen softmax(z)_x + (1 - p_gen) Σ_{i∈I_t(x)} a_i      (v, b, b_g start at 0)
    Pointer-Sentinel   [a; a_g] = softmax([u_t · tanh(k_i)]_{i∈I_t} ; w_g · h^M_t + b_g),
                       P(x) = a_g softmax(z)_x + Σ_{i∈I_t(x)} a_i

Attention is normalised over I_t only (the reference code also attends to future positions, which leaks
probability mass; spec §5.6). A position with an empty context (t = 0 with `context_includes_current=False`,
or all padding) falls back to softmax(z). Output: log-probabilities (is_log_prob=True), mixed in log space.

Deviations: none from the formulas. Unlike the dynamic-partition heads, these do not start exactly as the
softmax (CopyNet's copy scores start at exp(0), Pointer-Generator's gate at 1/2, the sentinel at 1/(|I_t|+1)).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.heads.base import HeadNeeds, HeadOutput, output_embedding, select_positions, target_log_softmax, upcast
from genfeat.heads.dynamic import context_positions
from genfeat.heads.facets import MultiInput, identity_facet
from genfeat.nn.outputs import BackboneOutput

MODES = ("copynet", "pointer_generator", "pointer_sentinel")


class PointerHead(nn.Module):
    def __init__(self, d_model: int, vocab_size: int, tied_embedding: nn.Embedding | None = None,
                 mode: str = "pointer_sentinel", multi_input: bool = False, window: int = 3, depth: int = 3,
                 context_includes_current: bool = True, pad_id: int | None = None, bias: bool = False,
                 key_init: float = 1e-10):
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode, self.context_includes_current, self.pad_id = mode, context_includes_current, pad_id
        self.weight = output_embedding(vocab_size, d_model, tied_embedding)
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None
        self.multi_input = MultiInput(d_model, window, depth) if multi_input else None
        self.needs = HeadNeeds(all_hidden=multi_input and depth > 1, input_ids=True, targets=True, positions=True)
        d_q = 2 * d_model if multi_input else d_model
        self.facet = identity_facet(d_q, d_model)  # f_1
        self.query = identity_facet(d_q, d_model, key_init)  # L_Q
        self.key = identity_facet(d_q, d_model, key_init)  # L_K
        if mode == "pointer_generator":
            self.v = nn.Parameter(torch.zeros(d_model))
            self.attn_bias = nn.Parameter(torch.zeros(d_model))
        if mode != "copynet":
            self.gate = nn.Linear(d_model, 1)  # w_g, b_g on h^M
            nn.init.zeros_(self.gate.bias)

    def forward(self, out: BackboneOutput, input_ids: Tensor | None = None, mem_ids: Tensor | None = None,
                positions: Tensor | None = None, targets: Tensor | None = None) -> HeadOutput:
        """Log-probabilities (B, T, V), or (B, P, V) at `positions` (B, P) only.

        `targets` (B, T) (or (B, P)): only log p(target) (`HeadOutput.target_log_probs`), what training needs.
        The copy mass of the target is a log-sum-exp over the context positions holding it, the generator's
        log softmax(z)_target comes from `target_log_softmax`: no (B, T, V) tensor besides the logits z and
        their softmax. Out-of-range targets (ignore_index) score as word 0."""
        if input_ids is None:
            raise ValueError("pointer heads need the input ids")
        if mem_ids is not None:
            raise ValueError("pointer heads attend over the current segment only (keys need hidden states)")
        q_all = out.hidden if self.multi_input is None else self.multi_input(out)
        q = select_positions(q_all, positions)
        z = upcast(F.linear(self.facet(q), self.weight, self.bias))  # (B, T, V)
        ctx, mask = context_positions(input_ids, None, self.context_includes_current, self.pad_id, positions)
        B, T, S = mask.shape
        V = z.size(-1)
        u, k = upcast(self.query(q)), upcast(self.key(q_all))
        has_ctx = mask.any(-1, keepdim=True)  # (B, T, 1)
        if targets is None:
            index = ctx[:, None, :].expand(B, T, S)

            def log_copy(log_w: Tensor) -> Tensor:  # log Σ_{i∈I_t(x)} exp(log_w_i), -inf for words not in c_t
                return masked_logsumexp(log_w, mask, index, V)
        else:
            t = targets.clamp(0, V - 1)
            hit = mask & (ctx[:, None, :] == t[..., None])  # (B, T, S) context positions holding the target
            lp_t, lse = target_log_softmax(z.reshape(-1, V), t.reshape(-1), return_lse=True)
            log_softmax_z = lp_t.view(B, T, 1)  # log softmax(z)_target

            def log_copy(log_w: Tensor) -> Tensor:  # log Σ_{i∈I_t(target)} exp(log_w_i), -inf when none
                return masked_logsumexp(log_w, hit)
        if self.mode == "copynet":
            s = torch.einsum("btd,bsd->bts", u, torch.tanh(k))
            if targets is not None:  # log (exp z_t + copy_t) - log (Σ_x exp z_x + Σ_{i∈I_t} exp s_i)
                z_t, lse = (lp_t + lse).view(B, T, 1), lse.view(B, T, 1)
                logp = torch.logaddexp(z_t, log_copy(s)) - torch.logaddexp(lse, masked_logsumexp(s, mask))
                return HeadOutput(None, is_log_prob=True, target_log_probs=logp.squeeze(-1))
            logp = torch.logaddexp(z, log_copy(s))
            return HeadOutput(logp - torch.logsumexp(logp, -1, keepdim=True), is_log_prob=True)
        gate = upcast(self.gate(select_positions(out.hidden, positions)))  # (B, T, 1)
        if self.mode == "pointer_generator":
            e = torch.tanh(u[:, :, None, :] + k[:, None, :, :] + self.attn_bias) @ self.v.to(u.dtype)  # (B, T, S)
            e = torch.where(has_ctx, e.masked_fill(~mask, float("-inf")), 0.0)  # empty context: no NaN rows
            log_a = torch.log_softmax(e, -1)
            log_gen = torch.where(has_ctx, F.logsigmoid(gate), 0.0)
            log_cp = F.logsigmoid(-gate) + log_copy(log_a)
        else:  # pointer sentinel: one softmax over the context scores and the sentinel
            s = torch.einsum("btd,bsd->bts", u, torch.tanh(k)).masked_fill(~mask, float("-inf"))
            log_a = torch.log_softmax(torch.cat([s, gate], -1), -1)
            log_gen = log_a[..., -1:]
            log_cp = log_copy(log_a[..., :-1])
        if targets is not None:
            return HeadOutput(None, is_log_prob=True,
                              target_log_probs=torch.logaddexp(log_gen + log_softmax_z, log_cp).squeeze(-1))
        return HeadOutput(torch.logaddexp(log_gen + torch.log_softmax(z, -1), log_cp), is_log_prob=True)


def masked_logsumexp(x: Tensor, keep: Tensor, index: Tensor | None = None, size: int = 0) -> Tensor:
    """log Σ_{i: keep_i} exp(x_i) over the last axis (keepdim), or with `index` (same shape as x) summed into
    `size` bins by index (the copy mass of every word); -inf, with zero gradient, where nothing is kept."""
    x = x.masked_fill(~keep, float("-inf"))
    shift = x.amax(-1, keepdim=True)
    shift = torch.where(torch.isfinite(shift), shift, 0.0).detach()
    e = torch.exp(x - shift)
    total = e.sum(-1, keepdim=True) if index is None else e.new_zeros(*e.shape[:-1], size).scatter_add(-1, index, e)
    return torch.where(total > 0, torch.log(total.clamp_min(torch.finfo(total.dtype).tiny)) + shift, float("-inf"))
