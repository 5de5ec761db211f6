"""Multi-CLS BERT (thesis C §5.2, Fig. 5.3; spec multi-cls-bert.md §4, §6): a BERT encoder that reads K facet
CLS tokens after [CLS] and outputs K facet embeddings, kept apart by facet-specific linear maps inserted inside
the encoder and, at fine-tuning, pooled by the mean-subtracted aggregation of Eq. 5.4.

Input (§4.1): [CLS] [C1] .. [CK] text [SEP] ...; the facet tokens are the vocabulary's [unused0..K-1] = ids 1..K
(bert-base-uncased / MiniLM vocabularies), at positions 1..K with token type 0. `MultiCLSEncoder` inserts them
itself after position 0 of ordinary BERT inputs (so encode texts to max_len - K), so every task of the task layer
feeds it unchanged.

Inserted maps (§4.2): after block l (1-indexed) of each `insert_after` layer, the facet positions are replaced
by L_{l,k}(h_k) (no residual, no activation; bias optional, off in pretraining); the thesis's layers 4, 8 of 12
(8, 16 of 24) scale to round(L/3), round(2L/3): after 2 and 4 of MiniLM's 6 (`default_insert_after`).
Weights (K, D, D): N(0, 0.02²) (the reference's init; for pretraining from scratch of the facets) or
I + N(0, 0.01²) ("identity": for a checkpoint that had no Multi-CLS pretraining, where random maps would erase the
facet states, spec §4.2 [I]).

Fine-tuning pooler (§6, Eq. 5.4): c = Σ_k (W_{O,k} - W̄) h_k + Σ_k b_k with W̄ = mean_k W_{O,k} ("reparam"),
or the ablation Σ_k W_{O,k} h_k + Σ_k b_k ("sum"); K = 1 is c = W_{O,1} h_1 + b_1 (Eq. 5.4 would be zero).
`MultiCLSClassifier`: dropout(c) -> Linear to the labels (1 output: regression), BERT's pooler unused.

Multi²SPE's variant (thesis C §5.3.1, Eq. 5.5; spec multi2spe.md §2-§3), the same class with four settings:
`cls_facet` ([CLS] is facet 1: the facets sit at positions 0..K-1 and K - 1 tokens are inserted, their ids looked
up from the tokenizer, `facet_ids`), `mean_subtract` (Eq. 5.5: facet k's map is (W_k - W̄) h + b_k for K > 1, so a
layer's effective weights sum to zero), `insert_bias`, and a map after the last block (an output map: the facet
embeddings, `facet_states` of the last hidden state). Inits: "eye" = exactly I (with mean subtraction the
effective maps are then zero at step 0, the reference's); an output map starts as `nn.Linear` does (Kaiming-uniform
weight, uniform bias), each facet drawn independently.

Shapes: input_ids (B, T) -> hidden (B, T + n, D) with n = K inserted tokens (K - 1 with cls_facet); facet states
(B, K, D); pooled (B, D).
Deviations: the facets ride inside genfeat's BERT loop instead of hooks on transformers' BertLayer (same
arithmetic, spec §12's advice: "run the blocks yourself").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from genfeat.errors import ConfigError
from genfeat.models.bert.model import BertModel
from genfeat.nn.dropout import Dropout
from genfeat.nn.outputs import BackboneOutput


def default_insert_after(n_layer: int) -> tuple[int, ...]:
    """The thesis's insertion points (after 4 and 8 of 12 layers, 8 and 16 of 24) scaled to the depth: L/3, 2L/3."""
    return tuple(sorted({max(1, round(n_layer / 3)), max(1, round(2 * n_layer / 3))}))


AGGREGATIONS = ("reparam", "sum")  # the fine-tuning pooler: Eq. 5.4 | the Table 5.2 ablation


