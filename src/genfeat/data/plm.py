"""Permutation language modeling inputs (thesis Y §2.2.2, Eq. 2.5; spec xlnet.md §2.5, §2.9): the targets of
partial prediction, a random factorization order over them, and the attention masks it implies.

    targets    span-based (`span_targets`): span lengths L in 1..5 with P(L) ∝ 1/L, each span placed inside a
               window of K·L tokens (K = 6: about 1/K of the tokens are predicted), starts snapped to word
               starts when the tokenizer marks them; exactly `num_predict` per sequence (topped up with single
               tokens)
    order      (`sample_ranks`): a uniformly random order of the targets and functional tokens (<sep>, <cls>)
               of each part -- [reuse part][rest] with the reuse part entirely first, so the states cached for
               the next sequence never depend on the rest (pitfall 8); vectorised over the batch
    masks      (`perm_mask_from_ranks`), perm_mask[b, p, j] = True: p may not attend j (HF / reference):
               non-targets form the context z_{<=c}: they see each other (bidirectionally, as the reference)
               and never a target; a target sees the context and the targets / functional tokens of lower rank;
               a functional token sees those and itself. This is the query-stream mask; the model re-enables
               the diagonal for the content stream. Rows of the rest see the whole reuse part.

`plm_inputs` combines them into (perm_mask, target_pos, labels) for a batch; labels are the tokens *at* the
target positions (not the next tokens, pitfall 10). Deviation from the reference sampler: spans count words
(the reference counts pieces because of a known bug, spec §2.9) and stop at functional tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from genfeat.data.batches import rank_share


def span_targets(n: int, num_predict: int, rng: np.random.Generator, is_start: np.ndarray | None = None,
                 allowed: np.ndarray | None = None, max_gram: int = 5, alpha: int = 6, beta: int = 1) -> np.ndarray:
    """Boolean (n,) mask with exactly num_predict targets among the `allowed` positions (the reference's
    `_sample_mask` without its piece-counting bug). is_start: positions that begin a word (all when None)."""
    allowed = np.ones(n, bool) if allowed is None else np.asarray(allowed, bool)
    if num_predict > int(allowed.sum()):
        raise ValueError(f"num_predict={num_predict} exceeds the {int(allowed.sum())} predictable positions")
    starts = (np.ones(n, bool) if is_start is None else np.asarray(is_start, bool)) & allowed
    grams = np.arange(1, max_gram + 1)
    p = 1.0 / grams
    p /= p.sum()
    mask = np.zeros(n, bool)
    count = cur = 0
    while cur < n and count < num_predict:
        L = min(int(rng.choice(grams, p=p)), num_predict - count)
        ctx = L * alpha // beta
        left = int(rng.integers(ctx))
        beg = cur + left
        while beg < n and not starts[beg]:
            beg += 1
        if beg >= n:
            break
        end, words = beg + 1, 1
        while end < n and allowed[end]:
            if starts[end]:
                words += 1
                if words > L:
                    break
            end += 1
        if end >= n:
            break
        take = min(end - beg, num_predict - count)
        mask[beg: beg + take] = True
        count += take
        cur = end + ctx - left
    if count < num_predict:  # top up with single tokens
        free = np.flatnonzero(allowed & ~mask)
        mask[rng.choice(free, num_predict - count, replace=False)] = True
    return mask


def sample_ranks(B: int, T: int, reuse_len: int = 0, generator: torch.Generator | None = None,
                 device: torch.device | None = None) -> Tensor:
    """(B, T) long: a uniformly random order of each part, the reuse part [0, reuse_len) entirely before the rest
    (its ranks < T <= the rest's)."""
    rank = torch.rand(B, T, generator=generator).argsort(-1).argsort(-1).to(device)
    if reuse_len:
        rank = rank + (torch.arange(T, device=device) >= reuse_len) * T
    return rank


def perm_mask_from_ranks(rank: Tensor, is_target: Tensor, is_functional: Tensor | None = None,
                         reuse_len: int = 0) -> Tensor:
    """(B, T, T) bool, True = row p may not attend column j (the query-stream mask; spec §2.5 step 3).

    rank (B, T): order positions (only the ranks of targets and functional tokens matter); is_target (B, T);
    is_functional (B, T): take part in the order but are never predicted."""
    B, T = rank.shape
    func = torch.zeros_like(is_target) if is_functional is None else is_functional.bool()
    tgt = is_target.bool() & ~func
    ordered = tgt | func
    r = torch.where(ordered, rank, torch.full_like(rank, -1))  # the context (non-targets) comes first
    rp, rj = r[:, :, None], r[:, None, :]
    later = ordered[:, None, :] & ((rj > rp) | ((rj == rp) & tgt[:, :, None]))  # a target does not see itself
    if not reuse_len:
        return later
    part = torch.arange(T, device=rank.device) >= reuse_len
    same = part[:, None] == part[None, :]
    return (later & same) | (~part[:, None] & part[None, :])  # reuse rows never see the rest


def plm_inputs(tokens: Tensor, num_predict: int, rng: np.random.Generator, generator: torch.Generator | None = None,
               reuse_len: int = 0, functional_ids: Sequence[int] = (), is_start: Tensor | None = None,
               max_gram: int = 5, alpha: int = 6) -> dict[str, Tensor]:
    """Targets, order and masks for a batch of token sequences (B, T).

    Returns perm_mask (B, T, T) bool, target_pos (B, num_predict) sorted positions, labels (B, num_predict) the
    tokens there, is_target (B, T). With reuse_len, the targets are split between the parts in proportion to
    their lengths (the reference: 43 + 42 of 85 for 256 + 256 tokens)."""
    B, T = tokens.shape
    func = torch.zeros(B, T, dtype=torch.bool)
    for f in functional_ids:
        func |= tokens.cpu() == f
    starts = None if is_start is None else is_start.cpu().numpy()
    parts = [(0, reuse_len), (reuse_len, T)] if reuse_len else [(0, T)]
    quota = [round(num_predict * (b - a) / T) for a, b in parts]
    quota[-1] = num_predict - sum(quota[:-1])
    is_target = np.zeros((B, T), bool)
    allowed = ~func.numpy()
    for b in range(B):
        for (a, e), q in zip(parts, quota, strict=True):
            is_target[b, a:e] = span_targets(e - a, q, rng, None if starts is None else starts[b, a:e],
                                             allowed[b, a:e], max_gram=max_gram, alpha=alpha)
    is_target_t = torch.from_numpy(is_target).to(tokens.device)
    rank = sample_ranks(B, T, reuse_len, generator, tokens.device)
    perm_mask = perm_mask_from_ranks(rank, is_target_t, func.to(tokens.device), reuse_len)
    target_pos = is_target_t.nonzero()[:, 1].view(B, num_predict)
    return {"perm_mask": perm_mask, "target_pos": target_pos, "labels": tokens.gather(1, target_pos),
            "is_target": is_target_t}


class PretrainStream:
    """XLNet pretraining batches from one token stream (spec xlnet.md §2.7, §2.13; reference `create_tfrecords`):

        seq = stream[i : i + reuse_len] + A + [<sep>] + B + [<sep>] + [<cls>]       (length seq_len)
        seg = 0 over the reuse part, A and the first <sep>; 1 over B and the second <sep>; 2 for <cls>

    A continues the reuse part; B is the true continuation of A with probability 1/2, else a random chunk of the
    corpus; the A/B cut is uniform (the reference aligns it to sentence boundaries). Each of the batch_size rows
    reads its own contiguous slice of the corpus, the next batch starting reuse_len tokens later, so the memory
    cached from the reuse part precedes it. Targets / orders / masks from `plm_inputs` (the targets split between
    the reuse part and the rest, spans aligned to word starts). objective "mlm": the same targets, replaced by
    BERT's corruption (`mlm_corrupt`), no permutation. bi_data: the second half of the rows
    reads the reversed corpus (thesis §2.2.3's bidirectional pipeline; the model must have bi_data=True, which
    negates their relative positions). Stateful (`state_dict`) for resuming.

    Under torchrun every rank draws the whole batch of `batch_size` rows from the same seed and keeps its share
    (`rank`, `world_size`): W ranks together train on exactly what one process would; with bi_data a share holds
    its part of the forward rows, then the same part of the reversed rows, so the model's "second half is
    reversed" holds on every rank.
    """

    def __init__(self, tokens: np.ndarray, batch_size: int, seq_len: int, reuse_len: int, num_predict: int,
                 sep_id: int, cls_id: int, word_start: np.ndarray | None = None, seed: int = 0,
                 objective: str = "plm", mask_id: int | None = None, vocab_size: int | None = None,
                 bi_data: bool = False, rank: int = 0, world_size: int = 1):
        if objective not in ("plm", "mlm"):
            raise ValueError(f"objective must be plm or mlm, got {objective!r}")
        if objective == "mlm" and (mask_id is None or vocab_size is None):
            raise ValueError("the mlm objective needs mask_id and vocab_size")
        if seq_len - reuse_len < 5:
            raise ValueError("seq_len - reuse_len must leave room for A, B, two <sep> and <cls>")
        self.rows_len = len(tokens) // batch_size
        if self.rows_len < seq_len + reuse_len:
            raise ValueError(f"{len(tokens):,} tokens are too few for {batch_size} rows of {seq_len}")
        if bi_data and batch_size % 2:
            raise ValueError("bi_data needs an even batch_size")
        if batch_size % (world_size * (2 if bi_data else 1)):
            raise ValueError(f"a batch of {batch_size} rows{' (half of them reversed)' if bi_data else ''} does not "
                             f"split over {world_size} ranks")
        if bi_data:  # this rank's forward rows, then the same rows of the reversed half
            fwd = np.arange(batch_size // 2)[rank_share(batch_size // 2, rank, world_size)]
            self.share = torch.from_numpy(np.concatenate([fwd, fwd + batch_size // 2]))
        else:
            self.share = torch.arange(batch_size)[rank_share(batch_size, rank, world_size)]
        self.tokens = np.asarray(tokens, dtype=np.int64)
        self.bi_data = bi_data
        if bi_data:  # the second half of the rows reads the reversed corpus (the model negates its positions)
            half = batch_size // 2
            self.rows_len = len(tokens) // half
            fwd = self.tokens[: self.rows_len * half].reshape(half, self.rows_len)
            self.rows = np.concatenate([fwd, self.tokens[::-1][: self.rows_len * half].reshape(half, self.rows_len)])
        else:
            self.rows = self.tokens[: self.rows_len * batch_size].reshape(batch_size, self.rows_len)
        self.B, self.T, self.reuse_len, self.num_predict = batch_size, seq_len, reuse_len, num_predict
        self.sep_id, self.cls_id, self.word_start = sep_id, cls_id, word_start
        self.objective, self.mask_id, self.vocab_size = objective, mask_id, vocab_size
        self.cursor = 0
        self.rng = np.random.default_rng(seed)
        self.gen = torch.Generator().manual_seed(seed)

    def __iter__(self) -> PretrainStream:
        return self

    def sequences(self) -> tuple[np.ndarray, np.ndarray]:
        """(B, T) token ids and segment ids of the next batch; advances the cursor."""
        B, T, R = self.B, self.T, self.reuse_len
        rest = T - R - 3
        if self.cursor + T > self.rows_len:  # wrapped: a new pass (the memory of the old end is stale, once)
            self.cursor = 0
        ids = np.empty((B, T), np.int64)
        seg = np.empty((B, T), np.int64)
        for b in range(B):
            i = self.cursor
            a_len = int(self.rng.integers(1, rest))
            b_len = rest - a_len
            start_b = i + R + a_len
            if self.rng.random() < 0.5 and start_b + b_len <= self.rows_len:
                part_b = self.rows[b, start_b: start_b + b_len]
            else:
                r = int(self.rng.integers(0, len(self.tokens) - b_len))
                part_b = self.tokens[r: r + b_len]
                if self.bi_data and b >= B // 2:
                    part_b = part_b[::-1]
            ids[b] = np.concatenate([self.rows[b, i: i + R + a_len], [self.sep_id], part_b, [self.sep_id],
                                     [self.cls_id]])
            seg[b] = [0] * (R + a_len + 1) + [1] * (b_len + 1) + [2]
        self.cursor += R if R else rest
        return ids, seg

    def __next__(self) -> dict[str, Tensor]:
        ids, seg = self.sequences()
        x = torch.from_numpy(ids)
        is_start = None if self.word_start is None else torch.from_numpy(self.word_start[ids])
        if is_start is not None and self.bi_data:  # reversed rows: a word begins after a forward word start
            h = self.B // 2
            is_start[h:] = torch.cat([torch.ones(h, 1, dtype=torch.bool), is_start[h:, :-1]], dim=1)
        d = plm_inputs(x, self.num_predict, self.rng, self.gen, reuse_len=self.reuse_len,
                       functional_ids=(self.sep_id, self.cls_id), is_start=is_start)
        batch = {"input_ids": x, "token_type_ids": torch.from_numpy(seg), "target_pos": d["target_pos"],
                 "labels": d["labels"]}
        if self.objective == "plm":
            batch["perm_mask"] = d["perm_mask"]
        else:
            batch["input_ids"] = mlm_corrupt(x, d["target_pos"], self.mask_id, self.vocab_size, self.gen)
        return batch if len(self.share) == self.B else {k: v[self.share] for k, v in batch.items()}

    def state_dict(self) -> dict:
        return {"cursor": self.cursor, "rng": self.rng.bit_generator.state, "gen": self.gen.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.cursor = state["cursor"]
        self.rng.bit_generator.state = state["rng"]
        self.gen.set_state(state["gen"])


def mlm_corrupt(tokens: Tensor, target_pos: Tensor, mask_id: int, vocab_size: int,
                generator: torch.Generator | None = None, probs: tuple[float, float] = (0.8, 0.1)) -> Tensor:
    """BERT corruption of the targets: <mask> with probs[0], a uniformly random token with probs[1], else kept."""
    u = torch.rand(target_pos.shape, generator=generator).to(tokens.device)
    rand = torch.randint(0, vocab_size, target_pos.shape, generator=generator).to(tokens.device)
    orig = tokens.gather(1, target_pos)
    new = torch.where(u < probs[0], torch.full_like(orig, mask_id), torch.where(u < sum(probs), rand, orig))
    return tokens.scatter(1, target_pos, new)
