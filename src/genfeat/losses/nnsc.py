"""The NNSC loss of multi-facet embeddings (thesis C §3.2.1.2, Eqs. 3.1-3.2, Algorithm 1; spec
multi-facet-embedding.md §4): K predicted facets F = [c_1 .. c_K] (E x K) rebuild the unit-normalised embeddings
W (E x N) of a sequence's co-occurring words with non-negative, sparse coefficients M (K x N) in [0, 1]:

    E-step   M* = argmin_{0 <= M <= 1} ||F M - W||² + λ Σ M          (F, W detached; per column j a K-dim QP)
    Er       Er(F, W) = ||F M* - W||²                                 (the λ term chooses M, it is not in Er)
    Eq. 3.2  L = Er(F(I), W(N_I)) - Er(F(I), W(N_r))                  (N_r: another sequence's words)
    M-step   ∂L/∂F = 2 (F M* - W) M*^T - 2 (F M_r* - W_r) M_r*^T      (M* constant: Danskin's theorem)

E-step solvers (`nnsc_coefficients`, batched over examples and words, no Python loop over either):
    pgd       FISTA on the box-constrained QP with step 1 / L, L = 2 λ_max(F^T F), until the projected gradient
              is below `tol`: the exact optimum (KKT), for tests and evaluation
    rmsprop   the reference's iterations: M from N(0, 1), ½||F M - W||² + λ' Σ|M| with λ' = λ / 2 (the thesis's
              λ = 0.4 is the reference's 0.2), RMSprop(lr 0.05, α 0.99, ε 1e-8), clamped to [0, 1] after every step;
              60 iterations in training, 1000 at evaluation (it oscillates with amplitude ~ lr)
    kmeans    the hard-assignment ablation ("Our a (k-means)"): one facet per word with the coefficient
              η_k = clip(c_k^T w / ||c_k||², 0, 1); `assign` picks the facet: "max_cos" the highest cosine (the
              references' choice), "min_dist" the smallest residual ||w - η_k c_k||² (Eq. 3.8, Algorithm 2 of
              universal schema); they differ once η clips at 1 for a facet

A facet mask (B, K) (True = a real facet; `models.facets`' slot mask) leaves a row's missing facets out: they are
zeroed before the solve and their coefficients are 0. Per-word weights (B, N) scale each target word's error (universal
schema's pair weights r_ij); the per-example mean still divides by the number of real words, so weights of 1
give the plain mean.

Shapes: F (B, E, K), W (B, E, N), mask (B, N) (True: a real target word) -> M (B, K, N); padded columns get M = 0
and contribute nothing. Losses are means over each example's real words, then over the batch (the reference).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

METHODS = ("pgd", "rmsprop", "kmeans")


ASSIGN = ("max_cos", "min_dist")


@torch.no_grad()
def nnsc_coefficients(F: Tensor, W: Tensor, lam: float, method: str = "pgd", mask: Tensor | None = None,
                      iters: int | None = None, tol: float = 1e-7, generator: torch.Generator | None = None,
                      facet_mask: Tensor | None = None, assign: str = "max_cos") -> Tensor:
    """M* of Eq. 3.1 (module docstring): F (B, E, K), W (B, E, N) -> (B, K, N), in [0, 1], zero on masked columns
    and masked facets (`facet_mask` (B, K)). `iters`: pgd's cap (default 2000), rmsprop's count (default 60);
    `assign`: k-means' choice of facet."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if assign not in ASSIGN:
        raise ValueError(f"assign must be one of {', '.join(ASSIGN)}, got {assign!r}")
    F, W = F.detach(), W.detach()
    if facet_mask is not None:
        F = F * facet_mask[:, None, :].to(F.dtype)  # a missing facet rebuilds nothing
    if method == "kmeans":
        M = _kmeans(F, W, assign)
    elif method == "rmsprop":
        M = _rmsprop(F, W, lam, 60 if iters is None else iters, generator)
    else:
        M = _fista(F, W, lam, 2000 if iters is None else iters, tol)
    if facet_mask is not None:
        M = M * facet_mask[:, :, None].to(M.dtype)
    return M if mask is None else M * mask[:, None, :].to(M.dtype)


def _fista(F: Tensor, W: Tensor, lam: float, iters: int, tol: float) -> Tensor:
    G = F.transpose(1, 2) @ F  # (B, K, K)
    b = F.transpose(1, 2) @ W  # (B, K, N)
    L = 2 * torch.linalg.eigvalsh(G)[:, -1].clamp_min(1e-12)[:, None, None]  # (B, 1, 1) Lipschitz constants
    M = torch.zeros_like(b)
    Y, t = M, 1.0
    for i in range(iters):
        grad = 2 * (G @ Y - b) + lam
        M_next = (Y - grad / L).clamp_(0.0, 1.0)
        t_next = (1 + (1 + 4 * t * t) ** 0.5) / 2
        Y = M_next + ((t - 1) / t_next) * (M_next - M)
        M, t = M_next, t_next
        if i % 20 == 19:  # the projected gradient of M: zero exactly at the optimum
            g = 2 * (G @ M - b) + lam
            if float((M - (M - g).clamp(0.0, 1.0)).abs().max()) < tol:
                break
    return M


