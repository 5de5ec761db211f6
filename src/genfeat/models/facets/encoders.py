"""The encoders of the facet network (thesis C §3.2.1.3, Eq. 3.3): input ids -> `Encoded` (states, pooled, mask),
what any `FacetDecoder` reads. One class per encoder:

    TransformerEncoder   the thesis's: BERT-style post-LN blocks over learned positions; pooled = the last
                         position (<eos>; inputs are left-padded so it is the last real token)
    LSTMEncoder          a bidirectional LSTM (packed: the padding is never read); states = forward + backward,
                         pooled = Linear([last forward; first backward])
    GRUEncoder           the same with GRU cells (Bansal et al. 2016's encoder, thesis C §3.4 "K=* (GRU)")
    BowEncoder           the spec's §10 diagnostic (order-free): pooled = ReLU(Linear(mean token embedding))
    BackboneEncoder      a pretrained network's states (a genfeat GPT decoder, a BERT): pooled = the state of the
                         last (GPT: the token that has read the whole sequence) or first ([CLS]) real position

Shapes: input_ids (B, T), type_ids (B, T) or None -> states (B, T, d_out), pooled (B, d_out), mask (B, T) True =
a real token. Type ids (`cfg.n_types` > 0) add a type embedding to each token's input (title / abstract, §3.4).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.models.bert.config import BertConfig
from genfeat.models.bert.model import BertLayer
from genfeat.models.facets.config import FacetConfig
from genfeat.nn.dropout import Dropout


@dataclass
class Encoded:
    states: Tensor  # (B, T, d_out) contextual states
    pooled: Tensor  # (B, d_out) the whole sequence
    mask: Tensor  # (B, T) True = a real token


def bert_block_config(cfg: FacetConfig) -> BertConfig:
    """The BERT layer settings of the facet network's transformer blocks."""
    return BertConfig(vocab_size=cfg.vocab_size, d_model=cfg.d_model, n_layer=1, n_head=cfg.n_head,
                      d_inner=cfg.d_inner, max_len=cfg.max_len, dropout=cfg.dropout,
                      attn_dropout=cfg.attention_dropout)


def token_embedding(cfg: FacetConfig, init: Tensor | None = None) -> nn.Embedding:
    """The input table, optionally started from a word-vector table: unit rows × sqrt(d) (the reference), the
    padding row zero (no gradient reaches it)."""
    emb = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
    if init is not None:
        if init.shape != (cfg.vocab_size, cfg.d_model):
            raise ValueError(f"init_embedding {tuple(init.shape)} is not ({cfg.vocab_size}, {cfg.d_model})")
        with torch.no_grad():
            emb.weight.copy_(F.normalize(init.float(), dim=-1) * math.sqrt(cfg.d_model))
            emb.weight[cfg.pad_id].zero_()
    return emb


def input_table_start(vectors: np.ndarray | None, d_model: int) -> Tensor | None:
    """The input table's start from word vectors (n_vocab, d_word) when they are `d_model` wide: a token's vector
    where it has one (a non-zero row), N(0, 0.02²) elsewhere (drawn from torch's global stream); else None (the
    encoder's own initialisation)."""
    if vectors is None or vectors.shape[1] != d_model:
        return None
    init = torch.randn(len(vectors), d_model) * 0.02
    has = torch.from_numpy(np.abs(vectors).sum(1) > 0)
    init[has] = torch.from_numpy(vectors).float()[has]
    return init


def word_table_start(vocab: list[str], words: list[str], table: Tensor, d_model: int) -> Tensor:
    """The input table's start (len(vocab), d_model) from a word table (len(words), E): N(0, 0.02²) (drawn from
    torch's global stream), with a vocabulary word's row of `table` where it has one and E == d_model."""
    init = torch.randn(len(vocab), d_model) * 0.02
    if d_model == table.size(1):
        at = {w: i for i, w in enumerate(words)}
        for i, w in enumerate(vocab):
            if w in at:
                init[i] = table[at[w]]
    return init


class TokenEncoder(nn.Module):
    """The part the facet network's own encoders share: the input table (`token_embedding`), the optional type
    table and the dropout."""

    def __init__(self, cfg: FacetConfig, init_embedding: Tensor | None = None):
        super().__init__()
        self.cfg, self.d_out = cfg, cfg.d_model
        self.tok = token_embedding(cfg, init_embedding)
        self.types = nn.Embedding(cfg.n_types, cfg.d_model) if cfg.n_types else None
        self.drop = Dropout(cfg.dropout)

    def embed(self, input_ids: Tensor, type_ids: Tensor | None) -> Tensor:
        """(B, T, d): token (+ type) embeddings."""
        x = self.tok(input_ids)
        if (type_ids is None) != (self.types is None):
            raise ValueError("type_ids are given exactly when model.n_types > 0 "
                             f"(n_types={self.cfg.n_types}, type_ids {'given' if type_ids is not None else 'missing'})")
        if type_ids is not None:
            if type_ids.shape != input_ids.shape:
                raise ValueError(f"type_ids {tuple(type_ids.shape)} must match input_ids {tuple(input_ids.shape)}")
            x = x + self.types(type_ids)
        return x


