"""Exact tests of the complement-GAN losses (spec complement-gan.md §5.3, tests 1-4, 7-10, 12)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from genfeat.losses.gan_ssl import (
    bounded_log_sigma,
    conditional_entropy,
    density_threshold,
    discriminator_loss,
    feature_matching,
    log_fake,
    log_real,
    low_density,
    pull_away,
    uniform_noise,
    vi_nll,
)


def _logits():
    torch.manual_seed(0)
    l = torch.randn(16, 5, dtype=torch.float64) * 3
    l[0] = 100.0
    l[1] = -100.0
    l[2, 0] = 100.0
    return l


def test_logit_identities_against_an_explicit_k_plus_1_softmax():
    l = _logits()
    full = torch.log_softmax(F.pad(l, (0, 1)), -1)  # fake logit pinned at 0
    torch.testing.assert_close(log_fake(l), full[:, -1], atol=1e-6, rtol=0)
    torch.testing.assert_close(log_real(l), torch.logsumexp(full[:, :-1], -1), atol=1e-6, rtol=0)
    assert torch.isfinite(log_fake(l)).all() and torch.isfinite(log_real(l)).all()


def test_shift_changes_only_the_fake_probability():
    l, c = _logits()[3:], 1.7
    torch.testing.assert_close(torch.softmax(l + c, -1), torch.softmax(l, -1))
    z = torch.exp(l).sum(-1)
    torch.testing.assert_close(log_fake(l + c).exp(), 1 / (1 + math.exp(c) * z))


def test_proposition_1_construction():
    l = _logits()[3:]
    star = torch.log_softmax(l, -1)
    torch.testing.assert_close(log_fake(star).exp(), torch.full((len(l),), 0.5, dtype=l.dtype))
    torch.testing.assert_close(torch.softmax(star, -1), torch.softmax(l, -1))


@pytest.mark.parametrize(("lambda_ent", "over"), [(0.0, "k"), (0.3, "k"), (0.3, "k+1")])
def test_discriminator_loss_equals_naive_eq_3_6(lambda_ent, over):
    torch.manual_seed(1)
    ll, lu, lg = (torch.randn(n, 4, dtype=torch.float64) for n in (6, 8, 8))
    y = torch.randint(0, 4, (6,))
    loss, _ = discriminator_loss(ll, y, lu, lg, 0.5, lambda_ent, over)
    pu = torch.softmax(F.pad(lu, (0, 1)), -1)
    pg = torch.softmax(F.pad(lg, (0, 1)), -1)
    naive = (-torch.log(torch.softmax(ll, -1)[torch.arange(6), y]).mean()
             - 0.5 * torch.log(pu[:, :4].sum(-1)).mean() - 0.5 * torch.log(pg[:, 4]).mean())
    pk = torch.softmax(lu, -1) if over == "k" else pu[:, :4]  # K+1: the real classes' probabilities of K+1
    naive = naive + lambda_ent * (-(pk * pk.log()).sum(-1)).mean()
    torch.testing.assert_close(loss, naive)


def test_pull_away():
    eye = torch.eye(4)
    assert pull_away(eye).item() == pytest.approx(0.0)
    same = torch.ones(5, 3)
    assert pull_away(same).item() == pytest.approx(1.0)
    anti = torch.tensor([[1.0, 2.0], [-1.0, -2.0]])
    assert pull_away(anti).item() == pytest.approx(1.0)
    torch.manual_seed(0)
    f = torch.randn(6, 4)
    scaled = f * torch.rand(6, 1).add(0.1)
    assert pull_away(scaled).item() == pytest.approx(pull_away(f).item(), rel=1e-5)
    u = f / f.norm(dim=1, keepdim=True)
    off = [(u[i] @ u[j]).item() ** 2 for i in range(6) for j in range(6) if i != j]
    assert pull_away(f).item() == pytest.approx(sum(off) / 30, rel=1e-5)  # the diagonal is excluded
    with pytest.raises(ValueError):
        pull_away(f[:1])


def test_vi_term_and_bounded_sigma():
    torch.manual_seed(0)
    z, mu, raw = torch.rand(7, 5), torch.randn(7, 5), torch.randn(7, 5) * 4
    log_sigma = bounded_log_sigma(raw, sigma_max=2.0)
    sigma = log_sigma.exp()
    assert (sigma > 0).all() and (sigma < 2.0).all()
    ref = -torch.distributions.Normal(mu, sigma).log_prob(z).sum(-1).mean()
    torch.testing.assert_close(vi_nll(z, mu, log_sigma), ref - 5 / 2 * math.log(2 * math.pi))


@pytest.mark.parametrize("form", ["indicator", "hinge"])
def test_low_density_only_penalises_samples_above_epsilon(form):
    logp = torch.tensor([-5.0, -1.0, 2.0, 0.5], requires_grad=True)
    below = low_density(logp.detach().clone().requires_grad_() - 10, 0.0, form)
    assert below.item() == 0.0
    loss = low_density(logp, 0.0, form)
    loss.backward()
    assert logp.grad[:2].eq(0).all() and logp.grad[2:].gt(0).all()
    want = (2.0 + 0.5) / 4 if form == "indicator" else (2.0 + 0.5) / 2
    assert loss.item() == pytest.approx(want)
    real = torch.randn(1000)
    assert density_threshold(real, 10).item() == pytest.approx(torch.quantile(real, 0.1).item())


def test_conditional_entropy():
    assert conditional_entropy(torch.zeros(3, 6)).item() == pytest.approx(math.log(6))
    assert conditional_entropy(torch.tensor([[60.0, 0.0, 0.0]])).item() == pytest.approx(0.0, abs=1e-6)
    l = torch.randn(4, 3)
    p = torch.softmax(l, -1)
    assert conditional_entropy(l).item() == pytest.approx((-(p * p.log()).sum(-1)).mean().item(), rel=1e-6)
    pk1 = torch.softmax(F.pad(l, (0, 1)), -1)[:, :3]
    assert conditional_entropy(l, "k+1").item() == pytest.approx((-(pk1 * pk1.log()).sum(-1)).mean().item(),
                                                                 rel=1e-6)


def test_feature_matching_distances():
    a, b = torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[0.0, 0.0], [0.0, 2.0]])
    d = torch.tensor([2.0, 2.0])  # difference of the means
    assert feature_matching(a, b, "l2sq_sum").item() == pytest.approx(float((d ** 2).sum()))
    assert feature_matching(a, b, "l2sq_mean").item() == pytest.approx(float((d ** 2).mean()))
    assert feature_matching(a, b, "l1_mean").item() == pytest.approx(2.0)


def test_uniform_prior():
    z = uniform_noise(20000, 3, generator=torch.Generator().manual_seed(0))
    assert z.min() >= 0 and z.max() < 1 and abs(z.mean().item() - 0.5) < 0.01