def _rmsprop(F: Tensor, W: Tensor, lam: float, iters: int, generator: torch.Generator | None,
             lr: float = 0.05, alpha: float = 0.99, eps: float = 1e-8) -> Tensor:
    G = F.transpose(1, 2) @ F
    b = F.transpose(1, 2) @ W
    gen_device = generator.device if generator is not None else b.device  # draws on the generator's device
    M = torch.randn(b.shape, generator=generator, dtype=b.dtype, device=gen_device).to(b.device)
    v = torch.zeros_like(M)
    for _ in range(iters):  # torch.optim.RMSprop's update on ½||FM - W||² + (λ/2) Σ|M|
        g = G @ M - b + (lam / 2) * torch.sign(M)
        v.mul_(alpha).addcmul_(g, g, value=1 - alpha)
        M.addcdiv_(g, v.sqrt().add_(eps), value=-lr).clamp_(0.0, 1.0)
    return M


def _kmeans(F: Tensor, W: Tensor, assign: str) -> Tensor:
    dots = F.transpose(1, 2) @ W  # (B, K, N)
    norms2 = (F * F).sum(1)[:, :, None]  # (B, K, 1)
    eta = (dots / norms2.clamp_min(1e-12)).clamp(0.0, 1.0)  # (B, K, N) each facet's clipped coefficient
    if assign == "max_cos":
        score = dots / norms2.sqrt().clamp_min(1e-12)  # cosine (times |w|): higher is better
    else:  # ||w - η c||² = |w|² - 2 η c·w + η² |c|²; the |w|² term is the same for every facet
        score = 2 * eta * dots - eta * eta * norms2
    best = score.argmax(1, keepdim=True)  # (B, 1, N); a missing (zeroed) facet has η = 0 whether chosen or not,
    #                                        so its error is |w|², as any facet's with η = 0
    return torch.zeros_like(dots).scatter_(1, best, eta.gather(1, best))


def reconstruction_error(F: Tensor, M: Tensor, W: Tensor, mask: Tensor | None = None) -> Tensor:
    """||F m_j - w_j||² per word (B, N), zero on masked columns (differentiable in F; M is taken as given)."""
    err = (F @ M - W).pow(2).sum(1)
    return err if mask is None else err * mask.to(err.dtype)


def mean_error(F: Tensor, M: Tensor, W: Tensor, mask: Tensor, weights: Tensor | None = None) -> Tensor:
    """Each example's mean Er over its real words, each word's error times its weight (B, N) when given, (B,)."""
    err = reconstruction_error(F, M, W, mask)
    if weights is not None:
        err = err * weights.to(err.dtype)
    return err.sum(1) / mask.sum(1).clamp_min(1).to(F.dtype)


def nnsc_loss(F: Tensor, W: Tensor, mask: Tensor, W_neg: Tensor, mask_neg: Tensor, lam: float,
              method: str = "pgd", iters: int | None = None, generator: torch.Generator | None = None,
              neg_weight: float = 1.0, weights: Tensor | None = None, weights_neg: Tensor | None = None,
              facet_mask: Tensor | None = None, assign: str = "max_cos") -> tuple[Tensor, dict[str, float]]:
    """Eq. 3.2 with Algorithm 1's stop-gradient: mean over the batch of Er(F, W) - neg_weight · Er(F, W_neg)
    (per-word means; `weights` / `weights_neg` (B, N) scale each word's error), M solved on detached F with the
    facets of `facet_mask` (B, K) only. Returns (loss, {"er_pos", "er_neg", "zero_columns"}); zero_columns is the
    share of real target words with M = 0 (all facets in the dead zone: a signal of a bad init)."""
    if facet_mask is not None:
        F = F * facet_mask[:, None, :].to(F.dtype)
    solve = dict(generator=generator, facet_mask=facet_mask, assign=assign)
    M = nnsc_coefficients(F, W, lam, method, mask, iters, **solve)
    M_neg = nnsc_coefficients(F, W_neg, lam, method, mask_neg, iters, **solve)
    pos, neg = mean_error(F, M, W, mask, weights), mean_error(F, M_neg, W_neg, mask_neg, weights_neg)
    dead = float(((M.sum(1) == 0) & mask).sum() / mask.sum().clamp_min(1))
    return (pos - neg_weight * neg).mean(), {"er_pos": float(pos.detach().mean()),
                                             "er_neg": float(neg.detach().mean()), "zero_columns": dead}


def rotation(B: int, generator: torch.Generator | None = None, groups: int = 1) -> Tensor:
    """The in-batch negative of each example (B,): example b gets example (b + s) mod B for one random shift s in
    [1, B - 1] (never itself). With `groups` G, the batch is G contiguous groups of B / G examples and each is
    rotated within itself by the same s in [1, B / G - 1]: what G ranks, each holding one group, draw with one
    seed."""
    if groups < 1 or B % groups:
        raise ValueError(f"a batch of {B} does not split into {groups} negative groups")
    n = B // groups
    if n < 2:
        raise ValueError(f"in-batch negatives need groups of at least 2 examples, got {n}")
    s = int(torch.randint(1, n, (1,), generator=generator))
    within = (torch.arange(n) + s) % n  # (n,)
    return (torch.arange(groups)[:, None] * n + within[None]).flatten()  # (B,)


