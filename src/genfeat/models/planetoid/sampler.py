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

Everything is tensor ops over the batch (no per-sample Python loop): weighted transitions are one
`searchsorted` into the cumulative CSR weights per step.
"""

from __future__ import annotations

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
        self.indptr = torch.from_numpy(a.indptr.astype(np.int64))
        self.indices = torch.from_numpy(a.indices.astype(np.int64))
        self.cum = torch.from_numpy(np.cumsum(a.data))  # float64: exact enough for 1e7 edges
        self.out_weight = torch.from_numpy(np.asarray(a.sum(1)).ravel())
        self.starts = torch.nonzero(self.out_weight > 0).flatten()
        pool = np.arange(n) if context_nodes is None else np.sort(np.asarray(context_nodes))
        self.context_nodes = torch.from_numpy(pool.astype(np.int64))
        self.gen = torch.Generator().manual_seed(seed)
        # window: all admissible (j, k) position pairs of a q-node walk
        j, k = np.meshgrid(np.arange(cfg.q), np.arange(cfg.q), indexing="ij")
        gap = np.abs(j - k)
        ok = (gap <= cfg.d) if cfg.window_inclusive else (gap < cfg.d)
        ok &= (gap > 0) | cfg.include_self_pairs
        self.pairs = torch.from_numpy(np.stack([j[ok], k[ok]], 1).astype(np.int64))
        # labeled nodes grouped by class
        labeled = np.asarray(labeled, np.int64)
        y = np.asarray(labels)[labeled]
        if (y < 0).any():
            raise ConfigError("labeled nodes must have labels >= 0")
        order = np.argsort(y, kind="stable")
        self.lab_nodes = torch.from_numpy(labeled[order])
        self.lab_y = torch.from_numpy(y[order].astype(np.int64))
        counts = np.bincount(y, minlength=int(y.max()) + 1 if len(y) else 0)
        self.class_count = torch.from_numpy(counts.astype(np.int64))
        self.class_offset = torch.from_numpy(np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64))
        self.lab_class_weights = (self.class_count * (self.class_count - 1)).double()  # ordered same-class pairs

    # ---------------------------------------------------------------------------------- walks
    def _rand(self, *shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=self.gen, dtype=torch.float64)

    def _randint(self, high: torch.Tensor | int, n: int) -> torch.Tensor:
        return (self._rand(n) * high).long()

    def random_walks(self, n: int) -> torch.Tensor:
        """(n, q) walks: uniform start over nodes with out-weight > 0, weighted transitions. A walk
        that reaches a node without out-edges (directed graphs only) is padded with -1."""
        if len(self.starts) == 0:
            raise ConfigError("the graph has no edges: graph context cannot be sampled (use sampler.r2=0)")
        walks = torch.full((n, self.cfg.q), -1, dtype=torch.long)
        cur = self.starts[self._randint(len(self.starts), n)]
        walks[:, 0] = cur
        alive = torch.ones(n, dtype=torch.bool)
        for t in range(1, self.cfg.q):
            alive &= self.out_weight[cur.clamp_min(0)] > 0
            lo = self.indptr[cur.clamp_min(0)]
            base = torch.where(lo > 0, self.cum[(lo - 1).clamp_min(0)], torch.zeros((), dtype=torch.float64))
            u = base + self._rand(n) * self.out_weight[cur.clamp_min(0)]
            pos = torch.searchsorted(self.cum, u, right=True)
            hi = self.indptr[cur.clamp_min(0) + 1] - 1
            pos = torch.minimum(torch.maximum(pos, lo), hi)  # guard float round-off at row ends
            nxt = self.indices[pos.clamp(0, len(self.indices) - 1)]
            cur = torch.where(alive, nxt, torch.full_like(cur, -1))
            walks[:, t] = cur
        return walks

    def graph_pairs(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """n positive graph-context pairs: one walk each, one admissible window pair per walk."""
        i = torch.empty(n, dtype=torch.long)
        c = torch.empty(n, dtype=torch.long)
        todo = torch.arange(n)
        while len(todo):  # re-draw the rare walks cut short by a dead end (directed graphs)
            walks = self.random_walks(len(todo))
            jk = self.pairs[self._randint(len(self.pairs), len(todo))]
            a = walks.gather(1, jk[:, :1]).squeeze(1)
            b = walks.gather(1, jk[:, 1:]).squeeze(1)
            ok = (a >= 0) & (b >= 0)
            i[todo[ok]], c[todo[ok]] = a[ok], b[ok]
            todo = todo[~ok]
        return i, c

    def label_pairs(self, n: int, positive: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """n ordered pairs of distinct labeled nodes with equal (positive) or different labels."""
        count, offset = self.class_count, self.class_offset
        total = int(count.sum())
        if self.cfg.label_pairs == "pairs":
            if positive:
                if self.lab_class_weights.sum() == 0:
                    raise ConfigError("no class has two labeled nodes: positive label context is impossible")
                k = torch.multinomial(self.lab_class_weights, n, replacement=True, generator=self.gen)
                a = self._randint(count[k], n)
                b = self._randint(count[k] - 1, n)
                b = b + (b >= a).long()
                return self.lab_nodes[offset[k] + a], self.lab_nodes[offset[k] + b]
            if int((count > 0).sum()) < 2:
                raise ConfigError("all labeled nodes share one class: negative label context is impossible")
            out_a = torch.empty(n, dtype=torch.long)
            out_b = torch.empty(n, dtype=torch.long)
            todo = torch.arange(n)
            while len(todo):  # uniform over ordered pairs, rejecting equal labels
                a, b = self._randint(total, len(todo)), self._randint(total, len(todo))
                ok = self.lab_y[a] != self.lab_y[b]
                out_a[todo[ok]], out_b[todo[ok]] = a[ok], b[ok]
                todo = todo[~ok]
            return self.lab_nodes[out_a], self.lab_nodes[out_b]
        # "anchor" (code): anchor uniform over labeled nodes that have a partner, partner uniform
        anchors = torch.nonzero((count[self.lab_y] > 1) if positive else (count[self.lab_y] < total)).flatten()
        if len(anchors) == 0:
            raise ConfigError("no labeled node has a partner for label context")
        a = anchors[self._randint(len(anchors), n)]
        k = self.lab_y[a]
        if positive:
            b = self._randint(count[k] - 1, n)
            b = offset[k] + b + (offset[k] + b >= a).long()
        else:
            b = self._randint(total - count[k], n)
            b = b + (b >= offset[k]).long() * count[k]
        return self.lab_nodes[a], self.lab_nodes[b]

    # --------------------------------------------------------------------------------- Algorithm 2
    def sample(self, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """n triples: (i, c, gamma in {+1., -1.}, is_graph_context)."""
        cfg = self.cfg
        gamma_pos = self._rand(n) < cfg.r1
        graph = self._rand(n) < cfg.r2
        i = torch.empty(n, dtype=torch.long)
        c = torch.empty(n, dtype=torch.long)
        g_idx = torch.nonzero(graph).flatten()
        if len(g_idx):
            gi, gc = self.graph_pairs(len(g_idx))
            neg = ~gamma_pos[g_idx]
            gc[neg] = self.context_nodes[self._randint(len(self.context_nodes), int(neg.sum()))]
            i[g_idx], c[g_idx] = gi, gc
        for positive in (True, False):
            idx = torch.nonzero(~graph & (gamma_pos == positive)).flatten()
            if len(idx):
                i[idx], c[idx] = self.label_pairs(len(idx), positive)
        gamma = gamma_pos.float() * 2 - 1
        return i, c, gamma, graph
