"""Losses of complement-GAN semi-supervised classification (thesis Y §3.1; spec complement-gan.md §2).

The discriminator outputs K logits l; the fake class's logit is fixed at 0 (w_{K+1} = 0, §2.2), so with
LSE = logsumexp(l):

    log P(fake | x)       = -softplus(LSE)            log P(real | x) = LSE - softplus(LSE) = -softplus(-LSE)
    P(y | x, y <= K)      = softmax(l)_y              (the K-class classifier used at test time)

Discriminator (minimisation form of Eq. 3.6, §2.7.6):

    L_D = CE(softmax(l(x_l)), y_l) + λ_u [softplus(-LSE(l(x_u))) + softplus(LSE(l(sg[G(z)])))]
          + λ_ent H(softmax(l(x_u)))

Generator terms (Eq. 3.5): feature matching ‖E h(G(z)) - E h(x_u)‖ (squared-L2 sum as the equation, or the
reference code's mean / L1-mean), the pull-away term PT, the variational entropy bound VI and the low-density
penalty LD = E log p(x) 1[log p(x) > ε] with ε a quantile of the real images' log-densities.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def log_fake(logits: Tensor) -> Tensor:
    """log P_D(K+1 | x) = -softplus(LSE(l)), (B,)."""
    return -F.softplus(torch.logsumexp(logits, -1))


def log_real(logits: Tensor) -> Tensor:
    """log P_D(y <= K | x) = -softplus(-LSE(l)), (B,)."""
    return -F.softplus(-torch.logsumexp(logits, -1))


def conditional_entropy(logits: Tensor, over: str = "k") -> Tensor:
    """Mean entropy of the class posterior: of softmax(l) over the K classes (`over="k"`, the reference code) or
    of the K+1-normalised real-class probabilities (`over="k+1"`, the literal Eq. 3.6 reading)."""
    if over == "k":
        logp = torch.log_softmax(logits, -1)
    elif over == "k+1":
        logp = torch.log_softmax(F.pad(logits, (0, 1)), -1)[..., :-1]
    else:
        raise ValueError(f"over must be 'k' or 'k+1', got {over!r}")
    return -(logp.exp() * logp).sum(-1).mean()


def discriminator_loss(logits_lab: Tensor, labels: Tensor, logits_unl: Tensor, logits_gen: Tensor,
                       lambda_u: float = 0.5, lambda_ent: float = 0.0,
                       ent_over: str = "k") -> tuple[Tensor, dict[str, float]]:
    """L_D of §2.7.6 (the generated samples' logits must come from detached samples) and its parts; the
    entropy term normalised over the K classes or the K+1 (`conditional_entropy`'s `over`)."""
    sup = F.cross_entropy(logits_lab, labels)
    unl = -log_real(logits_unl).mean()
    gen = -log_fake(logits_gen).mean()
    loss = sup + lambda_u * (unl + gen)
    parts = {"d_sup": sup.item(), "d_unl": unl.item(), "d_gen": gen.item()}
    if lambda_ent:
        ent = conditional_entropy(logits_unl, ent_over)
        loss = loss + lambda_ent * ent
        parts["d_ent"] = ent.item()
    return loss, parts


FM_DISTANCES = ("l2sq_sum", "l2sq_mean", "l1_mean")
LD_FORMS = ("indicator", "hinge")


def feature_matching(feat_gen: Tensor, feat_real: Tensor, distance: str = "l2sq_mean") -> Tensor:
    """Distance between the batch-mean features: l2sq_sum (Eq. 3.5), l2sq_mean (reference MNIST code),
    l1_mean (reference SVHN/CIFAR code)."""
    diff = feat_gen.mean(0) - feat_real.mean(0)
    if distance == "l2sq_sum":
        return diff.pow(2).sum()
    if distance == "l2sq_mean":
        return diff.pow(2).mean()
    if distance == "l1_mean":
        return diff.abs().mean()
    raise ValueError(f"distance must be one of {', '.join(FM_DISTANCES)}, got {distance!r}")


def pull_away(feat: Tensor, eps: float = 1e-8) -> Tensor:
    """L_PT = 1/(N(N-1)) Σ_{i≠j} cos(h_i, h_j)^2 over a generated batch (N >= 2)."""
    n = feat.size(0)
    if n < 2:
        raise ValueError("the pull-away term needs at least 2 samples")
    u = feat / feat.norm(dim=-1, keepdim=True).clamp_min(eps)
    cos2 = (u @ u.T).pow(2)
    return (cos2.sum() - cos2.diagonal().sum()) / (n * (n - 1))


def vi_nll(z: Tensor, mu: Tensor, log_sigma: Tensor) -> Tensor:
    """L_VI = -E log q(z | x) for a diagonal Gaussian q, without the constant (d_z/2) log 2π (the uniform
    prior on the unit cube has zero entropy, §2.7.2)."""
    return (log_sigma + 0.5 * ((z - mu) / log_sigma.exp()).pow(2)).sum(-1).mean()


def bounded_log_sigma(raw: Tensor, sigma_max: float) -> Tensor:
    """log σ with σ = σ_max · sigmoid(raw) in (0, σ_max) (the thesis's bound on the encoder's variance)."""
    return math.log(sigma_max) + F.logsigmoid(raw)


def low_density(logp: Tensor, epsilon: float | Tensor, form: str = "indicator") -> Tensor:
    """LD (Eq. 3.4): mean over samples of log p(x) 1[log p(x) > ε] ("indicator"), or the reference's hinge
    max(log p - ε, 0) averaged over the samples where it is positive ("hinge"). Samples at or below ε
    contribute neither value nor gradient."""
    above = logp > epsilon
    if form == "indicator":
        return torch.where(above, logp, torch.zeros_like(logp)).mean()
    if form == "hinge":
        return (logp - epsilon).clamp_min(0).sum() / above.sum().clamp_min(1)
    raise ValueError(f"form must be one of {', '.join(LD_FORMS)}, got {form!r}")


def density_threshold(logp_real: Tensor, q: float = 10.0) -> Tensor:
    """ε = the q-th percentile of the real (training) images' log-densities."""
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q}")
    return torch.quantile(logp_real.detach().float(), q / 100.0)


def uniform_noise(n: int, dim: int, generator: torch.Generator | None = None, device=None) -> Tensor:
    """The generator prior z ~ U(0, 1)^dim (not a Gaussian, §2.7.1)."""
    return torch.rand(n, dim, generator=generator, device=device)
