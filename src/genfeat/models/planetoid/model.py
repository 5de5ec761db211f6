"""Planetoid: embeddings that predict labels and graph context (thesis Y §3.3.3; Yang et al. 2016).

Variants (`PlanetoidConfig.variant`):
    T  transductive, Eq. 3.13: p(y | x, e) = softmax(W [h^k(x); h^l(e)]), e a free embedding per node
    G  T without the feature branch (p(y | e))
    I  inductive, Eq. 3.14: e = h^{l1}(x) = ReLU(W1 x + b1), p(y | x) = softmax(W [h^k(x); h^{l2}(e)])
The context model (Eq. 3.12) scores a pair by w_c^T e_i with a separate table of context vectors.

Architecture (spec `planetoid.md` §2.8, the authors' code; the thesis says only "one layer per
branch"): with `branch_activation="softmax"` each branch ends in a C-way softmax layer whose
pre-activations also get an auxiliary cross-entropy (`aux_branch_loss`), so the feature branch is
trained even when the free embeddings of the few labeled nodes could memorise the labels (pitfall
2). `"relu"` gives the literal reading (hidden ReLU branches, no auxiliary losses). The inductive
context branch reuses W1 with its own bias, as the code. Dense layers are Glorot-uniform with zero
biases, embedding tables N(0, 0.01^2) (Lasagne defaults). Features stay sparse (`SparseLinear`).

Deviations: none from the equations; the code's full-softmax context loss (`neg_samp=0`) is not
implemented (the thesis specifies negative sampling, Eq. 3.12).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from genfeat.errors import ConfigError
from genfeat.nn.sparse_linear import SparseLinear, SparseRows


@dataclass(frozen=True)
class PlanetoidConfig:
    variant: str = "T"  # T | I | G
    embed_dim: int = 50
    branch_activation: str = "softmax"  # softmax (code, class-probability layers) | relu (literal)
    hidden_sizes: tuple[int, ...] = ()  # extra ReLU layers in each branch before its last layer
    branch_dim: int = 32  # width of a relu branch's last layer
    aux_branch_loss: bool = True  # per-branch cross-entropy (softmax branches only)

    def __post_init__(self) -> None:
        if self.variant not in ("T", "I", "G"):
            raise ConfigError(f"model.variant must be T, I or G, got {self.variant!r}")
        if self.branch_activation not in ("softmax", "relu"):
            raise ConfigError(f"model.branch_activation must be softmax or relu, got {self.branch_activation!r}")


def _glorot(layer: nn.Linear) -> nn.Linear:
    nn.init.xavier_uniform_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


class _Branch(nn.Module):
    """ReLU layers `hidden`, then a last layer; the first layer reads sparse rows when `sparse_in`."""

    def __init__(self, d_in: int, hidden: tuple[int, ...], d_out: int, sparse_in: bool) -> None:
        super().__init__()
        sizes = [d_in, *hidden, d_out]
        first = SparseLinear if sparse_in else (lambda a, b: _glorot(nn.Linear(a, b)))
        self.layers = nn.ModuleList([first(sizes[0], sizes[1])] +
                                    [_glorot(nn.Linear(a, b)) for a, b in zip(sizes[1:-1], sizes[2:], strict=True)])
        self.sparse_in = sparse_in

    def forward(self, inp: Tensor | SparseRows, ids: Tensor | None = None) -> Tensor:
        h = self.layers[0](inp, ids) if self.sparse_in else self.layers[0](inp)
        for layer in self.layers[1:]:
            h = layer(F.relu(h))
        return h


class Planetoid(nn.Module):
    def __init__(self, cfg: PlanetoidConfig, num_nodes: int, num_features: int, num_classes: int) -> None:
        super().__init__()
        if cfg.variant != "G" and num_features == 0:
            raise ConfigError(f"Planetoid-{cfg.variant} needs node features; use variant G for a bare graph")
        self.cfg = cfg
        d = cfg.embed_dim
        softmax = cfg.branch_activation == "softmax"
        width = num_classes if softmax else cfg.branch_dim
        if cfg.variant == "I":
            self.embed_layer = SparseLinear(num_features, d)  # e = ReLU(W1 x + b1)
            self.context_bias = nn.Parameter(torch.zeros(d))  # context branch: ReLU(W1 x + b_ctx)
        else:
            self.embedding = nn.Embedding(num_nodes, d)
            nn.init.normal_(self.embedding.weight, std=0.01)
        self.context = nn.Embedding(num_nodes, d)  # w_c
        nn.init.normal_(self.context.weight, std=0.01)
        self.emb_branch = _Branch(d, cfg.hidden_sizes, width, sparse_in=False)  # h^l
        self.feat_branch = (_Branch(num_features, cfg.hidden_sizes, width, sparse_in=True)
                            if cfg.variant != "G" else None)  # h^k
        n_branches = 1 if self.feat_branch is None else 2
        self.out = _glorot(nn.Linear(n_branches * width, num_classes))

    # ---------------------------------------------------------------------------------- pieces
    def embed(self, ids: Tensor, x: SparseRows | None = None) -> Tensor:
        """e_i as the classifier sees it."""
        if self.cfg.variant == "I":
            return F.relu(self.embed_layer(x, ids))
        return self.embedding(ids)

    def context_embed(self, ids: Tensor, x: SparseRows | None = None) -> Tensor:
        """e_i as the context model sees it (inductive: W1 shared, own bias)."""
        if self.cfg.variant == "I":
            return F.relu(self.embed_layer.project(x, ids) + self.context_bias)
        return self.embedding(ids)

    def forward(self, ids: Tensor, x: SparseRows | None = None) -> tuple[Tensor, list[Tensor]]:
        """Class logits for nodes `ids` and the branch pre-activations (for the auxiliary losses)."""
        z = [self.emb_branch(self.embed(ids, x))]
        if self.feat_branch is not None:
            z.insert(0, self.feat_branch(x, ids))
        act = F.softmax if self.cfg.branch_activation == "softmax" else (lambda t, dim: F.relu(t))
        logits = self.out(torch.cat([act(t, dim=-1) for t in z], -1))
        return logits, z

    def supervised_loss(self, ids: Tensor, y: Tensor, x: SparseRows | None = None) -> Tensor:
        """Mean cross-entropy of the output (Algorithm 3, with the log the thesis omits), plus the
        per-branch cross-entropies when `aux_branch_loss` and softmax branches."""
        logits, z = self(ids, x)
        loss = F.cross_entropy(logits, y)
        if self.cfg.aux_branch_loss and self.cfg.branch_activation == "softmax":
            loss = loss + sum(F.cross_entropy(t, y) for t in z)
        return loss

    @torch.no_grad()
    def predict(self, ids: Tensor, x: SparseRows | None = None, chunk: int = 8192) -> Tensor:
        return torch.cat([self(ids[i:i + chunk], x)[0] for i in range(0, len(ids), chunk)]).argmax(-1)

    # -------------------------------------------------------------------------- parameter groups
    def context_parameters(self) -> list[nn.Parameter]:
        """Parameters the context loss moves: e (or W1 and the context bias) and the w_c table."""
        if self.cfg.variant == "I":
            return [self.embed_layer.weight, self.context_bias, self.context.weight]
        return [self.embedding.weight, self.context.weight]

    def supervised_parameters(self) -> list[nn.Parameter]:
        """Parameters the label loss moves: everything except w_c and the context bias (Planetoid-T:
        the free embeddings of the labeled nodes included, spec §2.7)."""
        skip = {id(self.context.weight), id(getattr(self, "context_bias", None))}
        return [p for p in self.parameters() if id(p) not in skip]

