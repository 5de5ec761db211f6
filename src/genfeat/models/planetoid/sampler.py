"""Algorithm 2 of thesis Y §3.3.3: sampling context triples (i, c, gamma), vectorised over a batch.

One call draws N triples at once: gamma = +1 with probability r1; with probability r2 a triple is
*graph context* (a random walk of q nodes, S_1 uniform over nodes that can start a walk, S_k drawn
with P(j) = a_ij / sum_j' a_ij', then one position pair (j, k) uniform over the admissible window
pairs; for gamma = -1 the context is replaced by a uniform node), otherwise *label context* (two
labeled nodes with equal labels for gamma = +1, different labels for gamma = -1).

Semantics (spec `planetoid.md` §2.4; defaults follow the thesis reading, options the authors' code):
    q                    nodes per walk (the code's `path_size` = 10 steps is q = 11)
    window               ordered pairs of distinct positions with 1 <= |j - k| < d; `window_inclusive`
                         uses <= d and `include_self_pairs` admits j = k (both as the code)
    start                walks start only at nodes with out-weight > 0 (the code skips isolated nodes)
    weights              transitions proportional to real-valued a_ij (the code handles binary graphs)
    negatives            uniform over `context_nodes` (all nodes unless restricted, e.g. inductive)
    label_pairs="pairs"  uniform over ordered pairs of distinct labeled nodes (thesis);
               "anchor"  i uniform over labeled nodes, then c uniform over the matching ones (code)

Everything is array ops over the batch (no per-sample Python loop): weighted transitions are one
`searchsorted` into the cumulative CSR weights per step. The random numbers are drawn from one torch
Generator (checkpointed with the run, so a resumed run draws the same stream).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from genfeat.errors import ConfigError


@dataclass(frozen=True)
class SamplerConfig:
    r1: float = 5 / 6  # P(gamma = +1)
    r2: float = 0.8  # P(graph context); tuned per data set in the thesis
    q: int = 10  # walk length in nodes
    d: int = 3  # window: |j - k| < d
    include_self_pairs: bool = False
    window_inclusive: bool = False
    label_pairs: str = "pairs"  # pairs | anchor
    unseen: str = "test"  # Planetoid-I: the nodes kept out of every triple: test | valid+test

    def __post_init__(self) -> None:
        for name in ("r1", "r2"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"sampler.{name} must be in [0, 1], got {getattr(self, name)}")
        if self.q < 2 or self.d < 1:
            raise ConfigError(f"sampler needs q >= 2 and d >= 1, got q={self.q}, d={self.d}")
        if self.unseen not in ("test", "valid+test"):
            raise ConfigError(f"sampler.unseen must be 'test' or 'valid+test', got {self.unseen!r}")
        if self.label_pairs not in ("pairs", "anchor"):
            raise ConfigError(f"sampler.label_pairs must be 'pairs' or 'anchor', got {self.label_pairs!r}")


class ContextSampler:
    """Draws batches of (i, c, gamma) from a graph (scipy CSR `adj`) and the labels of `labeled` nodes.

    `context_nodes` (default all) are the nodes that may appear in a triple: walks move on the graph
    restricted to them and negatives are drawn from them (Planetoid-I removes the test nodes).
    """

    def __init__(self, adj, labels: np.ndarray, labeled: np.ndarray, cfg: SamplerConfig = SamplerConfig(),
                 context_nodes: np.ndarray | None = None, seed: int = 0) -> None:
        import scipy.sparse as sp

        self.cfg = cfg
        n = adj.shape[0]
        a = sp.csr_matrix(adj, dtype=np.float64)
        if context_nodes is not None:
            keep = np.zeros(n, bool)
            keep[context_nodes] = True
            mask = sp.diags(keep.astype(np.float64))
            a = (mask @ a @ mask).tocsr()
        a.eliminate_zeros()
        if (a.data < 0).any():
            raise ConfigError("the graph has negative weights; Algorithm 2 needs a_ij >= 0")
        self.num_nodes = n
        # the walk's CSR arrays (NumPy: a step is ~10 gathers over a few hundred walks, where NumPy's per-call
        # cost is a tenth of torch's); each per-node array has one more entry, a sentinel at index -1 (out-weight
        # 0) that a walk cut short (node -1) reads
        indptr = a.indptr.astype(np.int64)
        self.indices = a.indices.astype(np.int64)
        self.cum = np.cumsum(a.data)  # float64: exact enough for 1e7 edges
        out_weight = np.asarray(a.sum(1)).ravel()
        self.row_base = np.append(np.concatenate([[0.0], self.cum])[indptr[:-1]], 0.0)  # `cum` before the row
        self.row_first = np.append(indptr[:-1], 0)
        self.row_last = np.append(indptr[1:] - 1, 0)
        self.out_weight = np.append(out_weight, 0.0)
        self.starts = np.flatnonzero(out_weight > 0)
        pool = np.arange(n) if context_nodes is None else np.sort(np.asarray(context_nodes))
        self.context_nodes = pool.astype(np.int64)
        self.gen = torch.Generator().manual_seed(seed)
        # window: all admissible (j, k) position pairs of a q-node walk
        j, k = np.meshgrid(np.arange(cfg.q), np.arange(cfg.q), indexing="ij")
        gap = np.abs(j - k)
        ok = (gap <= cfg.d) if cfg.window_inclusive else (gap < cfg.d)
        ok &= (gap > 0) | cfg.include_self_pairs
        self.pairs = np.stack([j[ok], k[ok]], 1).astype(np.int64)
        # labeled nodes grouped by class
        labeled = np.asarray(labeled, np.int64)
        y = np.asarray(labels)[labeled]
        if (y < 0).any():
            raise ConfigError("labeled nodes must have labels >= 0")
        order = np.argsort(y, kind="stable")
        self.lab_nodes = labeled[order]
        self.lab_y = y[order].astype(np.int64)
        counts = np.bincount(y, minlength=int(y.max()) + 1 if len(y) else 0).astype(np.int64)
        self.class_count = counts
        self.class_offset = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self.lab_class_weights = torch.from_numpy(counts * (counts - 1)).double()  # ordered same-class pairs

    # ---------------------------------------------------------------------------------- walks
    def _rand(self, *shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=self.gen, dtype=torch.float64)

    def _randint(self, high: np.ndarray | int, n: int) -> np.ndarray:
        """n integers in [0, high): floor(U * high), U from the Generator (high may differ per draw)."""
        return (self._rand(n).numpy() * high).astype(np.int64)

    def random_walks(self, n: int) -> torch.Tensor:
        """(n, q) walks: uniform start over nodes with out-weight > 0, weighted transitions. A walk
        that reaches a node without out-edges (directed graphs only) is padded with -1."""
        return torch.from_numpy(self._walks(n))

    def _walks(self, n: int) -> np.ndarray:
        if len(self.starts) == 0:
            raise ConfigError("the graph has no edges: graph context cannot be sampled (use sampler.r2=0)")
        walks = np.empty((n, self.cfg.q), np.int64)
        cur = self.starts[self._randint(len(self.starts), n)]  # (n,) node ids; -1 once cut short
        walks[:, 0] = cur
        alive = np.ones(n, bool)
        for t in range(1, self.cfg.q):
            weight = self.out_weight[cur]
            alive &= weight > 0
            u = self.row_base[cur] + self._rand(n).numpy() * weight  # a point in the row's span of `cum`
            pos = np.searchsorted(self.cum, u, side="right")
            pos = np.minimum(np.maximum(pos, self.row_first[cur]), self.row_last[cur])  # float round-off at row ends
            cur = np.where(alive, self.indices[pos.clip(0, len(self.indices) - 1)], -1)
            walks[:, t] = cur
        return walks

    def graph_pairs(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """n positive graph-context pairs: one walk each, one admissible window pair per walk."""
        return tuple(map(torch.from_numpy, self._graph_pairs(n)))

    def _graph_pairs(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        i = np.empty(n, np.int64)
        c = np.empty(n, np.int64)
        todo = np.arange(n)
        while len(todo):  # re-draw the rare walks cut short by a dead end (directed graphs)
            walks = self._walks(len(todo))
            jk = self.pairs[self._randint(len(self.pairs), len(todo))]  # (m, 2) positions in the walk
            a, b = np.take_along_axis(walks, jk, 1).T
            ok = (a >= 0) & (b >= 0)
            i[todo[ok]], c[todo[ok]] = a[ok], b[ok]
            todo = todo[~ok]
        return i, c

    def label_pairs(self, n: int, positive: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """n ordered pairs of distinct labeled nodes with equal (positive) or different labels."""
        return tuple(map(torch.from_numpy, self._label_pairs(n, positive)))

    def _label_pairs(self, n: int, positive: bool) -> tuple[np.ndarray, np.ndarray]:
        count, offset = self.class_count, self.class_offset
        total = int(count.sum())
        if self.cfg.label_pairs == "pairs":
            if positive:
                if self.lab_class_weights.sum() == 0:
                    raise ConfigError("no class has two labeled nodes: positive label context is impossible")
                k = torch.multinomial(self.lab_class_weights, n, replacement=True, generator=self.gen).numpy()
                a = self._randint(count[k], n)
                b = self._randint(count[k] - 1, n)
                b = b + (b >= a)
                return self.lab_nodes[offset[k] + a], self.lab_nodes[offset[k] + b]
            if int((count > 0).sum()) < 2:
                raise ConfigError("all labeled nodes share one class: negative label context is impossible")
            out_a = np.empty(n, np.int64)
            out_b = np.empty(n, np.int64)
            todo = np.arange(n)
            while len(todo):  # uniform over ordered pairs, rejecting equal labels
                a, b = self._randint(total, len(todo)), self._randint(total, len(todo))
                ok = self.lab_y[a] != self.lab_y[b]
                out_a[todo[ok]], out_b[todo[ok]] = a[ok], b[ok]
                todo = todo[~ok]
            return self.lab_nodes[out_a], self.lab_nodes[out_b]
        # "anchor" (code): anchor uniform over labeled nodes that have a partner, partner uniform
        anchors = np.flatnonzero((count[self.lab_y] > 1) if positive else (count[self.lab_y] < total))
        if len(anchors) == 0:
            raise ConfigError("no labeled node has a partner for label context")
        a = anchors[self._randint(len(anchors), n)]
        k = self.lab_y[a]
        if positive:
            b = self._randint(count[k] - 1, n)
            b = offset[k] + b + (offset[k] + b >= a)
        else:
            b = self._randint(total - count[k], n)
            b = b + (b >= offset[k]) * count[k]
        return self.lab_nodes[a], self.lab_nodes[b]

    # --------------------------------------------------------------------------------- Algorithm 2
    def sample(self, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """n triples: (i, c, gamma in {+1., -1.}, is_graph_context)."""
        cfg = self.cfg
        gamma_pos = self._rand(n).numpy() < cfg.r1
        graph = self._rand(n).numpy() < cfg.r2
        i = np.empty(n, np.int64)
        c = np.empty(n, np.int64)
        g_idx = np.flatnonzero(graph)
        if len(g_idx):
            gi, gc = self._graph_pairs(len(g_idx))
            neg = ~gamma_pos[g_idx]
            gc[neg] = self.context_nodes[self._randint(len(self.context_nodes), int(neg.sum()))]
            i[g_idx], c[g_idx] = gi, gc
        for positive in (True, False):
            idx = np.flatnonzero(~graph & (gamma_pos == positive))
            if len(idx):
                i[idx], c[idx] = self._label_pairs(len(idx), positive)
        gamma = gamma_pos.astype(np.float32) * 2 - 1
        return torch.from_numpy(i), torch.from_numpy(c), torch.from_numpy(gamma), torch.from_numpy(graph)

    def throughput(self, batch: int = 200, repeats: int = 200) -> float:
        """Triples per second drawn by Algorithm 2 in batches of `batch` (after one warm-up batch)."""
        self.sample(batch)
        t0 = time.perf_counter()
        for _ in range(repeats):
            self.sample(batch)
        return batch * repeats / (time.perf_counter() - t0)
