"""Baselines on the same splits as Planetoid (thesis Y §3.3.4; spec `planetoid.md` §4.2):

    feat_lr     Feat: multinomial logistic regression on x only (full-batch gradient descent)
    feat_mlp    an MLP on x only (one ReLU hidden layer, dropout, Adam)
    lp          label propagation: the harmonic-function solution F_U = -L_UU^{-1} L_UL Y_L, L = D - A
                (Zhu et al. 2003; clamped to the given labels), solved exactly by sparse LU
    graphemb    GraphEmb: DeepWalk-style embeddings trained with Planetoid's own sampler (graph
                context only, same r1, q, d), then logistic regression on the frozen embeddings
    gcn         GCN (Kipf & Welling 2017) through PyTorch Geometric's GCNConv: two layers, 16 hidden,
                dropout 0.5, Adam lr 0.01, weight decay 5e-4 on the first layer, row-normalised x

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

from genfeat.data.planetoid import GraphData
from genfeat.errors import ConfigError
from genfeat.models.planetoid.train import node_task
from genfeat.nn.sparse_linear import SparseLinear, SparseRows
from genfeat.train import checkpoint as C
from genfeat.train.loop import TrainConfig, fit


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
    eval_every: int = 10


def fit_full_batch(logits_fn: Callable[[bool], Tensor], params: list[dict[str, Any]], data: GraphData,
                   steps: int, eval_every: int, run_dir: str | Path, optimizer: str = "adam", lr: float = 0.01,
                   modules: list[nn.Module] = ()) -> dict[str, Any]:
    """Train on the labeled nodes with the full graph in every step (`train.fit`, a constant learning rate);
    keep the best-validation state. `logits_fn(training)` returns (N, C) logits for every node."""
    opt = (torch.optim.Adam(params, lr=lr) if optimizer == "adam" else torch.optim.SGD(params, lr=lr))
    train, y = torch.from_numpy(data.train_idx), torch.from_numpy(data.labels)
    net = nn.ModuleList(modules)

    def loss(_: nn.Module, __: None) -> tuple[Tensor, int]:
        return F.cross_entropy(logits_fn(True)[train], y[train]), len(train)

    task = node_task(data, lambda _: logits_fn(False).argmax(-1))

    loop = TrainConfig(max_steps=steps, schedule="constant", warmup_steps=0, clip_norm=0.0, precision="fp32",
                       log_every=eval_every, eval_every=eval_every, early_stop_metric="valid_acc",
                       early_stop_mode="max")
    res = fit(net, loss, itertools.repeat(None), loop, run_dir, evaluate=task.evaluate_all, optimizer=opt,
              desc="full batch")
    C.load_model_weights(net, Path(run_dir) / C.WEIGHTS)  # the best-validation state
    accuracies = {k: res.best_eval[k] for k in ("train_acc", "valid_acc", "test_acc")}
    return {**accuracies, "best_step": res.best_step, "steps": res.step, "train_seconds": res.wall_time,
            "params": sum(p.numel() for p in net.parameters())}


def logistic_regression(inputs: SparseRows | Tensor, data: GraphData, cfg: BaselineConfig,
                        run_dir: str | Path) -> dict[str, Any]:
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
    return fit_full_batch(logits, params, data, cfg.lr_steps, cfg.eval_every * 5, run_dir, "sgd", cfg.lr_lr, [layer])


def feature_mlp(data: GraphData, cfg: BaselineConfig, run_dir: str | Path) -> dict[str, Any]:
    x, ids = SparseRows(data.features), torch.arange(data.num_nodes)
    first, drop = SparseLinear(data.num_features, cfg.mlp_hidden), nn.Dropout(cfg.mlp_dropout)
    second = nn.Linear(cfg.mlp_hidden, data.num_classes)
    net = nn.ModuleList([first, drop, second])

    def logits(_: bool) -> Tensor:
        return second(drop(F.relu(first(x, ids))))
    params = [{"params": list(net.parameters()), "weight_decay": cfg.adam_weight_decay}]
    return fit_full_batch(logits, params, data, cfg.epochs, cfg.eval_every, run_dir, "adam", cfg.adam_lr, [net])


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
    return {**node_task(data).scores(torch.from_numpy(pred)),
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
