"""Baselines on the same splits as Planetoid (thesis Y §3.3.4; spec `planetoid.md` §4.2):

    feat_lr     Feat: multinomial logistic regression on x only (full-batch gradient descent)
    feat_mlp    an MLP on x only (one ReLU hidden layer, dropout, Adam)
    lp          label propagation: the harmonic-function solution F_U = -L_UU^{-1} L_UL Y_L, L = D - A
                (Zhu et al. 2003; clamped to the given labels), solved exactly by sparse LU
    graphemb    GraphEmb: DeepWalk-style embeddings trained with Planetoid's own sampler (graph
                context only, same r1, q, d), then logistic regression on the frozen embeddings
    gcn         GCN (Kipf & Welling 2017) through PyTorch Geometric's GCNConv: two layers, 16 hidden,
                dropout 0.5, Adam lr 0.01, weight decay 5e-4 on the first layer, row-normalised x
    manireg     ManiReg (Belkin et al. 2006): Feat's logistic regression plus the graph Laplacian penalty
                gamma * mean over edges ||p_i - p_j||^2 of the predicted class distributions (the manifold term on
                the softmax outputs instead of a kernel expansion; gamma = 0 is Feat, exactly)
    semiemb     SemiEmb (Weston et al. 2008): Feat's MLP plus the embedding loss on its hidden layer: edges
                pulled together (||h_i - h_j||^2), random node pairs pushed beyond a margin
                (max(0, m - ||h_i - h_k||)^2), weight lambda; lambda = 0 is the MLP, exactly
    tsvm        a transductive-SVM stand-in (no maintained TSVM exists for Python): scikit-learn's
                SelfTrainingClassifier around a linear SVC (Platt probabilities through CalibratedClassifierCV),
                which labels the unlabeled nodes it is confident about and refits; not Joachims' TSVM objective
ManiReg and SemiEmb follow the spec's suggested re-implementation (a Laplacian penalty on the predicted
distribution or the hidden layer, on Feat's networks) with one deviation: full-batch over every edge instead of
Planetoid-I's mini-batches of N2 sampled edges (these graphs fit in memory; the thesis's citation graphs do too).
The graph-regularised baselines come in two protocols, like Planetoid: `_t` uses the whole graph (and, for tsvm,
every unlabeled node), `_i` never reads a test node (edges touching one are dropped, test nodes are not among
the unlabeled), so they predict the test nodes from their features alone.

Every trained baseline is selected on validation accuracy, like Planetoid. LP and GraphEmb ignore
features; Feat ignores the graph. Nodes that LP cannot reach from any label get the most frequent
training class (the count is reported).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.config import require_at_least
from genfeat.data.planetoid import GraphData
from genfeat.errors import ConfigError
from genfeat.metrics.classification import split_accuracy
from genfeat.nn.sparse_linear import SparseLinear, SparseRows
from genfeat.train import checkpoint as C
from genfeat.train.loop import TrainConfig, fit
from genfeat.train.optim import adam


@dataclass(frozen=True)
class BaselineConfig:
    lr_steps: int = 500  # logistic regression: full-batch gradient descent (spec §5.1)
    lr_lr: float = 0.5
    lr_l2: float = 1e-3
    mlp_hidden: int = 64
    mlp_dropout: float = 0.5
    gcn_hidden: int = 16
    gcn_dropout: float = 0.5
    adam_lr: float = 0.01
    adam_weight_decay: float = 5e-4
    epochs: int = 200  # MLP and GCN
    manireg_gamma: float = 1.0
    semiemb_lambda: float = 0.1
    semiemb_margin: float = 1.0
    tsvm_threshold: float = 0.75  # self-training: the class probability above which an unlabeled node is taken
    eval_every: int = 10

    def __post_init__(self) -> None:
        require_at_least(self, 1, "lr_steps", "mlp_hidden", "gcn_hidden", "epochs", "eval_every", prefix="baseline.")
        if not (self.lr_lr > 0 and self.adam_lr > 0):
            raise ConfigError(f"baseline.lr_lr and adam_lr must be > 0, got {self.lr_lr} and {self.adam_lr}")
        require_at_least(self, 0, "lr_l2", "adam_weight_decay", "manireg_gamma", "semiemb_lambda", "semiemb_margin",
                         prefix="baseline.")
        if not (0 <= self.mlp_dropout < 1 and 0 <= self.gcn_dropout < 1 and 0 < self.tsvm_threshold < 1):
            raise ConfigError("baseline.mlp_dropout and gcn_dropout must be in [0, 1), tsvm_threshold in (0, 1)")


def fit_full_batch(logits_fn: Callable[[bool], Tensor], params: list[dict[str, Any]], data: GraphData,
                   steps: int, eval_every: int, run_dir: str | Path, optimizer: str = "adam", lr: float = 0.01,
                   modules: list[nn.Module] = (), penalty: Callable[[Tensor], Tensor] | None = None
                   ) -> dict[str, Any]:
    """Train on the labeled nodes with the full graph in every step (`train.fit`, a constant learning rate);
    keep the best-validation state. `logits_fn(training)` returns (N, C) logits for every node; `penalty(logits)`
    adds an unsupervised term over the graph (ManiReg, SemiEmb)."""
    opt = (adam(params, decoupled=False, lr=lr) if optimizer == "adam" else torch.optim.SGD(params, lr=lr))
    train, y = torch.from_numpy(data.train_idx), torch.from_numpy(data.labels)
    net = nn.ModuleList(modules)

    def loss(_: nn.Module, __: None) -> tuple[Tensor, int]:
        z = logits_fn(True)
        ce = F.cross_entropy(z[train], y[train])
        return (ce if penalty is None else ce + penalty(z)), len(train)

    def evaluate(_: nn.Module) -> dict[str, float]:
        with torch.no_grad():
            return split_accuracy(logits_fn(False).argmax(-1).cpu(), data.labels, data.split_idx)

    loop = TrainConfig(max_steps=steps, schedule="constant", warmup_steps=0, clip_norm=0.0, precision="fp32",
                       log_every=eval_every, eval_every=eval_every, early_stop_metric="valid_acc",
                       early_stop_mode="max")
    res = fit(net, loss, itertools.repeat(None), loop, run_dir, evaluate=evaluate, optimizer=opt,
              desc="full batch", unit="nodes")
    C.load_model_weights(net, Path(run_dir) / C.WEIGHTS)  # the best-validation state
    accuracies = {k: res.best_eval[k] for k in ("train_acc", "valid_acc", "test_acc")}
    return {**accuracies, "best_step": res.best_step, "steps": res.step, "train_seconds": res.wall_time,
            "params": sum(p.numel() for p in net.parameters())}


def graph_edges(data: GraphData, inductive: bool = False) -> Tensor:
    """The graph's edges (2, E) as node pairs (both directions of an undirected edge); `inductive`: without the
    edges that touch a test node."""
    a = data.adj.tocoo()
    keep = np.ones(len(a.row), dtype=bool)
    if inductive:
        test = np.zeros(data.num_nodes, dtype=bool)
        test[data.test_idx] = True
        keep = ~(test[a.row] | test[a.col])
    return torch.from_numpy(np.stack([a.row[keep], a.col[keep]]).astype(np.int64))


def logistic_regression(inputs: SparseRows | Tensor, data: GraphData, cfg: BaselineConfig,
                        run_dir: str | Path, penalty: Callable[[Tensor], Tensor] | None = None) -> dict[str, Any]:
    """Multinomial logistic regression on sparse rows or a dense (N, d) matrix, L2 on the weights."""
    ids = torch.arange(data.num_nodes)
    d_in = inputs.shape[1]
    layer = SparseLinear(d_in, data.num_classes)
    nn.init.zeros_(layer.weight)
    if isinstance(inputs, SparseRows):
        def logits(_: bool) -> Tensor:
            return layer(inputs, ids)
    else:
        def logits(_: bool) -> Tensor:
            return inputs @ layer.weight + layer.bias
    params = [{"params": [layer.weight], "weight_decay": cfg.lr_l2}, {"params": [layer.bias]}]
    return fit_full_batch(logits, params, data, cfg.lr_steps, cfg.eval_every * 5, run_dir, "sgd", cfg.lr_lr, [layer],
                          penalty)


def manireg(data: GraphData, cfg: BaselineConfig, run_dir: str | Path, inductive: bool = False) -> dict[str, Any]:
    """Feat + gamma * mean over the edges of ||softmax(z_i) - softmax(z_j)||^2 (module docstring)."""
    e = graph_edges(data, inductive)

    def penalty(z: Tensor) -> Tensor:
        p = F.softmax(z, -1)
        return cfg.manireg_gamma * (p[e[0]] - p[e[1]]).pow(2).sum(-1).mean()
    return logistic_regression(SparseRows(data.features), data, cfg, run_dir,
                               penalty if cfg.manireg_gamma > 0 and e.size(1) else None)


def feature_mlp(data: GraphData, cfg: BaselineConfig, run_dir: str | Path, embedding_loss: bool = False,
                inductive: bool = False, seed: int = 0) -> dict[str, Any]:
    """Feat's MLP; with `embedding_loss`, SemiEmb (module docstring): the hidden states of the last forward pass
    get the pull / push loss, its random pairs from their own generator (the dropout stream is unchanged)."""
    x, ids = SparseRows(data.features), torch.arange(data.num_nodes)
    first, drop = SparseLinear(data.num_features, cfg.mlp_hidden), nn.Dropout(cfg.mlp_dropout)
    second = nn.Linear(cfg.mlp_hidden, data.num_classes)
    net = nn.ModuleList([first, drop, second])
    hidden: list[Tensor] = []

    def logits(_: bool) -> Tensor:
        h = F.relu(first(x, ids))  # (N, hidden)
        hidden[:] = [h]
        return second(drop(h))
    penalty = None
    if embedding_loss and cfg.semiemb_lambda > 0:
        e, gen = graph_edges(data, inductive), torch.Generator().manual_seed(seed)
        pool = torch.from_numpy(np.setdiff1d(np.arange(data.num_nodes), data.test_idx) if inductive
                                else np.arange(data.num_nodes))

        def penalty(_: Tensor) -> Tensor:
            h = hidden[0]
            pull = (h[e[0]] - h[e[1]]).pow(2).sum(-1).mean()
            a, b = (pool[torch.randint(len(pool), (e.size(1),), generator=gen)] for _ in range(2))
            push = F.relu(cfg.semiemb_margin - (h[a] - h[b]).norm(dim=-1)).pow(2).mean()
            return cfg.semiemb_lambda * (pull + push)
    params = [{"params": list(net.parameters()), "weight_decay": cfg.adam_weight_decay}]
    return fit_full_batch(logits, params, data, cfg.epochs, cfg.eval_every, run_dir, "adam", cfg.adam_lr, [net],
                          penalty)


def tsvm(data: GraphData, cfg: BaselineConfig, inductive: bool = False, seed: int = 0) -> dict[str, Any]:
    """The transductive-SVM stand-in (module docstring): self-training around a linear SVC on the features."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.semi_supervised import SelfTrainingClassifier
    from sklearn.svm import SVC

    t0 = time.perf_counter()
    y = np.full(data.num_nodes, -1, dtype=np.int64)
    y[data.train_idx] = data.labels[data.train_idx]
    seen = np.setdiff1d(np.arange(data.num_nodes), data.test_idx) if inductive else np.arange(data.num_nodes)
    svc = CalibratedClassifierCV(SVC(kernel="linear", random_state=seed), ensemble=False)  # Platt probabilities
    clf = SelfTrainingClassifier(svc, threshold=cfg.tsvm_threshold)
    clf.fit(data.features[seen], y[seen])
    pred = clf.predict(data.features).astype(np.int64)
    return {**split_accuracy(pred, data.labels, data.split_idx), "self_labeled": int((clf.labeled_iter_ > 0).sum()),
            "train_seconds": time.perf_counter() - t0,  # one-vs-one linear SVMs: C(C-1)/2 weight vectors + biases
            "params": (data.num_features + 1) * data.num_classes * (data.num_classes - 1) // 2,
            "steps": int(clf.n_iter_), "best_step": None}


