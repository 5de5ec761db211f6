import math

import pytest
import torch

from genfeat.heads import HeadOutput
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


def test_perplexity_and_bpc():
    assert perplexity(10 * math.log(7), 10) == pytest.approx(7)
    assert bits_per_character(4 * math.log(2), 4) == pytest.approx(1.0)
    assert perplexity(1e6, 1) == math.inf
    with pytest.raises(ValueError):
        perplexity(1.0, 0)
