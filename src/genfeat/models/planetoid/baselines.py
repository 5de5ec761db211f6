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

The trained baselines are full-graph networks: `forward()` returns the (N, C) logits of every node (dropout as the
module's mode says), trained with every labeled node in each step and selected on validation accuracy, like
Planetoid (`baseline_method` gives the network, its Step, one update a step on the labeled nodes' loss plus the
method's graph term if it has one, and the loop's settings; the recipe runs them through `paradigms.fit_task` on
`tasks.node_classification`). LP and the
TSVM stand-in are solvers: they return the predicted class of every node. LP and GraphEmb ignore features; Feat
ignores the graph. Nodes that LP cannot reach from any label get the most frequent training class (the count is
reported).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.config import require_at_least
from genfeat.data.planetoid import GraphData
from genfeat.errors import ConfigError
from genfeat.losses.graph_regularisers import embedding_penalty, manifold_penalty
from genfeat.nn.sparse_linear import SparseLinear, SparseRows
from genfeat.train.loop import TrainConfig, lr_lambda
from genfeat.train.optim import adam
from genfeat.train.step import LossFn, OneLoss, Step

TRAINED = ("feat_lr", "feat_mlp", "gcn", "manireg_t", "manireg_i", "semiemb_t", "semiemb_i")
LabeledLoss = Callable[[Tensor], tuple[Tensor, int]]  # (N, C) logits -> (mean loss over the labeled nodes, count)


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



class NodeLogisticRegression(nn.Module):
    """Multinomial logistic regression on every node's input row: the sparse bag of words (`SparseRows`) or a
    dense (N, d) matrix (GraphEmb's frozen embeddings). Weights start at zero. forward() -> (N, C) logits."""

    def __init__(self, inputs: SparseRows | Tensor, num_classes: int):
        super().__init__()
        self.layer = SparseLinear(inputs.shape[1], num_classes)
        nn.init.zeros_(self.layer.weight)
        self.sparse = isinstance(inputs, SparseRows)
        if self.sparse:
            self.inputs, self.ids = inputs, torch.arange(inputs.shape[0])
        else:
            self.register_buffer("inputs", inputs, persistent=False)

    def forward(self) -> Tensor:
        if self.sparse:
            return self.layer(self.inputs, self.ids)
        return self.inputs @ self.layer.weight + self.layer.bias  # (N, d) @ (d, C)

    def param_groups(self, l2: float) -> list[dict[str, Any]]:
        return [{"params": [self.layer.weight], "weight_decay": l2}, {"params": [self.layer.bias]}]


class FeatureMLP(nn.Module):
    """Feat's MLP on the bag of words: one ReLU hidden layer, dropout before the output layer."""

    def __init__(self, features: Any, hidden: int, num_classes: int, dropout: float):
        super().__init__()
        self.x, self.ids = SparseRows(features), torch.arange(features.shape[0])
        self.first, self.drop = SparseLinear(features.shape[1], hidden), nn.Dropout(dropout)
        self.second = nn.Linear(hidden, num_classes)

    def forward_with_hidden(self) -> tuple[Tensor, Tensor]:
        """((N, C) logits, (N, hidden) hidden states): SemiEmb's loss reads the hidden layer of the same pass."""
        h = torch.relu(self.first(self.x, self.ids))  # (N, hidden)
        return self.second(self.drop(h)), h

    def forward(self) -> Tensor:
        return self.forward_with_hidden()[0]


def sparse_dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Dropout on the stored values of a sparse COO tensor (Kipf & Welling's sparse input dropout): each non-zero
    is zeroed with probability p and the rest scaled by 1 / (1 - p), as `F.dropout` on the dense matrix."""
    if not training or p == 0.0:
        return x
    keep = torch.rand(x.values().shape) >= p
    return torch.sparse_coo_tensor(x.indices(), x.values() * keep / (1.0 - p), x.shape, check_invariants=False)


class GCN(nn.Module):
    """Two GCNConv layers (PyTorch Geometric) over the whole graph on row-normalised features, kept sparse (a
    dense (N, F) matrix of a 57k-node bag-of-words graph is gigabytes); dropout on the input's non-zeros and on
    the hidden layer."""

    def __init__(self, data: GraphData, hidden: int, dropout: float):
        super().__init__()
        try:
            from torch_geometric.nn import GCNConv
        except ImportError:
            raise ConfigError("the GCN baseline needs PyTorch Geometric: pip install 'genfeat[graph]'") from None
        import scipy.sparse as sp

        feats = sp.csr_matrix(data.features, dtype=np.float32)
        rowsum = np.asarray(feats.sum(1)).ravel()
        feats = sp.diags(np.where(rowsum > 0, 1.0 / np.maximum(rowsum, 1e-12), 0.0)) @ feats  # Kipf's row norm
        f = feats.tocoo()
        self.register_buffer("x", torch.sparse_coo_tensor(
            np.stack([f.row, f.col]).astype(np.int64), f.data.astype(np.float32), f.shape,
            check_invariants=False).coalesce(), persistent=False)
        a = data.adj.tocoo()
        self.register_buffer("edge_index", torch.from_numpy(np.stack([a.row, a.col]).astype(np.int64)),
                             persistent=False)
        self.conv1, self.conv2 = GCNConv(data.num_features, hidden), GCNConv(hidden, data.num_classes)
        self.dropout = dropout

    def forward(self) -> Tensor:
        h = sparse_dropout(self.x, self.dropout, self.training)
        h = nn.functional.dropout(torch.relu(self.conv1(h, self.edge_index)), self.dropout, self.training)
        return self.conv2(h, self.edge_index)  # (N, C)


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


def manireg_loss(labeled_loss: LabeledLoss, edges: Tensor, gamma: float) -> LossFn:
    """ManiReg: the labeled nodes' loss + gamma * `manifold_penalty` over `edges`."""
    def loss(model: nn.Module, _: Any) -> tuple[Tensor, int]:
        z = model()  # (N, C)
        sup, n = labeled_loss(z)
        return sup + gamma * manifold_penalty(z, edges), n
    return loss


def semiemb_loss(labeled_loss: LabeledLoss, edges: Tensor, pool: Tensor, cfg: BaselineConfig,
                 gen: torch.Generator) -> LossFn:
    """SemiEmb: the labeled nodes' loss + lambda * `embedding_penalty` on the MLP's hidden layer, with as many
    random pairs from `pool` as there are edges, drawn from `gen` (the dropout stream is unchanged)."""
    def loss(model: FeatureMLP, _: Any) -> tuple[Tensor, int]:
        z, h = model.forward_with_hidden()
        sup, n = labeled_loss(z)
        a, b = (pool[torch.randint(len(pool), (edges.size(1),), generator=gen)] for _ in range(2))
        return sup + cfg.semiemb_lambda * embedding_penalty(h, edges, a, b, cfg.semiemb_margin), n
    return loss


def labeled_only(labeled_loss: LabeledLoss) -> LossFn:
    """Feat, its MLP, GCN: the labeled nodes' loss on the network's logits of every node."""
    def loss(model: nn.Module, _: Any) -> tuple[Tensor, int]:
        return labeled_loss(model())
    return loss


@dataclass
class BaselineMethod:
    """A trained baseline for `paradigms.fit_task`: the full-graph network, its Step (one update a step with its
    optimizer, on the labeled nodes' loss plus the method's graph term, if any) and the loop's settings (a
    constant learning rate, evaluation every `eval_every` steps)."""

    net: nn.Module
    step: Step
    loop: TrainConfig


def full_batch_loop(steps: int, eval_every: int) -> TrainConfig:
    return TrainConfig(max_steps=steps, schedule="constant", warmup_steps=0, clip_norm=0.0, precision="fp32",
                       log_every=eval_every, eval_every=eval_every)


def baseline_method(name: str, data: GraphData, cfg: BaselineConfig, labeled_loss: LabeledLoss, seed: int = 0,
                    inputs: Tensor | None = None) -> BaselineMethod:
    """The baseline `name` (one of TRAINED) on `data`; `inputs` (N, d): logistic regression on these rows instead
    of the bag of words (GraphEmb's classifier). `_i` methods never read a test node (module docstring)."""
    if name not in TRAINED:
        raise ConfigError(f"{name} is not a trained baseline ({', '.join(TRAINED)})")
    inductive = name.endswith("_i")
    if name == "feat_lr" or name.startswith("manireg_"):
        net = NodeLogisticRegression(SparseRows(data.features) if inputs is None else inputs, data.num_classes)
        opt = torch.optim.SGD(net.param_groups(cfg.lr_l2), lr=cfg.lr_lr)
        loop = full_batch_loop(cfg.lr_steps, cfg.eval_every * 5)
        edges = graph_edges(data, inductive) if name.startswith("manireg_") else None
        term = edges is not None and cfg.manireg_gamma > 0 and edges.size(1) > 0
        loss = manireg_loss(labeled_loss, edges, cfg.manireg_gamma) if term else labeled_only(labeled_loss)
        return BaselineMethod(net, OneLoss(loss, opt, lr_lambda(loop)), loop)
    loop = full_batch_loop(cfg.epochs, cfg.eval_every)
    if name == "gcn":
        net = GCN(data, cfg.gcn_hidden, cfg.gcn_dropout)
        groups = [{"params": list(net.conv1.parameters()), "weight_decay": cfg.adam_weight_decay},
                  {"params": list(net.conv2.parameters()), "weight_decay": 0.0}]
        opt = adam(groups, decoupled=False, lr=cfg.adam_lr)
        return BaselineMethod(net, OneLoss(labeled_only(labeled_loss), opt, lr_lambda(loop)), loop)
    net = FeatureMLP(data.features, cfg.mlp_hidden, data.num_classes, cfg.mlp_dropout)
    opt = adam([{"params": list(net.parameters()), "weight_decay": cfg.adam_weight_decay}], decoupled=False,
               lr=cfg.adam_lr)
    loss = labeled_only(labeled_loss)
    if name.startswith("semiemb_") and cfg.semiemb_lambda > 0:
        pool = torch.from_numpy(np.setdiff1d(np.arange(data.num_nodes), data.test_idx) if inductive
                                else np.arange(data.num_nodes))
        loss = semiemb_loss(labeled_loss, graph_edges(data, inductive), pool, cfg, torch.Generator().manual_seed(seed))
    return BaselineMethod(net, OneLoss(loss, opt, lr_lambda(loop)), loop)


def tsvm(data: GraphData, cfg: BaselineConfig, inductive: bool = False, seed: int = 0
         ) -> tuple[np.ndarray, dict[str, Any]]:
    """The transductive-SVM stand-in (module docstring): self-training around a linear SVC on the features.
    Returns the predicted class of every node (N,) and the solve's counts."""
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
    params = (data.num_features + 1) * data.num_classes * (data.num_classes - 1) // 2  # one-vs-one linear SVMs
    return pred, {"self_labeled": int((clf.labeled_iter_ > 0).sum()), "train_seconds": time.perf_counter() - t0,
                  "params": params, "steps": int(clf.n_iter_), "best_step": None}


def label_propagation(data: GraphData) -> tuple[np.ndarray, dict[str, Any]]:
    """Harmonic-function label propagation, exact (sparse LU) on every component that holds a label. Returns the
    predicted class of every node (N,) and the solve's counts."""
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
    return pred, {"unreachable_nodes": int((~reach).sum()), "train_seconds": time.perf_counter() - t0, "params": 0,
                  "steps": 0, "best_step": None}

