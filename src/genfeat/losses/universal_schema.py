"""The losses of universal schema (thesis C §3.3.1.2, Eqs. 3.8-3.9, Appendix B.2; spec
multi-facet-universal-schema.md §5): a row (a sentence pattern or a KB relation) against the entity pairs it
co-occurs with.

    D(s_i, ẽ_j) = min_k min_{0<=η<=1} ||ẽ_j - η s_ik||²       Eq. 3.8: ẽ_j = e_j / ||e_j||, η and k_best
                                                              closed-form and constant (`losses.nnsc`'s k-means
                                                              E-step, `assign="min_dist"` as Algorithm 2; the
                                                              reference code's "max_cos" as an option)
    L = Σ_(i,j)∈R (2 y_ij - 1) r_ij D(s_i, ẽ_j)               Eq. 3.9 with the reference code's batching: the
                                                              positives are an instance's pairs (at most 5 of one
                                                              row), the negatives another instance's pairs
                                                              against this row's facets (a rotation of the batch:
                                                              a random pattern for each pair); means, not sums
    r_ij ∝ 1 / Σ_i y_ij                                       `inverse_count_weights`: mean 1 over the batch
    Ω = γ [D(μ_i, H s^aw_i) - D(μ_i, H s^aw_q)]               Eq. B.1 in the reference code's form: the mean
                                                              facet μ_i against the normalised projection of the
                                                              row's SIF-weighted word vectors (Eq. B.2), the
                                                              clipped-η distance, q a rotation of the batch

    logistic   USchema / CUSchema (Riedel et al. 2013; Verga et al. 2016): σ(v_i · e_j) of an observed pair -> 1,
               of a random pair -> 0, binary cross-entropy (`logistic_pair_loss`)

D lies in [0, 1] for unit ẽ (η = 0 is allowed), so the reference's "|D_neg - 1|" branch never fires and is not
kept. Gradients reach the chosen facet and e_j (through the normalisation), nothing else.
Shapes: facets (B, K, d), facet_mask (B, K), pairs (B, N, d), pair_mask (B, N) -> D (B, N).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from genfeat.losses.nnsc import nnsc_coefficients, nnsc_loss, reconstruction_error


def pair_distance(facets: Tensor, pairs: Tensor, facet_mask: Tensor | None = None, assign: str = "min_dist"
                  ) -> Tensor:
    """Eq. 3.8 for every (row, pair) of a batch: facets (B, K, d) (free norms), pairs (B, N, d) (normalised here)
    -> (B, N)."""
    Fm, W = facets.transpose(1, 2), F.normalize(pairs, dim=-1).transpose(1, 2)  # (B, d, K), (B, d, N)
    if facet_mask is not None:
        Fm = Fm * facet_mask[:, None, :].to(Fm.dtype)
    M = nnsc_coefficients(Fm, W, 0.0, "kmeans", facet_mask=facet_mask, assign=assign)  # (B, K, N) one η per column
    return reconstruction_error(Fm, M, W)


def inverse_count_weights(counts: Tensor, mask: Tensor) -> Tensor:
    """r of Eq. 3.9: counts (B, N) = Σ_i y_ij of each pair (its number of co-occurring rows), mask (B, N) the
    real pairs -> weights ∝ 1 / count with mean 1 over the real pairs (0 elsewhere), in float64 (the loss
    casts them to its own precision)."""
    w = torch.where(mask, 1.0 / counts.clamp_min(1).to(torch.float64), torch.zeros((), dtype=torch.float64))
    return w * (mask.sum() / w.sum())


def universal_schema_loss(facets: Tensor, facet_mask: Tensor | None, pairs: Tensor, pair_mask: Tensor,
                          weights: Tensor, negatives: Tensor, assign: str = "min_dist"
                          ) -> tuple[Tensor, dict[str, float]]:
    """Eq. 3.9 (module docstring), `losses.nnsc.nnsc_loss` with the k-means E-step and no λ: -> (loss, {"d_pos",
    "d_neg"}). `negatives` (B,): the instance whose pairs are each instance's negatives (`nnsc.rotation`)."""
    W = F.normalize(pairs, dim=-1).transpose(1, 2)  # (B, d, N) unit pair embeddings
    loss, parts = nnsc_loss(facets.transpose(1, 2), W, pair_mask, W[negatives], pair_mask[negatives], 0.0, "kmeans",
                            weights=weights, weights_neg=weights[negatives], facet_mask=facet_mask, assign=assign)
    return loss, {"d_pos": parts["er_pos"], "d_neg": parts["er_neg"]}


def mean_facet(facets: Tensor, facet_mask: Tensor | None = None) -> Tensor:
    """μ(S_i) of Eq. B.1: the plain mean of a row's real facets, (B, K, d) -> (B, d)."""
    if facet_mask is None:
        return facets.mean(1)
    m = facet_mask[..., None].to(facets.dtype)
    return (facets * m).sum(1) / m.sum(1)


def autoencoder_regulariser(facets: Tensor, facet_mask: Tensor | None, targets: Tensor, negatives: Tensor
                            ) -> Tensor:
    """Ω / γ of Eq. B.1 (module docstring): facets (B, K, d), targets (B, d) = H s^aw of each row's own words,
    negatives (B,) the row q of each (`nnsc.rotation`) -> the mean over the batch of D(μ_i, t_i) - D(μ_i, t_q)."""
    idx = negatives
    mu = mean_facet(facets, facet_mask)[:, None]  # (B, 1, d)
    pos = pair_distance(mu, targets[:, None])  # (B, 1)
    neg = pair_distance(mu, targets[idx][:, None])
    return (pos - neg).mean()


def logistic_pair_loss(rows: Tensor, pairs: Tensor, pair_mask: Tensor, negatives: Tensor) -> Tensor:
    """USchema / CUSchema's loss: rows (B, d), observed pairs (B, N, d) with their mask (B, N), random pairs
    (B, N, d) (one per observed pair) -> the mean binary cross-entropy of σ(v · e) against 1 and 0."""
    pos = torch.einsum("bd,bnd->bn", rows, pairs)
    neg = torch.einsum("bd,bnd->bn", rows, negatives)
    m = pair_mask.to(pos.dtype)
    bce = F.softplus(-pos) + F.softplus(neg)  # -log σ(pos) - log(1 - σ(neg))
    return (bce * m).sum() / m.sum().clamp_min(1)
