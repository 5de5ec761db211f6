"""The GPT decoder's key / value cache: with it, each new token's outputs equal a full re-read of the context,
and sampling gives the same tokens with every head (the heads a cache cannot serve fall back to re-reading: those
reading earlier positions' hidden states, as the multi-input facets of Mi and MFS, the pointer heads and the
two-stage reranker)."""

from __future__ import annotations

import pytest
import torch

from genfeat import named_head
from genfeat.heads.config import HEADS
from genfeat.models.gpt import GPTConfig, build_gpt_lm
from genfeat.models.sampling import sample

CFG = GPTConfig(vocab_size=600, n_layer=2, n_head=2, d_model=16, max_len=24, dropout=0.0)


def test_cached_steps_equal_a_full_reread():
    torch.manual_seed(0)
    dec = build_gpt_lm(CFG).backbone.eval()
    x = torch.randint(0, 600, (3, 10))
    full = dec(x).hidden
    out = dec(x[:, :4], mems=())
    got = [out.hidden]
    for t in range(4, 10):
        out = dec(x[:, t: t + 1], mems=out.mems)
        got.append(out.hidden)
    torch.testing.assert_close(torch.cat(got, 1), full, atol=1e-5, rtol=1e-5)
    assert out.mems[0].shape == (3, 10, 2, 2, 8) and len(out.mems) == 2
    with pytest.raises(ValueError, match="exceeds max_len"):
        dec(torch.randint(0, 600, (1, 15)), mems=out.mems)


# the heads that use the cache, and one of each kind that re-reads (Mi, MFS, pointer, two-stage); every other
# registry head is one of these kinds (`test_which_heads_use_the_cache`)
HEAD_NAMES = ["softmax", "sigsoftmax", "mos3", "c", "clr20", "mos3-max", "c+mi", "mfs", "copynet", "softmax+rs2:20"]


@pytest.mark.parametrize("head", HEAD_NAMES)
def test_sampling_with_the_cache_equals_rereading(head, monkeypatch):
    """The same generator gives the same tokens with the cache (where the head allows it) as with re-reading
    the context at every step, past max_len too (the cache is rebuilt)."""
    torch.manual_seed(0)
    lm = build_gpt_lm(GPTConfig(**{**CFG.__dict__, "head": named_head(head)})).eval()
    prompt = torch.randint(0, 600, (2, 5))
    cached = sample(lm, prompt, 25, top_k=5, generator=torch.Generator().manual_seed(1))
    monkeypatch.setattr(type(lm), "generation_memory", lambda self: None)
    reread = sample(lm, prompt, 25, top_k=5, generator=torch.Generator().manual_seed(1))
    assert torch.equal(cached, reread)


def test_which_heads_use_the_cache():
    uses = {h: build_gpt_lm(GPTConfig(**{**CFG.__dict__, "head": named_head(h)})).generation_memory() is not None
            for h in HEADS if "500" not in h and "100" not in h}
    assert {h for h, u in uses.items() if u} == {"softmax", "softmax_facet", "sigsoftmax", "softmax+mp", "mos3",
                                                 "mos4", "mos3-max", "mfs-mi", "c", "clr20"}
