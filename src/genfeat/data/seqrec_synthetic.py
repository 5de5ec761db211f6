"""The two synthetic recommendation worlds of spec sequential-recommendation.md §11, with exact next-item
distributions (a known generator makes the oracle computable).

300 items in 30 categories of 10; users with sequence length ~ U{min_len..max_len}. Each user starts in a
random category. Before every draw after the first, the category switches with probability `switch` to a
uniformly chosen other category that still has unconsumed items, and is forced to switch likewise when the
current one has none left.

    World A (never repeat, like ML-1m):    next item uniform over the unconsumed items of the current category
    World B (repeat-heavy, like Steam):    with probability rho uniform over the user's last 5 distinct items,
                                           otherwise as World A

`make_world` returns the `SeqData` (leave-one-out split) and, for every validation example, the true
distribution of its target given the generator's state (category, consumed set, recent items): an (n_valid,
n_items + 1) array whose column 0 (padding) is 0.
"""

from __future__ import annotations

import numpy as np

from genfeat.data.seqrec import SeqData, leave_one_out
from genfeat.errors import ConfigError


def _step_distribution(cat: int, consumed: np.ndarray, recent: list[int], world: str, n_cat: int, per_cat: int,
                       switch: float, rho: float, first: bool) -> np.ndarray:
    """P(next item) over 0..n_items (0 = padding) given the state before the draw."""
    n_items = n_cat * per_cat
    avail = ~consumed[1:].reshape(n_cat, per_cat)  # (n_cat, per_cat) unconsumed
    has = avail.any(1)
    cat_p = np.zeros(n_cat)
    if first:
        cat_p[cat] = 1.0
    else:
        others = has.copy()
        others[cat] = False
        k = others.sum()
        stay = 1.0 - switch if has[cat] else 0.0
        cat_p[cat] = stay
        if k:
            cat_p[others] += (1.0 - stay) / k
        elif not has[cat]:
            raise ValueError("no unconsumed item left")
        else:
            cat_p[cat] = 1.0
    explore = np.zeros(n_items + 1)
    counts = avail.sum(1)
    w = np.divide(cat_p, counts, out=np.zeros(n_cat), where=counts > 0)
    explore[1:] = (avail * w[:, None]).reshape(-1)
    if world == "A" or not recent:
        return explore / explore.sum()
    rep = np.zeros(n_items + 1)
    rep[recent] = 1.0 / len(recent)
    return rho * rep + (1.0 - rho) * explore / explore.sum()


def make_world(world: str, n_users: int = 2000, n_cat: int = 30, per_cat: int = 10, min_len: int = 10,
               max_len: int = 20, switch: float = 0.1, rho: float = 0.5, seed: int = 0,
               history_len: int = 20) -> tuple[SeqData, np.ndarray]:
    """(data, true distribution of each validation target (n_valid, n_items + 1))."""
    if world not in ("A", "B"):
        raise ValueError(f"world must be 'A' or 'B', got {world!r}")
    if max_len > per_cat * n_cat:
        raise ValueError("sequences longer than the item set cannot avoid repeats in world A")
    rng = np.random.default_rng(seed)
    n_items = n_cat * per_cat
    seqs, truths = [], []
    for _ in range(n_users):
        n = int(rng.integers(min_len, max_len + 1))
        cat = int(rng.integers(n_cat))
        consumed = np.zeros(n_items + 1, dtype=bool)
        seq: list[int] = []
        recent: list[int] = []  # last 5 distinct items, most recent last
        for t in range(n):
            p = _step_distribution(cat, consumed, recent, world, n_cat, per_cat, switch, rho, first=(t == 0))
            if t == n - 2:
                truths.append(p)
            x = int(rng.choice(n_items + 1, p=p))
            # the category the draw came from: the item's own category for an explore draw; a repeat keeps it
            if world == "A" or x not in recent:
                cat = (x - 1) // per_cat
            consumed[x] = True
            seq.append(x)
            if x in recent:
                recent.remove(x)
            recent = (recent + [x])[-5:]
        seqs.append(np.asarray(seq, dtype=np.int64))
    train, valid, test = leave_one_out(seqs, history_len)
    tokens = np.array(["[PAD]", *[f"c{(i - 1) // per_cat}i{(i - 1) % per_cat}" for i in range(1, n_items + 1)]],
                      dtype=object)
    return SeqData(seqs, n_items, tokens, train, valid, test, f"synthetic-{world}"), np.stack(truths)


def synthetic_world(name: str, history_len: int = 20) -> tuple[SeqData, np.ndarray]:
    """`make_world` for a dataset name `synthetic:A` / `synthetic:B`, optionally `:SEED` (default 0), with
    histories of `history_len` items."""
    parts = name.split(":")
    if len(parts) not in (2, 3) or parts[0] != "synthetic" or parts[1] not in ("A", "B") or \
            (len(parts) == 3 and not parts[2].isdigit()):
        raise ConfigError(f"a synthetic dataset is synthetic:A or synthetic:B with an optional :SEED, got {name!r}")
    return make_world(parts[1], seed=int(parts[2]) if len(parts) == 3 else 0, history_len=history_len)
