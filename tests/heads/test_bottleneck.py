"""A narrower head input (`head.input_dim`, heads/bottleneck.py): the softmax bottleneck's rank bound holds at the
chosen width and a mixture escapes it; every head reads the projected states; the configs that cannot combine
say so."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from genfeat.errors import ConfigError
from genfeat.heads.config import HeadConfig, named_head
from genfeat.losses import nll
from genfeat.models.gpt import GPTConfig, build_gpt_lm

V, D = 40, 16


def _lm(head: str, input_dim: int, seed: int = 0):
    torch.manual_seed(seed)
    cfg = dataclasses.replace(named_head(head), input_dim=input_dim)
    lm = build_gpt_lm(GPTConfig(vocab_size=V, n_layer=2, n_head=2, d_model=D, max_len=32, dropout=0.0, head=cfg))
    with torch.no_grad():  # every head starts equal to the softmax (its facets identical): move them apart
        for p in lm.head.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return lm


def _log_probs(lm) -> torch.Tensor:
    ids = torch.randint(0, V, (4, 30), generator=torch.Generator().manual_seed(1))
    out, _ = lm.eval()(ids)
    return out.log_probs().reshape(-1, V).double()  # (120, V)


def _rank(x: torch.Tensor) -> int:
    return int(torch.linalg.matrix_rank(x, rtol=1e-7))


@pytest.mark.parametrize("width", [3, 5])
def test_a_softmax_is_rank_bound_by_the_head_width_and_a_mixture_is_not(width):
    # log P = H W^T - lse(H W^T) 1^T: rank <= d + 1 over 120 contexts x 40 words (thesis C §2.2)
    assert _rank(_log_probs(_lm("softmax", width))) <= width + 1
    assert _rank(_log_probs(_lm("mos3", width))) > 3 * (width + 1)
    assert _rank(_log_probs(_lm("softmax", 0))) > width + 1  # the full width D = 16 is not bound that low


def test_the_head_is_built_at_the_narrow_width_with_its_own_output_embedding():
    lm = _lm("mfs", 8)
    assert lm.head.proj.weight.shape == (8, D)
    assert lm.head.head.weight.shape == (V, 8) and lm.head.head.weight is not lm.backbone.tok_emb.weight
    assert lm.head.needs == lm.head.head.needs and lm.head.needs.all_hidden  # Mi's lower layers are projected too
    ids = torch.randint(0, V, (2, 10))
    out, _ = lm.train()(ids)
    loss = nll(out, ids)
    loss.backward()
    assert lm.head.proj.weight.grad is not None and lm.backbone.tok_emb.weight.grad is not None
    c = _lm("c+mi", 8)
    assert torch.allclose(c.eval()(ids)[0].log_probs().exp().sum(-1), torch.ones(2, 10), atol=1e-5)


def test_input_dim_equal_to_zero_is_the_plain_head_and_bad_values_are_refused():
    assert type(_lm("softmax", 0).head).__name__ == "SoftmaxHead"
    with pytest.raises(ConfigError, match="input_dim"):
        HeadConfig(input_dim=-1)
    with pytest.raises(ConfigError, match="two-stage"):
        dataclasses.replace(named_head("softmax+rs2:20"), input_dim=8)
