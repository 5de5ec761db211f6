"""Continued-pretraining batches of Multi-CLS BERT (thesis C §5.2.1; spec multi-cls-bert.md §3, §5.1) from
documents of ordered sentences.

    sentences     `data.sentences.split_sentences` (a documented rule)
    triples       one random position in one random document; contiguous sentences are gathered until about
                  3 x budget tokens and at least 6 sentences, cut at random sentence boundaries into 6 groups;
                  groups (1, 2), (3, 4), (5, 6) are the sequences A, P, H of one triple (P follows A, H follows P)
    a sequence    [CLS] segA [SEP] segB [SEP], token types 0 up to the first [SEP], 1 after (the reference gives
                  both [SEP] type 0; genfeat keeps BERT's convention for segment B's [SEP]); trimmed to the budget
                  (max_len - K: the encoder adds the facet tokens) by deleting a token from a random end of a
                  random segment, repeatedly
    SO            with probability 1/2 segA and segB swap places; so_label 1 when they did
    MLM           per sequence min(80, max(1, round(0.15 n))) of its n text tokens are predicted ([CLS], [SEP],
                  [PAD] never): 80% become [MASK], 10% a random token, 10% stay; labels -100 elsewhere
    TF-IDF        target of a token = tf(token in its document) x idf(token over the documents), min-max rescaled
                  to [0, 10] within its sentence; special tokens and padding 0
    batch         N triples as rows [A_1..A_N; P_1..P_N; H_1..H_N] (without hard negatives: 2 groups per sequence
                  pair are drawn as A, P only), right-padded to the longest row

`TripleBatches` is an endless, seeded iterator with `state_dict()` (exact resume); under torchrun each rank keeps
its share of the N triples (every rank draws the same triples).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import torch

from genfeat.data.batches import rank_share
from genfeat.errors import ConfigError, DataError


@dataclass(frozen=True)
class PretrainData:
    corpus: str = "bbc-news"  # the BBC News training-split articles
    split_seed: int = 0  # the BBC split shared with multi_cls_classify
    max_len: int = 128  # total, with [CLS], the K facets and the [SEP]s
    n_triples: int = 10  # N: 3N sequences per batch (the thesis's BERT-Base batch of 30)
    hard_negatives: bool = True
    batch_groups: int = 1  # the loss on this many groups of a batch's triples, averaged (a torchrun rank's share is
    # one: one process with W groups trains what W ranks do)
    valid_batches: int = 8
    limit_docs: int = 0  # > 0: the first N documents (tests)

    def __post_init__(self) -> None:
        if self.batch_groups < 1 or self.n_triples % self.batch_groups:
            raise ConfigError(f"data.batch_groups must be >= 1 and divide data.n_triples={self.n_triples}, got "
                              f"{self.batch_groups}")


def _rescaled(v: np.ndarray) -> np.ndarray:
    """Min-max to [0, 10] (all zeros when constant)."""
    span = v.max() - v.min()
    return 10 * (v - v.min()) / span if span > 0 else np.zeros_like(v)


class TripleBatches:
    """See the module docstring. `docs`: documents as lists of sentences; `tok`: a `tokenizers.Tokenizer`
    (WordPiece, no template applied here); `budget`: the tokens of a sequence with its [CLS] and [SEP]s."""

    def __init__(self, docs: Sequence[Sequence[str]], tok, n_triples: int, budget: int, seed: int,
                 hard_negatives: bool = True, rank: int = 0, world_size: int = 1):
        self.groups = 6 if hard_negatives else 4
        ids = {k: tok.token_to_id(k) for k in ("[CLS]", "[SEP]", "[PAD]", "[MASK]")}
        if None in ids.values():
            raise DataError("the tokenizer lacks one of [CLS], [SEP], [PAD], [MASK]")
        self.cls, self.sep, self.pad, self.mask = ids["[CLS]"], ids["[SEP]"], ids["[PAD]"], ids["[MASK]"]
        self.vocab_size = tok.get_vocab_size()
        self.docs = []  # per document: a list of sentences, each an int64 array of token ids
        for d in docs:
            sents = [np.array(e.ids, dtype=np.int64) for e in tok.encode_batch(list(d), add_special_tokens=False)]
            sents = [s for s in sents if len(s)]
            if len(sents) >= self.groups:
                self.docs.append(sents)
        if not self.docs:
            raise DataError(f"no document has the {self.groups} sentences a training example needs")
        tf = [Counter(np.concatenate(sents).tolist()) for sents in self.docs]
        df: Counter = Counter(t for counts in tf for t in counts)
        idf = {t: math.log(len(self.docs) / c) for t, c in df.items()}
        self.tfidf = [[_rescaled(np.array([counts[t] * idf[t] for t in s.tolist()], dtype=np.float32)) for s in sents]
                      for counts, sents in zip(tf, self.docs, strict=True)]  # per sentence, computed once
        self.n_triples, self.budget = n_triples, budget
        self.rng = np.random.default_rng(seed)
        self.share = rank_share(n_triples, rank, world_size)

    def __iter__(self) -> TripleBatches:
        return self

    def _groups(self) -> tuple[int, list[list[tuple[np.ndarray, np.ndarray]]]]:
        """A document and its `groups` consecutive sentence groups, each a list of (ids, tf-idf) sentences."""
        rng = self.rng
        d = int(rng.integers(len(self.docs)))
        sents = self.docs[d]
        start = int(rng.integers(len(sents) - self.groups + 1))
        end, tokens = start, 0
        while end < len(sents) and (end - start < self.groups or tokens < self.groups // 2 * self.budget):
            tokens += len(sents[end])
            end += 1
        cuts = np.sort(rng.choice(np.arange(start + 1, end), self.groups - 1, replace=False))
        bounds = [start, *cuts.tolist(), end]
        return d, [[(sents[i], self.tfidf[d][i]) for i in range(a, b)] for a, b in pairwise(bounds)]

    def _sequence(self, a, b) -> dict[str, Any]:
        rng = self.rng
        swap = bool(rng.random() < 0.5)
        if swap:
            a, b = b, a
        segs = [[np.concatenate([s for s, _ in g]), np.concatenate([t for _, t in g])] for g in (a, b)]
        while len(segs[0][0]) + len(segs[1][0]) + 3 > self.budget:
            j = int(rng.integers(2)) if len(segs[0][0]) and len(segs[1][0]) else int(len(segs[1][0]) > 0)
            cut = slice(1, None) if rng.random() < 0.5 else slice(None, -1)
            segs[j] = [segs[j][0][cut], segs[j][1][cut]]
        ids = np.concatenate([[self.cls], segs[0][0], [self.sep], segs[1][0], [self.sep]])
        tfidf = np.concatenate([[0], segs[0][1], [0], segs[1][1], [0]]).astype(np.float32)
        types = np.zeros(len(ids), dtype=np.int64)
        types[len(segs[0][0]) + 2:] = 1
        return {"ids": ids, "types": types, "tfidf": tfidf, "so": int(swap)}

    def _mlm(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rng = self.rng
        text = np.flatnonzero((ids != self.cls) & (ids != self.sep) & (ids != self.pad))
        k = min(80, max(1, round(0.15 * len(text))))
        pos = np.sort(rng.choice(text, k, replace=False))
        labels = np.full(len(ids), -100, dtype=np.int64)
        labels[pos] = ids[pos]
        out = ids.copy()
        r = rng.random(k)
        out[pos[r < 0.8]] = self.mask
        rand = pos[(r >= 0.8) & (r < 0.9)]
        out[rand] = rng.integers(0, self.vocab_size, len(rand))
        return out, labels

    def __next__(self) -> dict[str, torch.Tensor]:
        parts: list[list[dict[str, Any]]] = [[] for _ in range(self.groups // 2)]
        for _ in range(self.n_triples):
            _, g = self._groups()
            for p in range(self.groups // 2):
                parts[p].append(self._sequence(g[2 * p], g[2 * p + 1]))
        for part in parts:  # every rank draws the masks of every row, so the ranks' streams stay together
            for r in part:
                r["corrupted"], r["labels"] = self._mlm(r["ids"])
        rows = [seq for part in parts for seq in part[self.share]]
        T = max(len(r["ids"]) for r in rows)
        out = {k: np.zeros((len(rows), T), dtype=dt) for k, dt in
               (("input_ids", np.int64), ("token_type_ids", np.int64), ("attention_mask", np.int64),
                ("tfidf", np.float32))}
        out["mlm_labels"] = np.full((len(rows), T), -100, dtype=np.int64)
        for i, r in enumerate(rows):
            n = len(r["ids"])
            out["input_ids"][i, :n], out["mlm_labels"][i, :n] = r["corrupted"], r["labels"]
            out["token_type_ids"][i, :n], out["attention_mask"][i, :n], out["tfidf"][i, :n] = r["types"], 1, r["tfidf"]
        batch = {k: torch.from_numpy(v) for k, v in out.items()}
        batch["so_labels"] = torch.tensor([r["so"] for r in rows])
        return batch

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