def label_propagation(data: GraphData) -> dict[str, Any]:
    """Harmonic-function label propagation, exact (sparse LU) on every component that holds a label."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components
    from scipy.sparse.linalg import spsolve

    t0 = time.perf_counter()
    a = sp.csr_matrix(data.adj, dtype=np.float64)
    n, c = data.num_nodes, data.num_classes
    lab = data.train_idx
    y_l = np.zeros((len(lab), c))
    y_l[np.arange(len(lab)), data.labels[lab]] = 1.0
    _, comp = connected_components(a, directed=False)
    reach = np.isin(comp, comp[lab])
    unl = np.setdiff1d(np.flatnonzero(reach), lab)
    scores = np.zeros((n, c))
    scores[lab] = y_l
    if len(unl):
        deg = np.asarray(a.sum(1)).ravel()
        l_uu = (sp.diags(deg[unl]) - a[unl][:, unl]).tocsc()
        f_u = spsolve(l_uu, a[unl][:, lab] @ y_l)
        scores[unl] = f_u.reshape(len(unl), c)
    majority = np.bincount(data.labels[lab], minlength=c).argmax()
    pred = np.where(reach, scores.argmax(1), majority)
    return {**split_accuracy(pred, data.labels, data.split_idx),
            "unreachable_nodes": int((~reach).sum()), "train_seconds": time.perf_counter() - t0, "params": 0,
            "steps": 0, "best_step": None}


def sparse_dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Dropout on the stored values of a sparse COO tensor (Kipf & Welling's sparse input dropout): each non-zero
    is zeroed with probability p and the rest scaled by 1 / (1 - p), as `F.dropout` on the dense matrix."""
    if not training or p == 0.0:
        return x
    keep = torch.rand(x.values().shape) >= p
    return torch.sparse_coo_tensor(x.indices(), x.values() * keep / (1.0 - p), x.shape, check_invariants=False)


