import numpy as np
import pytest
import torch

from genfeat.analysis.recl import context_losses, recl, relative_gain
from genfeat.models.gpt import GPTConfig, build_gpt_lm

CONTEXTS = [100, 200, 300, 400, 500, 600]


def test_recl_on_hand_made_losses():
    n = 50
    rng = np.random.default_rng(0)
    base = 3.0 + rng.random(n)
    # model A improves by ~5% perplexity per step up to c = 300, then not at all
    a = np.stack([base - np.log(1.05) * min(k, 2) for k in range(len(CONTEXTS))])
    # model B never improves with more context
    b = np.stack([base + 0.01 for _ in CONTEXTS])
    res = recl({"A": a, "B": b}, CONTEXTS, r=1.0)
    assert res["A"].recl == 300 and not res["A"].lower_bound
    assert res["A"].gains[0] == pytest.approx(1 - 1 / 1.05)
    assert res["B"].recl == 100
    # f_i(c, c) is the same for every member: g depends only on the member's longer-context losses
    assert relative_gain({"A": a, "B": b}, "B", 0, 1.0) == pytest.approx(0.0)
    # a model that keeps improving is flagged as a lower bound
    c = np.stack([base - 0.1 * k for k in range(len(CONTEXTS))])
    assert recl({"C": c}, CONTEXTS)["C"].lower_bound


def test_recl_hard_positions_ratio():
    n = 100
    base = np.ones(n)
    base[:10] = 5.0  # the 10% hardest positions
    improve = np.stack([base, np.where(np.arange(n) < 10, base - 0.5, base)] + [base - 0.5 * (np.arange(n) < 10)] * 4)
    assert recl({"A": improve}, CONTEXTS, r=0.1)["A"].gains[0] > recl({"A": improve}, CONTEXTS, r=1.0)["A"].gains[0]
    with pytest.raises(ValueError):
        recl({"A": improve[:3]}, CONTEXTS)


def test_context_losses_match_direct_forward():
    torch.manual_seed(0)
    lm = build_gpt_lm(GPTConfig(vocab_size=20, n_layer=1, n_head=2, d_model=16, max_len=16)).eval()
    tokens = np.random.default_rng(1).integers(0, 20, 100)
    pos = np.array([20, 33, 50])
    got = context_losses(lm, tokens, [4, 8], pos, batch_size=2)
    x = torch.from_numpy(tokens).long()
    for k, c in enumerate([4, 8]):
        for j, t in enumerate(pos):
            logp = torch.log_softmax(lm(x[t - c : t][None])[0].scores[0, -1], -1)
            assert got[k, j] == pytest.approx(-logp[x[t]].item(), rel=1e-5)