def rotated_negatives(W: Tensor, mask: Tensor, generator: torch.Generator | None = None, groups: int = 1
                      ) -> tuple[Tensor, Tensor]:
    """The targets of each example's in-batch negative (`rotation`): W (B, E, N), mask (B, N)."""
    idx = rotation(W.size(0), generator, groups).to(W.device)
    return W[idx], mask[idx]


class NNSCObjective:
    """Eq. 3.2 as a training loss for `train.fit`: `objective(model, batch)` -> (loss, target words, parts).

    table   (V_t, E) target vectors, unit-normalised here (Eq. 3.1 rebuilds unit word embeddings)
    batch   input_ids (B, T), targets (B, N) rows of `table`, target_mask (B, N)
    model   input_ids -> facets (B, K, E)

    Negatives: the targets of another example of the batch (`rotated_negatives`), within each of `batch_groups`
    groups of it. Under torchrun each rank's batch is its own pool, so one process with `batch_groups` W trains
    what W ranks do. The solver is `method` with
    `iters` iterations; `exact=True` (evaluation) uses the exact E-step instead (FISTA, `exact_iters`), except for
    k-means, whose assignment is already exact. The random stream (rotations, RMSprop's initial M) is
    checkpointed through `state_dict`.
    """

    def __init__(self, table: Tensor, lam: float, method: str, iters: int | None, seed: int,
                 neg_weight: float = 1.0, exact_iters: int = 500, batch_groups: int = 1, assign: str = "max_cos"):
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
        self.table = torch.nn.functional.normalize(table.float(), dim=1)  # (V_t, E) unit rows
        self.lam, self.method, self.iters, self.neg_weight = lam, method, iters, neg_weight
        self.exact_iters, self.batch_groups, self.assign = exact_iters, batch_groups, assign
        self.gen = torch.Generator().manual_seed(seed)

    def __call__(self, model: torch.nn.Module, batch: dict[str, Tensor], exact: bool = False
                 ) -> tuple[Tensor, int, dict[str, float]]:
        device = next(model.parameters()).device
        F = model(batch["input_ids"].to(device)).transpose(1, 2)  # (B, E, K)
        W = self.table.to(device)[batch["targets"].to(device)].transpose(1, 2)  # (B, E, N)
        mask = batch["target_mask"].to(device)
        W_neg, mask_neg = rotated_negatives(W, mask, self.gen, self.batch_groups)
        method, iters = ("pgd", self.exact_iters) if exact and self.method != "kmeans" else (self.method, self.iters)
        loss, parts = nnsc_loss(F, W, mask, W_neg, mask_neg, self.lam, method, iters, self.gen, self.neg_weight,
                                assign=self.assign)
        return loss, int(mask.sum()), parts

    def state_dict(self) -> dict[str, Any]:
        return {"gen": self.gen.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.gen.set_state(state["gen"])


@dataclass(frozen=True)
class NNSCConfig:
    """The NNSC objective's settings as a run config section (`loss.*` of `facets`, `nnsc.*` of `interactive`)."""

    lam: float = 0.4  # λ of Eq. 3.1 (the reference's 0.2 with its ½ on the squared error)
    solver: str = "rmsprop"  # rmsprop (the reference's 60 iterations) | pgd (exact) | kmeans (the ablation)
    kmeans_assign: str = "max_cos"  # the k-means facet of a word: max_cos (the reference) | min_dist (Eq. 3.8)
    iters: int = 60
    neg_weight: float = 1.0
    batch_groups: int = 1  # negatives within this many groups of a batch (a torchrun rank's share is one: one
    # process with W groups trains what W ranks do)

    def __post_init__(self) -> None:
        if self.batch_groups < 1:
            raise ValueError(f"batch_groups must be >= 1, got {self.batch_groups}")
        if self.kmeans_assign not in ASSIGN:
            raise ValueError(f"kmeans_assign must be one of {', '.join(ASSIGN)}, got {self.kmeans_assign!r}")
        if self.solver not in METHODS:
            raise ValueError(f"solver must be one of {', '.join(METHODS)}, got {self.solver!r}")
        if self.lam < 0 or self.neg_weight < 0 or self.iters < 1:
            raise ValueError(f"lam and neg_weight must be >= 0 and iters >= 1, got {self.lam}, {self.neg_weight} "
                             f"and {self.iters}")

    def objective(self, table: Tensor, seed: int) -> NNSCObjective:
        """The training objective over target vectors `table` (V_t, E), its random stream seeded by `seed`."""
        return NNSCObjective(table, self.lam, self.solver, self.iters, seed, self.neg_weight,
                             batch_groups=self.batch_groups, assign=self.kmeans_assign)