@dataclass(frozen=True)
class MultiCLSConfig:
    k: int = 5  # facet CLS tokens
    insert_after: tuple[int, ...] | None = None  # 1-indexed blocks; None: default_insert_after(depth); (): none
    insert_bias: bool = False  # the reference: no bias in pretraining, a zero-initialised trainable one at
    #   fine-tuning (multi_cls_classify's insert_bias; genfeat's pages fine-tune without it, a stated deviation)
    insert_init: str = "normal"  # normal: N(0, 0.02^2) | identity: I + N(0, 0.01^2) | eye: I exactly
    lam: float = 0.1  # λ of Eq. 5.2
    aggregation: str = "reparam"  # fine-tuning pooler: reparam (Eq. 5.4) | sum (the Table 5.2 ablation)
    pool_bias: bool = True  # a trainable bias per facet in the pooler (the reference code)
    first_facet_id: int = 1  # [unused0] in the BERT uncased vocabulary
    facet_ids: tuple[int, ...] = ()  # the inserted tokens' ids (from the tokenizer); empty: first_facet_id, +1, ..
    cls_facet: bool = False  # Multi²SPE: [CLS] is facet 1 (positions 0..K-1, K - 1 tokens inserted)
    mean_subtract: bool = False  # Multi²SPE's Eq. 5.5 on every inserted map (K > 1)

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"model.k must be >= 1, got {self.k}")
        if self.insert_init not in ("normal", "identity", "eye"):
            raise ConfigError(f"model.insert_init must be normal, identity or eye, got {self.insert_init!r}")
        if self.facet_ids and len(self.facet_ids) != self.n_inserted:
            raise ConfigError(f"model.facet_ids has {len(self.facet_ids)} ids, {self.n_inserted} tokens are inserted")
        if self.aggregation not in AGGREGATIONS:
            raise ConfigError(f"model.aggregation must be one of {', '.join(AGGREGATIONS)}, got {self.aggregation!r}")
        if not 0.0 <= self.lam <= 1.0:
            raise ConfigError(f"model.lam must be in [0, 1], got {self.lam}")

    @property
    def n_inserted(self) -> int:
        """Facet tokens inserted after [CLS]: K, or K - 1 when [CLS] is facet 1."""
        return self.k - 1 if self.cls_facet else self.k

    @property
    def first_position(self) -> int:
        return 0 if self.cls_facet else 1

    def inserted_ids(self) -> tuple[int, ...]:
        return self.facet_ids or tuple(range(self.first_facet_id, self.first_facet_id + self.n_inserted))


def check_facet_tokens(id_to_token: Callable[[int], str | None], first_facet_id: int, k: int,
                       cls_id: int | None = None, input_ids: Tensor | None = None) -> None:
    """The facet ids first_facet_id .. + K - 1 must be the vocabulary's reserved [unused0] .. [unused(K-1)] (a
    vocabulary without them would overwrite real words' embeddings), and, given `input_ids`, every row must start
    with [CLS] (`add_facet_tokens` inserts the facets after position 0). Raises ConfigError."""
    for j in range(k):
        got = id_to_token(first_facet_id + j)
        if got != f"[unused{j}]":
            raise ConfigError(f"facet token {j + 1} has id {first_facet_id + j}, which is {got!r} in this vocabulary, "
                              f"not [unused{j}] (model.first_facet_id)")
    if input_ids is not None and cls_id is not None and bool((input_ids[:, 0] != cls_id).any()):
        raise ConfigError("every input must start with [CLS] (position 0): the facet tokens follow it")


def facet_token_ids(token_to_id: Callable[[str], int | None], n: int, first: int = 1) -> tuple[int, ...]:
    """The ids of [unused{first}] .. [unused{first + n - 1}] in a vocabulary (Multi²SPE's facet tokens start at
    [unused1], spec §3.1); ConfigError when one is missing."""
    ids = []
    for j in range(first, first + n):
        i = token_to_id(f"[unused{j}]")
        if i is None:
            raise ConfigError(f"the vocabulary has no [unused{j}] for facet token {j - first + 1}")
        ids.append(i)
    return tuple(ids)


def mean_subtracted(weight: Tensor) -> Tensor:
    """Eq. 5.5's effective weights W_k - W̄ over the facets (dim 0); K = 1 unchanged (Eq. 5.5 would be zero)."""
    return weight - weight.mean(0, keepdim=True) if weight.size(0) > 1 else weight


