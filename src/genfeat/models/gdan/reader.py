"""The gated-attention reader, GDAN's discriminative model D (thesis Y §3.2.4; Dhingra et al. 2017, thesis ref.
[35]; spec gdan.md §2.3-§2.4).

    H_p^0 = BiGRU_0(E p)                     paragraph (B, T, d), d = 2 · d_hidden
    H_q   = BiGRU_q(E q)                     question (B, T', d)
    hop k = 1..K, for every paragraph position i:
        α_ij  = softmax_j(h_qj · h_pi^{k-1})                 over the question's real positions (padding: exactly 0)
        g_i^k = (Σ_j α_ij h_qj) ⊙ h_pi^{k-1}                 multiplicative gating
        H_p^k = BiGRU_k(g^k) for k < K (`inter_layer_rnn`, the GA reader's; off: H_p^k = g^k, the thesis's formula)
    P_s(i) = softmax_i(w_sᵀ h_pi^K),  P_e(i) = softmax_i(w_eᵀ h_pi^K)    over real paragraph positions, never the tag
    log P(a = (j, k) | p, q) = log P_s(j) + log P_e(k)

Domain tags (§3.2.4): with `tag` (one vocabulary id, or one per row) the reader appends it after the last real
token of both the question and the paragraph, where it is embedded like any word; the span distributions exclude
its position and are returned over the untagged paragraph's positions, so answer indices do not move. The cloze
head (Children's Book Test; the GA reader's attention-sum) scores a candidate word by the start distribution's
mass on its occurrences: P(c) = Σ_{i: p_i = c} P_s(i).

Deviations: one question BiGRU shared by the hops (the thesis's form; `per_layer_question_rnn` gives the GA
reader's one per hop); the span head of thesis ref. [192] (the GA reader itself is cloze-only); GRU or LSTM.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from genfeat.nn.pointer import masked_softmax
from genfeat.nn.recurrent import BiRNN


@dataclass(frozen=True)
class ReaderConfig:
    vocab_size: int
    d_embed: int = 32
    d_hidden: int = 32  # per direction
    n_hops: int = 2  # K
    dropout: float = 0.2  # on the embeddings and between hops
    inter_layer_rnn: bool = True
    per_layer_question_rnn: bool = False
    cell: str = "gru"
    pad_id: int = 0

    def __post_init__(self) -> None:
        if min(self.vocab_size, self.d_embed, self.d_hidden, self.n_hops) < 1:
            raise ValueError("reader: vocab_size, d_embed, d_hidden and n_hops must be >= 1")


def append_tag(ids: Tensor, mask: Tensor, tag: int | Tensor) -> tuple[Tensor, Tensor]:
    """ids, mask (B, T) right-padded -> (B, T + 1) with `tag` (an id, or (B,) ids) after each row's last real
    token."""
    B, T = ids.shape
    ids = torch.cat([ids, ids.new_zeros(B, 1)], 1).masked_fill(~torch.cat([mask, mask.new_zeros(B, 1)], 1), 0)
    pos = mask.sum(1)  # (B,) the first free position
    tags = torch.as_tensor(tag, device=ids.device).expand(B)
    ids = ids.scatter(1, pos[:, None], tags[:, None])
    new_mask = torch.arange(T + 1, device=ids.device)[None, :] <= pos[:, None]
    return ids, new_mask


class GatedAttentionReader(nn.Module):
    def __init__(self, cfg: ReaderConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_embed, padding_idx=cfg.pad_id)
        self.drop = nn.Dropout(cfg.dropout)
        self.paragraph_rnns = nn.ModuleList(
            [BiRNN(cfg.d_embed, cfg.d_hidden, cfg.cell)]
            + [BiRNN(2 * cfg.d_hidden, cfg.d_hidden, cfg.cell)
               for _ in range(cfg.n_hops - 1 if cfg.inter_layer_rnn else 0)])
        n_q = cfg.n_hops if cfg.per_layer_question_rnn else 1
        self.question_rnns = nn.ModuleList([BiRNN(cfg.d_embed, cfg.d_hidden, cfg.cell) for _ in range(n_q)])
        self.start = nn.Linear(2 * cfg.d_hidden, 1)
        self.end = nn.Linear(2 * cfg.d_hidden, 1)

    @staticmethod
    def gate(h_p: Tensor, h_q: Tensor, q_mask: Tensor) -> tuple[Tensor, Tensor]:
        """One gated-attention hop: h_p (B, T, d), h_q (B, T', d), q_mask (B, T') -> (gated (B, T, d), α (B, T, T'))."""
        alpha = masked_softmax(h_p @ h_q.transpose(1, 2), q_mask[:, None, :])  # (B, T, T')
        return (alpha @ h_q) * h_p, alpha

    def forward(self, paragraph: Tensor, paragraph_mask: Tensor, question: Tensor, question_mask: Tensor,
                tag: int | Tensor | None = None) -> dict[str, Tensor]:
        """paragraph (B, T), question (B, T') ids with masks (True = real, right-padded); `tag` a domain tag id
        (or (B,) ids) appended to both, or None. Returns start_log_probs / end_log_probs (B, T) over the untagged
        paragraph's positions (-inf at padding) and `states` (B, T, d), the last hop's paragraph states."""
        T = paragraph.size(1)
        span_mask = paragraph_mask
        if tag is not None:
            paragraph, paragraph_mask = append_tag(paragraph, paragraph_mask, tag)
            question, question_mask = append_tag(question, question_mask, tag)
            span_mask = torch.cat([span_mask, span_mask.new_zeros(len(span_mask), 1)], 1)  # the tag: never a span
        e_p, e_q = self.drop(self.embed(paragraph)), self.drop(self.embed(question))
        h_p, _ = self.paragraph_rnns[0](e_p, paragraph_mask)  # (B, T(+1), d)
        h_q, _ = self.question_rnns[0](e_q, question_mask)  # (B, T'(+1), d)
        for k in range(self.cfg.n_hops):
            if k and self.cfg.per_layer_question_rnn:
                h_q, _ = self.question_rnns[k](e_q, question_mask)
            h_p, _ = self.gate(h_p, h_q, question_mask)
            if k < self.cfg.n_hops - 1 and self.cfg.inter_layer_rnn:
                h_p, _ = self.paragraph_rnns[k + 1](self.drop(h_p), paragraph_mask)
        s = self.start(h_p).squeeze(-1).masked_fill(~span_mask, float("-inf")).log_softmax(-1)  # (B, T(+1))
        e = self.end(h_p).squeeze(-1).masked_fill(~span_mask, float("-inf")).log_softmax(-1)
        return {"start_log_probs": s[:, :T], "end_log_probs": e[:, :T], "states": h_p[:, :T]}


def span_log_likelihood(start_log_probs: Tensor, end_log_probs: Tensor, starts: Tensor, ends: Tensor) -> Tensor:
    """log P_s(j) + log P_e(k) per row: (B, T) twice and (B,) indices -> (B,)."""
    return start_log_probs.gather(1, starts[:, None]).squeeze(1) + end_log_probs.gather(1, ends[:, None]).squeeze(1)


def best_spans(start_log_probs: Tensor, end_log_probs: Tensor, max_len: int = 15) -> Tensor:
    """argmax over j <= k <= j + max_len - 1 of log P_s(j) + log P_e(k): (B, T) twice -> (B, 2) (start, end)."""
    T = start_log_probs.size(1)
    i = torch.arange(T, device=start_log_probs.device)
    allowed = (i[None, :] >= i[:, None]) & (i[None, :] - i[:, None] < max_len)  # (T, T) [start, end]
    scores = (start_log_probs[:, :, None] + end_log_probs[:, None, :]).masked_fill(~allowed, float("-inf"))
    flat = scores.flatten(1).argmax(1)  # (B,)
    return torch.stack([flat // T, flat % T], 1)


def answer_log_likelihood(out: dict[str, Tensor], rows: dict[str, Tensor]) -> Tensor:
    """log P(a | p, q) per row (B,) of the reader's outputs `out`: the span's log P_s(j) + log P_e(k), or for cloze
    rows (rows with "candidates") the attention-sum log Σ_{i: p_i = p_j} P_s(i) over the answer word's occurrences
    (the GA reader's cloze objective)."""
    if "candidates" in rows:
        word = rows["paragraph"].gather(1, rows["start"][:, None])  # (B, 1) the answer's id
        return candidate_log_probs(rows["paragraph"], out["start_log_probs"], word).squeeze(1)
    return span_log_likelihood(out["start_log_probs"], out["end_log_probs"], rows["start"], rows["end"])


def candidate_log_probs(paragraph: Tensor, start_log_probs: Tensor, candidates: Tensor) -> Tensor:
    """The cloze head: paragraph (B, T) ids, start_log_probs (B, T), candidates (B, C) word ids -> (B, C)
    log Σ_{i: p_i = c} P_s(i) (-inf for a candidate absent from the paragraph)."""
    hit = paragraph[:, None, :] == candidates[:, :, None]  # (B, C, T)
    return start_log_probs[:, None, :].masked_fill(~hit, float("-inf")).logsumexp(-1)