class TransformerEncoder(TokenEncoder):
    def __init__(self, cfg: FacetConfig, init_embedding: Tensor | None = None):
        super().__init__(cfg, init_embedding)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.ln = nn.LayerNorm(cfg.d_model, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(bert_block_config(cfg)) for _ in range(cfg.n_enc)])

    def forward(self, input_ids: Tensor, type_ids: Tensor | None = None) -> Encoded:
        real = input_ids != self.cfg.pad_id  # (B, T)
        if input_ids.size(1) > self.cfg.max_len:
            raise ValueError(f"sequence of {input_ids.size(1)} tokens is longer than model.max_len={self.cfg.max_len}")
        pos = (real.cumsum(1) - 1).clamp_min(0)  # left padding: position 0 is the first real token
        x = self.drop(self.ln(self.embed(input_ids, type_ids) + self.pos(pos)))  # (B, T, d)
        mask = None if bool(real.all()) else real[:, None, None, :]
        for layer in self.layers:
            x = layer(x, mask)
        return Encoded(x, x[:, -1], real)


class LSTMEncoder(TokenEncoder):
    cell: type[nn.Module] = nn.LSTM

    def __init__(self, cfg: FacetConfig, init_embedding: Tensor | None = None):
        super().__init__(cfg, init_embedding)
        self.rnn = self.cell(cfg.d_model, cfg.d_model, cfg.n_enc, batch_first=True, bidirectional=True)
        self.pool = nn.Linear(2 * cfg.d_model, cfg.d_model)

    def forward(self, input_ids: Tensor, type_ids: Tensor | None = None) -> Encoded:
        real = input_ids != self.cfg.pad_id
        B, T, d = input_ids.size(0), input_ids.size(1), self.cfg.d_model
        n = real.sum(1)
        ar = torch.arange(T, device=input_ids.device)[None]
        right = (ar + (T - n)[:, None]) % T  # left -> right padding
        x = self.drop(self.embed(input_ids.gather(1, right), None if type_ids is None else type_ids.gather(1, right)))
        packed = nn.utils.rnn.pack_padded_sequence(x, n.cpu(), batch_first=True, enforce_sorted=False)
        h, _ = self.rnn(packed)
        h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True, total_length=T)  # (B, T, 2d) right-padded
        last = h[torch.arange(B), n - 1, :d]  # the forward state at the last real token, backward at the first
        pooled = self.pool(torch.cat([last, h[:, 0, d:]], -1))
        back = (ar - (T - n)[:, None]) % T  # right -> left padding
        return Encoded((h[..., :d] + h[..., d:]).gather(1, back[..., None].expand(B, T, d)), pooled, real)


class GRUEncoder(LSTMEncoder):
    cell = nn.GRU


class BowEncoder(TokenEncoder):
    def __init__(self, cfg: FacetConfig, init_embedding: Tensor | None = None):
        super().__init__(cfg, init_embedding)
        self.hidden = nn.Linear(cfg.d_model, cfg.d_model)

    def forward(self, input_ids: Tensor, type_ids: Tensor | None = None) -> Encoded:
        real = input_ids != self.cfg.pad_id
        x = self.drop(self.embed(input_ids, type_ids)) * real[..., None]  # (B, T, d), padding masked out
        mean = x.sum(1) / real.sum(1, keepdim=True).clamp_min(1)
        return Encoded(x, torch.relu(self.hidden(mean)), real)


class BackboneEncoder(nn.Module):
    """A pretrained network as the facet encoder. `run(input_ids, mask) -> states (B, T, d_out)`; `pool`: "last"
    or "first" real position. `from_gpt` / `from_bert` wrap genfeat's decoder and encoder (their weights train
    with the facet decoder unless frozen by the caller)."""

    def __init__(self, backbone: nn.Module, run: Callable[[Tensor, Tensor], Tensor], d_out: int, pad_id: int,
                 pool: str = "last"):
        super().__init__()
        if pool not in ("last", "first"):
            raise ValueError(f"pool must be last or first, got {pool!r}")
        self.backbone, self._run, self.d_out, self.pad_id, self.pool = backbone, run, d_out, pad_id, pool

    @classmethod
    def from_gpt(cls, gpt: nn.Module, pad_id: int) -> BackboneEncoder:
        """genfeat's GPT decoder; a padded batch is read with its key mask and positions that count real tokens
        (left padding: the last position is every row's last real token)."""
        def run(ids: Tensor, mask: Tensor) -> Tensor:
            if bool(mask.all()):
                return gpt(ids).hidden
            return gpt(ids, key_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp_min(0)).hidden
        return cls(gpt, run, gpt.cfg.d_model, pad_id, "last")

    @classmethod
    def from_bert(cls, bert: nn.Module, pad_id: int) -> BackboneEncoder:
        """genfeat's BERT encoder (its attention mask from the padding), pooled at the first real token ([CLS])."""
        return cls(bert, lambda ids, mask: bert(ids, attention_mask=mask.long()).hidden, bert.cfg.d_model, pad_id,
                   "first")

    def forward(self, input_ids: Tensor, type_ids: Tensor | None = None) -> Encoded:
        if type_ids is not None:
            raise ValueError("a pretrained backbone encoder takes no type_ids")
        real = input_ids != self.pad_id
        states = self._run(input_ids, real)  # (B, T, d_out)
        B, T = real.shape
        ar = torch.arange(T, device=input_ids.device)
        at = (torch.where(real, ar, -1).amax(1) if self.pool == "last"
              else torch.where(real, ar, T).amin(1))  # (B,) the last / first real position
        return Encoded(states, states[torch.arange(B), at], real)


ENCODERS = {"transformer": TransformerEncoder, "lstm": LSTMEncoder, "gru": GRUEncoder, "bow": BowEncoder}