def facet_linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """Facet k's own map: x (B, K, D_in), weight (K, D_out, D_in), bias (K, D_out) -> (B, K, D_out)."""
    y = torch.einsum("bki,koi->bko", x, weight)
    return y if bias is None else y + bias


class MultiCLSEncoder(nn.Module):
    """`bert` with K facet tokens and the inserted facet maps; called like any task-layer encoder."""

    def __init__(self, bert: BertModel, cfg: MultiCLSConfig):
        super().__init__()
        self.bert, self.cfg = bert, cfg
        bert.pooler.requires_grad_(False)  # the [CLS] pooler is not read: the facets replace it (frozen, so DDP
        L, D, K = bert.cfg.n_layer, bert.cfg.d_model, cfg.k  # does not wait for its gradient)
        after = default_insert_after(L) if cfg.insert_after is None else tuple(cfg.insert_after)
        if any(not 1 <= a <= L for a in after):
            raise ConfigError(f"model.insert_after: blocks must be in [1, {L}], got {after}")
        if any(not 0 <= i < bert.cfg.vocab_size for i in cfg.inserted_ids()):
            raise ConfigError(f"facet ids {cfg.inserted_ids()} exceed the vocabulary of {bert.cfg.vocab_size}")
        self.insert_after = after
        self.inserted = nn.ParameterDict()  # "l" -> (K, D, D)
        self.inserted_bias = nn.ParameterDict()  # "l" -> (K, D)
        for a in after:
            if a == L:  # an output map: nn.Linear's initialisation per facet
                layers = [nn.Linear(D, D) for _ in range(K)]
                w = torch.stack([m.weight.detach() for m in layers])
                b = torch.stack([m.bias.detach() for m in layers])
            else:
                w = torch.eye(D).expand(K, D, D).clone() if cfg.insert_init == "eye" else (
                    torch.randn(K, D, D) * (0.01 if cfg.insert_init == "identity" else 0.02))
                if cfg.insert_init == "identity":
                    w = w + torch.eye(D)
                b = torch.zeros(K, D)
            self.inserted[str(a)] = nn.Parameter(w)
            if cfg.insert_bias:
                self.inserted_bias[str(a)] = nn.Parameter(b)

    def map_weight(self, layer: int) -> Tensor:
        """The effective (K, D, D) weights of the map after block `layer` (Eq. 5.5 when mean_subtract)."""
        w = self.inserted[str(layer)]
        return mean_subtracted(w) if self.cfg.mean_subtract else w

    @property
    def d_model(self) -> int:
        return self.bert.cfg.d_model

    def add_facet_tokens(self, input_ids: Tensor, token_type_ids: Tensor | None,
                         attention_mask: Tensor | None) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """[CLS] x -> [CLS] [C1..Cn] x: the inserted ids, token type 0, attention 1. (B, T) -> (B, T + n)."""
        B, K = input_ids.size(0), self.cfg.n_inserted
        facets = torch.tensor(self.cfg.inserted_ids(), dtype=input_ids.dtype, device=input_ids.device)
        ids = torch.cat([input_ids[:, :1], facets.expand(B, K), input_ids[:, 1:]], 1)
        types = None if token_type_ids is None else torch.cat(
            [token_type_ids[:, :1], token_type_ids.new_zeros(B, K), token_type_ids[:, 1:]], 1)
        mask = None if attention_mask is None else torch.cat(
            [attention_mask[:, :1], attention_mask.new_ones(B, K), attention_mask[:, 1:]], 1)
        return ids, types, mask

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None,
                output_all_hidden: bool = False) -> BackboneOutput:
        """Ordinary BERT inputs with [CLS] at 0 -> states of [CLS], the K facets and the text (B, T + K, D)."""
        ids, types, mask = self.add_facet_tokens(input_ids, token_type_ids, attention_mask)
        if ids.size(1) > self.bert.cfg.max_len:
            raise ValueError(f"{input_ids.size(1)} tokens + {self.cfg.n_inserted} facet tokens exceed the model's "
                             f"{self.bert.cfg.max_len}; encode texts to max_len - {self.cfg.n_inserted}")
        key_mask = self.bert.key_mask(mask)
        x = self.bert.embeddings(ids, types)
        states = [x]
        K, lo = self.cfg.k, self.cfg.first_position
        for i, layer in enumerate(self.bert.layers, start=1):
            x = layer(x, key_mask)
            if str(i) in self.inserted:  # facet positions lo..lo+K-1 replaced by L_{i,k}(h_k); the rest unchanged
                f = facet_linear(x[:, lo:lo + K], self.map_weight(i), self.inserted_bias.get(str(i)))
                x = torch.cat([x[:, :lo], f, x[:, lo + K:]], 1)
            states.append(x)
        return BackboneOutput(hidden=x, all_hidden=tuple(states) if output_all_hidden else None)

    def facet_states(self, hidden: Tensor) -> Tensor:
        """h_k^c: (B, T + n, D) -> (B, K, D)."""
        lo = self.cfg.first_position
        return hidden[:, lo:lo + self.cfg.k]


