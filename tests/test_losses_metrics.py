import math

import pytest
import torch
import torch.nn.functional as F

from genfeat.heads import HeadOutput
from genfeat.heads.base import target_log_softmax
from genfeat.losses import nll
from genfeat.metrics import bits_per_character, perplexity


def test_nll_same_for_logits_and_log_probs():
    torch.manual_seed(0)
    logits, y = torch.randn(2, 5, 11), torch.randint(0, 11, (2, 5))
    a = nll(HeadOutput(logits, is_log_prob=False), y)
    b = nll(HeadOutput(torch.log_softmax(logits, -1), is_log_prob=True), y)
    manual = -torch.log_softmax(logits, -1).gather(-1, y[..., None]).mean()
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(a, manual)
    assert nll(HeadOutput(logits), y, reduction="none").shape == y.shape
    y2 = y.clone()
    y2[0, 0] = -100
    assert nll(HeadOutput(logits), y2, reduction="none")[0, 0] == 0


def test_nll_matches_cross_entropy_with_ignored_targets_in_every_reduction():
    torch.manual_seed(1)
    logits = torch.randn(3, 7, 13, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 13, (3, 7))
    y[1, 2] = y[2, 0] = -100
    for reduction in ("mean", "sum", "none"):
        got = nll(HeadOutput(logits), y, reduction=reduction)
        want = F.cross_entropy(logits.reshape(-1, 13), y.reshape(-1), reduction=reduction)
        torch.testing.assert_close(got, want.view(y.shape) if reduction == "none" else want)
        g = torch.randn_like(got)
        torch.testing.assert_close(torch.autograd.grad(got, logits, g)[0],
                                   torch.autograd.grad(want.view(got.shape), logits, g)[0])
    with pytest.raises(ValueError, match="reduction"):
        nll(HeadOutput(logits), y, reduction="avg")


def test_target_log_softmax_values_and_gradient():
    torch.manual_seed(2)
    z = torch.randn(6, 9, dtype=torch.float64, requires_grad=True)
    t = torch.tensor([0, 8, 3, 3, 5, 1])
    got = target_log_softmax(z, t)
    torch.testing.assert_close(got, torch.log_softmax(z, -1)[torch.arange(6), t])
    g = torch.randn(6, dtype=torch.float64)
    (dz,) = torch.autograd.grad(got, z, g)
    torch.testing.assert_close(dz, g[:, None] * (F.one_hot(t, 9) - torch.softmax(z, -1)))
    assert torch.autograd.gradcheck(target_log_softmax, (z, t))


def test_perplexity_and_bpc():
    assert perplexity(10 * math.log(7), 10) == pytest.approx(7)
    assert bits_per_character(4 * math.log(2), 4) == pytest.approx(1.0)
    assert perplexity(1e6, 1) == math.inf
    with pytest.raises(ValueError):
        perplexity(1.0, 0)
