"""genfeat.nn.Dropout: nn.Dropout's semantics with the rand-threshold CPU path."""

import pytest
import torch
from torch import nn

from genfeat.nn.dropout import Dropout, dropout


def test_is_an_nn_dropout_with_no_state():
    d = Dropout(0.3)
    assert isinstance(d, nn.Dropout) and d.p == 0.3 and not d.state_dict()


def test_eval_and_p0_are_identity():
    x = torch.randn(5, 7)
    d = Dropout(0.5).eval()
    assert d(x) is x
    assert dropout(x, 0.0, training=True) is x


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_kept_fraction_and_scaling(p):
    torch.manual_seed(0)
    x = torch.rand(1000, 1000) + 0.5  # no zeros, so a zero output means "dropped"
    y = dropout(x, p)
    kept = y != 0
    n = x.numel()
    assert abs(kept.float().mean().item() - (1 - p)) < 5 * ((p * (1 - p)) / n) ** 0.5
    torch.testing.assert_close(y[kept], x[kept] / (1 - p))
    # independent across positions: the two halves' kept fractions agree to sampling noise
    a, b = kept[:500].float().mean(), kept[500:].float().mean()
    assert abs(a - b).item() < 10 * ((p * (1 - p)) / (n / 2)) ** 0.5


def test_gradient_is_the_scaled_mask():
    torch.manual_seed(1)
    x = (torch.rand(64, 33) + 0.5).requires_grad_()
    y = dropout(x, 0.25)
    g = torch.randn_like(y)
    y.backward(g)
    mask = (y != 0).float() / 0.75
    torch.testing.assert_close(x.grad, g * mask)


def test_seeded_runs_repeat_and_dtype_kept():
    x = torch.randn(8, 16, dtype=torch.bfloat16)
    torch.manual_seed(3)
    a = dropout(x, 0.4)
    torch.manual_seed(3)
    b = dropout(x, 0.4)
    assert a.dtype == torch.bfloat16 and torch.equal(a, b)


def test_p1_drops_everything_and_bad_p_raises():
    x = torch.randn(4, 4)
    assert torch.count_nonzero(dropout(x, 1.0)) == 0
    with pytest.raises(ValueError, match="probability"):
        dropout(x, 1.5)