class FacetPooler(nn.Module):
    """The K facet states -> one vector (Eq. 5.4; module docstring). weight (K, D, D) starts from the pretraining
    heads' W_{O,k} (`from_heads`) or I + N(0, 0.02²)."""

    def __init__(self, k: int, d: int, aggregation: str = "reparam", bias: bool = True):
        super().__init__()
        self.k, self.aggregation = k, aggregation
        self.weight = nn.Parameter(torch.eye(d) + 0.02 * torch.randn(k, d, d))
        self.bias = nn.Parameter(torch.zeros(k, d)) if bias else None

    @torch.no_grad()
    def init_from_heads(self, head_weight: Tensor) -> None:
        """W_{O,k} from the pretraining facet heads (`pretrain.FacetHeads.weight`, (K, D, D)); biases to zero."""
        if head_weight.shape != self.weight.shape:
            raise ValueError(f"head weight {tuple(head_weight.shape)} does not fit the pooler's "
                             f"{tuple(self.weight.shape)}")
        self.weight.copy_(head_weight)
        if self.bias is not None:
            self.bias.zero_()

    def effective_weights(self) -> Tensor:
        """W_{O,k} - W̄ (reparam, K > 1), else W_{O,k}: (K, D, D)."""
        if self.aggregation == "reparam" and self.k > 1:
            return self.weight - self.weight.mean(0, keepdim=True)
        return self.weight

    def facet_embeddings(self, h: Tensor) -> Tensor:
        """e_k = L^FT_{O,k}(h_k): (B, K, D) -> (B, K, D) (the per-facet prototypes' space, App. D.1.3)."""
        return facet_linear(h, self.effective_weights(), self.bias)

    def forward(self, h: Tensor) -> Tensor:
        return self.facet_embeddings(h).sum(1)  # (B, D)


class MultiCLSClassifier(nn.Module):
    """Sequence (pair) classification / regression on the pooled facets: dropout -> Linear(D, n_labels)."""

    def __init__(self, encoder: MultiCLSEncoder, n_labels: int, dropout: float = 0.1):
        super().__init__()
        cfg, d = encoder.cfg, encoder.d_model
        self.encoder = encoder
        self.pooler = FacetPooler(cfg.k, d, cfg.aggregation, cfg.pool_bias)
        self.drop = Dropout(dropout)
        self.out = nn.Linear(d, n_labels)
        nn.init.normal_(self.out.weight, 0.0, 0.02)
        nn.init.zeros_(self.out.bias)

    def facet_states(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
                     attention_mask: Tensor | None = None) -> Tensor:
        return self.encoder.facet_states(self.encoder(input_ids, token_type_ids, attention_mask).hidden)

    def head(self, facet_states: Tensor) -> Tensor:
        """Facet states (B, K, D) -> logits (B, n_labels), or (B,) for regression."""
        logits = self.out(self.drop(self.pooler(facet_states)))
        return logits.squeeze(-1) if logits.size(-1) == 1 else logits

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None,
                attention_mask: Tensor | None = None) -> Tensor:
        """Logits (B, n_labels), or (B,) for regression."""
        return self.head(self.facet_states(input_ids, token_type_ids, attention_mask))
