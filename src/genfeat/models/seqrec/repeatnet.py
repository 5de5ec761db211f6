"""RepeatNet (Ren et al. 2019), the pointer-network (copy) baseline of thesis C §2.5, Table 2.7, as RecBole
implements it (spec sequential-recommendation.md §5).

    H = GRU(E[i_1..i_L]),  h_T = H[len - 1]                                    (embedding 64, hidden 64)
    repeat/explore  e_t = v_re · tanh(Drop(U_re h_t) + Drop(W_re h_T)),  α = softmax_t(e),
                    [P(r), P(e)] = softmax(W_cre Σ_t α_t h_t)
    repeat          β = softmax_t(v_r · tanh(Drop(W_r h_T) + Drop(U_r h_t)) + b_r),  P_r(x) = Σ_{t: i_t = x} β_t
    explore         γ = softmax_t(v_e · tanh(Drop(U_e h_t) + Drop(W_e h_T)) + b_e),  c_e = Σ_t γ_t h_t,
                    P_e = softmax(Drop(W_explore [c_e; h_T])) with history items at -inf
    P(x) = P(r) P_r(x) + P(e) P_e(x)

Every item gets exactly one of the two terms (P_r is zero off the history, P_e on it), so the log-probability
is computed exactly in log space (the reference takes log(P + 1e-8)). Init: Xavier-normal for the embedding and
every Linear weight, zero biases (RecBole).

`at_positions` reads out several positions of one sequence at once (window training), position t attending over
the items up to t; `forward` is its read-out at the last real item.

Deviations: padding positions are masked in all three attentions (RecBole leaves them in the repeat/explore
switch's softmax) and the padding id gets probability 0.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from genfeat.heads.base import select_positions
from genfeat.nn.dropout import Dropout


class _Attention(nn.Module):
    """softmax_s(v · tanh(Drop(U h_s) + Drop(W h_T))) over the valid positions s of each query T: (B, P, L)."""

    def __init__(self, d: int, bias: bool, v_bias: bool, dropout: float):
        super().__init__()
        self.U, self.W = nn.Linear(d, d, bias=bias), nn.Linear(d, d, bias=bias)
        self.v = nn.Linear(d, 1, bias=v_bias)
        self.drop = Dropout(dropout)

    def forward(self, H: Tensor, h_T: Tensor, valid: Tensor) -> Tensor:
        e = self.v(torch.tanh(self.drop(self.U(H))[:, None] + self.drop(self.W(h_T))[:, :, None])).squeeze(-1)
        return torch.log_softmax(e.masked_fill(~valid, float("-inf")), -1)


class RepeatNet(nn.Module):
    def __init__(self, n_items: int, d: int = 64, hidden_size: int = 64, dropout: float = 0.5):
        super().__init__()
        self.n_items = n_items
        self.item_embedding = nn.Embedding(n_items + 1, d, padding_idx=0)
        self.gru = nn.GRU(d, hidden_size, batch_first=True)
        self.switch = _Attention(hidden_size, bias=False, v_bias=False, dropout=dropout)
        self.switch_out = nn.Linear(hidden_size, 2, bias=False)
        self.repeat = _Attention(hidden_size, bias=False, v_bias=True, dropout=dropout)
        self.explore = _Attention(hidden_size, bias=True, v_bias=True, dropout=dropout)
        self.explore_out = nn.Linear(2 * hidden_size, n_items + 1, bias=False)
        self.drop = Dropout(dropout)
        for m in self.modules():
            if isinstance(m, (nn.Embedding, nn.Linear)):
                nn.init.xavier_normal_(m.weight)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, item_seq: Tensor, length: Tensor) -> tuple[Tensor, Tensor]:
        """(log P (B, n_items + 1), log [P(r), P(e)] (B, 2)) for the history of each row (read out at len - 1)."""
        logp, log_re = self.at_positions(item_seq, (length - 1)[:, None])
        return logp[:, 0], log_re[:, 0]

    def at_positions(self, item_seq: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """(log P (B, P, n_items + 1), log [P(r), P(e)] (B, P, 2)) read out at `positions` (B, P): position t's
        history is the items up to t (the GRU is causal; the attentions see positions <= t)."""
        H, _ = self.gru(self.item_embedding(item_seq))
        h_T = select_positions(H, positions)  # (B, P, d)
        steps = torch.arange(item_seq.size(1), device=item_seq.device)
        valid = (item_seq > 0)[:, None, :] & (steps <= positions[..., None])  # (B, P, L)
        log_alpha = self.switch(H, h_T, valid)
        log_re = torch.log_softmax(self.switch_out(log_alpha.exp() @ H), -1)  # (B, P, 2)
        # repeat: log Σ_{t: i_t = x} β_t, -inf off the history
        idx = item_seq[:, None, :].expand_as(valid)
        beta = self.repeat(H, h_T, valid).exp()
        p_r = torch.zeros(*valid.shape[:2], self.n_items + 1, dtype=H.dtype, device=H.device)
        p_r = p_r.scatter_add(-1, idx, beta.masked_fill(~valid, 0.0))
        in_hist = torch.zeros_like(p_r, dtype=torch.bool).scatter_reduce_(-1, idx, valid, "amax")
        # explore over the items outside the history
        c_e = self.explore(H, h_T, valid).exp() @ H
        z = self.drop(self.explore_out(torch.cat([c_e, h_T], -1)))
        z = z.masked_fill(in_hist, float("-inf"))
        z[..., 0] = float("-inf")
        log_pe = torch.log_softmax(z, -1)
        log_pr = torch.log(p_r.clamp_min(torch.finfo(p_r.dtype).tiny))
        logp = torch.where(in_hist, log_re[..., :1] + log_pr, log_re[..., 1:] + log_pe)
        return logp, log_re