def gcn(data: GraphData, cfg: BaselineConfig, run_dir: str | Path) -> dict[str, Any]:
    try:
        from torch_geometric.nn import GCNConv
    except ImportError:
        raise ConfigError("the GCN baseline needs PyTorch Geometric: pip install 'genfeat[graph]'") from None
    import scipy.sparse as sp

    feats = sp.csr_matrix(data.features, dtype=np.float32)
    rowsum = np.asarray(feats.sum(1)).ravel()
    feats = sp.diags(np.where(rowsum > 0, 1.0 / np.maximum(rowsum, 1e-12), 0.0)) @ feats  # Kipf's row norm
    f = feats.tocoo()  # kept sparse: a dense (N, F) matrix of a 57k-node bag-of-words graph is gigabytes
    x = torch.sparse_coo_tensor(np.stack([f.row, f.col]).astype(np.int64), f.data.astype(np.float32),
                                f.shape, check_invariants=False).coalesce()
    a = data.adj.tocoo()
    edge_index = torch.from_numpy(np.stack([a.row, a.col]).astype(np.int64))
    conv1, conv2 = GCNConv(data.num_features, cfg.gcn_hidden), GCNConv(cfg.gcn_hidden, data.num_classes)
    net = nn.ModuleList([conv1, conv2])

    def logits(training: bool) -> Tensor:
        h = sparse_dropout(x, cfg.gcn_dropout, training)
        h = F.dropout(F.relu(conv1(h, edge_index)), cfg.gcn_dropout, training)
        return conv2(h, edge_index)
    params = [{"params": list(conv1.parameters()), "weight_decay": cfg.adam_weight_decay},
              {"params": list(conv2.parameters()), "weight_decay": 0.0}]
    return fit_full_batch(logits, params, data, cfg.epochs, cfg.eval_every, run_dir, "adam", cfg.adam_lr, [net])
