"""Parity with Hugging Face XLNet (transformers 5.x, the `[hf]` extra) for random-weight models built here:
content stream, query-stream logits and memories over two consecutive segments, both directions of conversion."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genfeat.data.plm import plm_inputs
from genfeat.models.xlnet import XLNetLM
from genfeat.models.xlnet.config import XLNetConfig
from genfeat.models.xlnet.hf import config_from_hf, config_to_hf, from_hf_state_dict, to_hf_state_dict

transformers = pytest.importorskip("transformers")

TOL = 1e-5
CONFIGS = {
    "memory+segments": dict(mem_len=6, reuse_len=4),
    "bi_data": dict(bi_data=True, mem_len=5),
    "uni+same_length": dict(attn_type="uni", same_length=True, mem_len=4),
    "clamp_len": dict(clamp_len=3),
    "padding+gelu_new": dict(ff_activation="gelu_new"),
}


def random_hf(**kw):
    torch.manual_seed(0)
    hc = transformers.XLNetConfig(**{**dict(vocab_size=31, d_model=32, n_layer=2, n_head=4, d_inner=48, dropout=0.0),
                                     **kw})
    hf = transformers.XLNetLMHeadModel(hc).eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.normal_(0, 0.3)
    return hf


def inputs(seed: int, uni: bool = False):
    g = torch.Generator().manual_seed(seed)
    B, T = 2, 9
    x = torch.randint(0, 31, (B, T), generator=g)
    seg = torch.tensor([[0] * 5 + [1] * 4, [0] * 3 + [1] * 5 + [2]])
    if uni:  # the causal mask alone (HF cannot add a batched perm_mask to it: an in-place broadcast error)
        pm, pos = None, torch.tensor([[2, 5, 8], [1, 4, 7]])
    else:
        d = plm_inputs(x, 3, np.random.default_rng(seed), g)
        pm, pos = d["perm_mask"], d["target_pos"]
    return x, seg, pm, pos


def hf_run(hf, x, seg, pm, pos, mems, attn):
    tm = torch.nn.functional.one_hot(pos, x.size(1)).float()
    kw = dict(token_type_ids=seg, attention_mask=attn, use_mems=True)
    pm = None if pm is None else pm.float()
    q = hf(x, perm_mask=pm, target_mapping=tm, mems=mems, **kw)
    c = hf.transformer(x, perm_mask=pm, mems=mems, **kw)
    return q.logits, c.last_hidden_state, q.mems


@pytest.mark.parametrize("name", list(CONFIGS))
def test_hf_to_genfeat_two_segments(name):
    kw = dict(CONFIGS[name])
    hf = random_hf(**kw)
    cfg = config_from_hf(hf.config.to_dict())
    lm = XLNetLM(cfg).eval()
    assert str(lm.load_state_dict(from_hf_state_dict(hf.state_dict(), cfg))) == "<All keys matched successfully>"
    hf_mems, mems = None, None
    for step in range(2):
        x, seg, pm, pos = inputs(step, uni=cfg.attn_type == "uni")
        attn = None
        if name.startswith("padding"):
            attn = torch.ones_like(x)
            attn[1, -2:] = 0
            pm = pm & attn.bool()[:, :, None]  # padded rows are not ranked
        logits, hidden, hf_mems_new = hf_run(hf, x, seg, pm, pos, hf_mems, attn)
        out, o = lm(x, perm_mask=pm, target_pos=pos, token_type_ids=seg, attention_mask=attn, mems=mems)
        assert (out.scores - logits).abs().max() < TOL
        assert (o.hidden - hidden).abs().max() < TOL if attn is None else \
            (o.hidden - hidden)[attn.bool()].abs().max() < TOL
        if cfg.mem_len:
            for a, b in zip(hf_mems_new, o.mems, strict=True):
                assert (a.transpose(0, 1) - b).abs().max() < TOL
        hf_mems, mems = hf_mems_new, o.mems


@pytest.mark.parametrize("untie_r", [True, False])
def test_genfeat_to_hf(untie_r):
    torch.manual_seed(1)
    cfg = XLNetConfig(vocab_size=31, n_layer=2, d_model=32, n_head=4, d_head=8, d_inner=48, dropout=0.0,
                      dropatt=0.0, untie_r=untie_r, ff_activation="gelu_tanh", mem_len=4)
    lm = XLNetLM(cfg).eval()
    with torch.no_grad():
        for p in lm.parameters():
            p.normal_(0, 0.3)
    hf = transformers.XLNetLMHeadModel(transformers.XLNetConfig(**config_to_hf(cfg))).eval()
    assert str(hf.load_state_dict(to_hf_state_dict(lm.state_dict(), cfg), strict=True)) == \
        "<All keys matched successfully>"
    x, seg, pm, pos = inputs(5)
    logits, hidden, _ = hf_run(hf, x, seg, pm, pos, None, None)
    out, o = lm(x, perm_mask=pm, target_pos=pos, token_type_ids=seg)
    assert (out.scores - logits).abs().max() < TOL and (o.hidden - hidden).abs().max() < TOL
    back = from_hf_state_dict(hf.state_dict(), config_from_hf(hf.config.to_dict()))
    mine = lm.state_dict()
    for k, v in back.items():  # round trip (shared biases come back per layer)
        assert torch.equal(v, mine[k] if v.shape == mine[k].shape else mine[k].expand_as(v))


def test_config_errors():
    with pytest.raises(ValueError, match="d_head"):
        config_to_hf(XLNetConfig(vocab_size=5, d_model=32, n_head=4, d_head=16))
    with pytest.raises(ValueError, match="ff_activation"):
        config_from_hf(dict(vocab_size=5, d_model=8, n_layer=1, n_head=2, d_inner=8, ff_activation="swish"))
