"""A sequential recommender: encoder (SASRec / GRU4Rec) + any output head of `genfeat.heads` on the tied item
embedding, read out at one position per history (thesis C §2.5.1; spec sequential-recommendation.md §3-4).

The head object is the one the language models use (`build_head`, vocabulary = items + the padding id 0,
`pad_id=0` so padding never enters the context partition, the local embeddings or the reranker scores);
it is called with `positions` = the read-out position, so facets, rerankers and the context partition work on
one state per history, and the history is the head's context (every valid position <= the read-out counts).

    readout "last_valid"  position len - 1 of the right-padded history (RecBole's gather; the spec default)
            "last_slot"   position L - 1 for every history (the authors' softmax-CPR code): for SASRec a padding
                          query that attends to the real items; the Mi window then reads padded slots too

The padding id's score is set to -inf before the final normalisation (the reference lets it take probability
mass in training). `log_probs` returns (B, n_items + 1) normalised log-probabilities. `position_log_probs`
scores every position of a right-padded window at once, the head in its language-model mode: position t is
read out with the context c_t = the items at positions <= t and the Mi window ending at t, which is what
`log_probs` gives the history ending at t (the encoders are causal), so one window trains many targets
(`genfeat.data.seqrec.training_windows`).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from genfeat.heads.config import build_head
from genfeat.models.seqrec.config import SeqRecConfig
from genfeat.models.seqrec.gru4rec import GRU4RecEncoder
from genfeat.models.seqrec.repeatnet import RepeatNet
from genfeat.models.seqrec.sasrec import SASRecEncoder


class SeqRecModel(nn.Module):
    def __init__(self, cfg: SeqRecConfig, n_items: int):
        super().__init__()
        self.cfg, self.n_items = cfg, n_items
        if cfg.encoder == "sasrec":
            self.encoder = SASRecEncoder(n_items, cfg.max_len, cfg.d, cfg.n_layers, cfg.n_heads, cfg.d_inner,
                                         cfg.dropout, cfg.attn_dropout)
        else:
            self.encoder = GRU4RecEncoder(n_items, cfg.d, cfg.gru_hidden, dropout=cfg.dropout)
        head_cfg = cfg.resolved_head()
        if any(n > n_items for n in head_cfg.reranker_sizes):
            raise ValueError(f"reranker rings {head_cfg.reranker_sizes} larger than the {n_items} items")
        self.head = build_head(head_cfg, cfg.d, n_items + 1, self.encoder.item_embedding, pad_id=0)
        if cfg.head_init == "encoder":
            for m in self.head.modules():
                if isinstance(m, nn.Linear):
                    self.encoder.init_weights(m)

    def readout_positions(self, item_seq: Tensor, length: Tensor) -> Tensor:
        if self.cfg.readout == "last_valid":
            return (length - 1)[:, None]
        return torch.full_like(length, item_seq.size(1) - 1)[:, None]

    def log_probs(self, item_seq: Tensor, length: Tensor) -> Tensor:
        out = self.encoder(item_seq)
        res = self.head(out, item_seq, positions=self.readout_positions(item_seq, length))
        return _without_padding_id(res.scores[:, 0])

    def position_log_probs(self, item_seq: Tensor, positions: Tensor | None = None) -> Tensor:
        """(B, L, n_items + 1): at position t, the distribution of the next item after the items up to t;
        (B, P, n_items + 1) at `positions` (B, P) only."""
        if self.cfg.readout != "last_valid":
            raise ValueError("scoring every position needs readout='last_valid' (the last-slot read-out sees the "
                             "whole window)")
        return _without_padding_id(self.head(self.encoder(item_seq), item_seq, positions=positions).scores)

    def forward(self, item_seq: Tensor, length: Tensor | None = None, positions: Tensor | None = None) -> Tensor:
        """`log_probs` (B, n_items + 1) of each history's read-out, or with `positions` (B, P) the
        `position_log_probs` there: training goes through forward, so DDP sees the computation."""
        return self.log_probs(item_seq, length) if positions is None else self.position_log_probs(item_seq, positions)


def _without_padding_id(scores: Tensor) -> Tensor:
    """log_softmax over the items with the padding id at -inf (also renormalises a log-prob head without it)."""
    scores = scores.float().masked_fill(torch.arange(scores.size(-1), device=scores.device) == 0, float("-inf"))
    return torch.log_softmax(scores, -1)


class RepeatNetModel(nn.Module):
    """RepeatNet behind the same interface (`log_probs`)."""

    def __init__(self, cfg: SeqRecConfig, n_items: int):
        super().__init__()
        self.cfg, self.n_items = cfg, n_items
        self.net = RepeatNet(n_items, cfg.d, cfg.d, cfg.dropout)

    def log_probs(self, item_seq: Tensor, length: Tensor) -> Tensor:
        return self.net(item_seq, length)[0]

    def position_log_probs(self, item_seq: Tensor, positions: Tensor | None = None) -> Tensor:
        if positions is None:
            positions = torch.arange(item_seq.size(1), device=item_seq.device).expand_as(item_seq)
        return self.net.at_positions(item_seq, positions)[0]

    def forward(self, item_seq: Tensor, length: Tensor | None = None, positions: Tensor | None = None) -> Tensor:
        return self.log_probs(item_seq, length) if positions is None else self.position_log_probs(item_seq, positions)


def build_seqrec(cfg: SeqRecConfig, n_items: int) -> nn.Module:
    return RepeatNetModel(cfg, n_items) if cfg.encoder == "repeatnet" else SeqRecModel(cfg, n_items)
