"""PLM / MLM objectives and the synthetic dependency data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genfeat.data.plm import mlm_corrupt, perm_mask_from_ranks, sample_ranks
from genfeat.data.plm_synthetic import MARK, MASK, new_york, new_york_vocab, right_ctx, right_ctx_vocab
from genfeat.losses.plm import mlm_loss, plm_loss
from genfeat.models.xlnet import XLNetConfig, XLNetLM


def test_new_york_slots():
    d = new_york(200, 10, np.random.default_rng(0))
    x, pos = d["input_ids"], d["target_pos"]
    assert x.max() < new_york_vocab() and (pos[:, 1] == pos[:, 0] + 1).all()
    assert (x.gather(1, pos[:, :1] - 1) == MARK).all()
    a, b = x.gather(1, pos[:, :1])[:, 0], x.gather(1, pos[:, 1:])[:, 0]
    assert set(zip(a.tolist(), b.tolist(), strict=True)) == {(2, 3), (4, 5)}
    with pytest.raises(ValueError):
        new_york(1, 2, np.random.default_rng(0))


def test_right_ctx_marked_token_is_a_function_of_its_right_neighbour():
    d = right_ctx(100, 12, np.random.default_rng(1), n_fillers=16, n_marked=3)
    x, pos = d["input_ids"], d["target_pos"]
    assert x.max() < right_ctx_vocab(16)
    marked, right = x.gather(1, pos), x.gather(1, pos + 1)
    assert torch.equal(marked - 2, right - 18)  # a bijection between fillers and marked symbols
    assert (x.gather(1, pos - 1) == MARK).all()


def test_mlm_corruption_rates_and_scope():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(1, 50, (400, 20), generator=g)
    pos = torch.stack([torch.randperm(20, generator=g)[:5] for _ in range(400)])
    y = mlm_corrupt(x, pos, MASK, 50, g)
    untouched = torch.ones_like(x, dtype=torch.bool).scatter(1, pos, False)
    assert torch.equal(y[untouched], x[untouched])
    at = y.gather(1, pos)
    masked = (at == MASK).float().mean()
    kept = (at == x.gather(1, pos)).float().mean()
    assert abs(masked - 0.8) < 0.03 and 0.08 < kept < 0.14  # 10% kept + random draws that hit the original


@pytest.mark.parametrize("objective", ["plm", "mlm"])
def test_objectives_train(objective):
    torch.manual_seed(0)
    lm = XLNetLM(XLNetConfig(vocab_size=new_york_vocab(), n_layer=1, d_model=32, n_head=2, d_head=16, d_inner=64,
                             dropout=0.0, dropatt=0.0))
    opt = torch.optim.Adam(lm.parameters(), lr=3e-3)
    rng, g = np.random.default_rng(0), torch.Generator().manual_seed(0)
    losses = []
    for _ in range(40):
        d = new_york(32, 8, rng)
        if objective == "plm":
            is_t = torch.zeros(32, 8, dtype=torch.bool).scatter(1, d["target_pos"], True)  # the slot
            pm = perm_mask_from_ranks(sample_ranks(32, 8, generator=g), is_t)
            loss, n = plm_loss(lm, {"input_ids": d["input_ids"], "perm_mask": pm, "target_pos": d["target_pos"],
                                    "labels": d["input_ids"].gather(1, d["target_pos"])})
        else:
            x = mlm_corrupt(d["input_ids"], d["target_pos"], MASK, new_york_vocab(), g)
            loss, n = mlm_loss(lm, {"input_ids": x, "target_pos": d["target_pos"],
                                    "labels": d["input_ids"].gather(1, d["target_pos"])})
        assert n == 64
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.3
