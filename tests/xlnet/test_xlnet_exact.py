"""XLNet exactness tests (spec xlnet.md §6.3): the two streams, the leak detector, shifts, segments, memory."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
import torch

from genfeat.data.plm import perm_mask_from_ranks
from genfeat.models.xlnet import XLNet, XLNetConfig, XLNetLM
from genfeat.nn.relative_attention import bidirectional_positions, rel_gather, rel_shift_bi

V = 13


def make(seed: int = 0, **kw) -> XLNetLM:
    torch.manual_seed(seed)
    cfg = XLNetConfig(**{**dict(vocab_size=V, n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, dropout=0.0,
                                dropatt=0.0), **kw})
    lm = XLNetLM(cfg).double().eval()
    with torch.no_grad():  # larger than the N(0, 0.02) init, so that every term matters
        for p in lm.parameters():
            p.normal_(0, 0.4)
    return lm


@pytest.mark.parametrize("mlen", [0, 5])
@pytest.mark.parametrize("T", [1, 4, 9])
def test_bidirectional_shift_equals_naive(mlen, T):
    """(q_i + v)·W_r R_{M'+i-j} for every (i, j), negative distances included."""
    K = mlen + T
    pos = bidirectional_positions(T, K)  # [K, ..., -T+1]
    assert pos.tolist() == list(range(K, -T, -1))
    x = torch.randn(2, 3, T, len(pos), dtype=torch.float64)  # column c <-> distance pos[c]
    naive = torch.empty(2, 3, T, K, dtype=torch.float64)
    for i, j in itertools.product(range(T), range(K)):
        naive[..., i, j] = x[..., i, (pos == mlen + i - j).nonzero()[0, 0]]
    assert torch.equal(rel_shift_bi(x, K), naive)
    rows = torch.randint(0, T, (2, 3))  # query rows at arbitrary positions of the segment (the query stream)
    pick = torch.stack([x[b][:, rows[b]] for b in range(2)])
    assert torch.equal(rel_gather(pick, rows, T, K), torch.stack([naive[b][:, rows[b]] for b in range(2)]))


def full_order_inputs(T: int, order: list[int]):
    rank = torch.tensor([[order.index(p) for p in range(T)]])
    return perm_mask_from_ranks(rank, torch.ones(1, T, dtype=torch.bool)), rank


def test_query_stream_never_sees_its_own_token():
    """Gradient of log p(x_p | ...) w.r.t. the input embedding at p and at every position of equal or later rank
    is exactly zero; non-zero for earlier ranks. The same by perturbation: bit-identical logits."""
    lm = make(1)
    T, order = 6, [4, 1, 5, 0, 3, 2]
    pm, rank = full_order_inputs(T, order)
    x = torch.randint(0, V, (1, T))
    targets = torch.arange(T)[None]
    emb = lm.transformer.word_embedding(x).detach().requires_grad_(True)
    logp, _ = lm(None, inputs_embeds=emb, perm_mask=pm, target_pos=targets)
    lp = logp.scores.log_softmax(-1).gather(-1, x[..., None])[0, :, 0]
    for p in range(T):
        (grad,) = torch.autograd.grad(lp[p], emb, retain_graph=True)
        later = rank[0] >= rank[0, p]
        assert (grad[0, later] == 0).all(), f"position {p} sees its own or a later token"
        if (~later).any():
            assert grad[0, ~later].abs().sum() > 0
    base = lm(x, perm_mask=pm, target_pos=targets)[0].scores
    for p in range(T):
        y = x.clone()
        y[0, p] = (y[0, p] + 1) % V
        other = lm(y, perm_mask=pm, target_pos=targets)[0].scores
        same = rank[0] <= rank[0, p]  # targets at p or earlier rank must not change
        assert torch.equal(base[0, same], other[0, same])


@pytest.mark.parametrize("variant", ["plain", "memory", "segments"])
def test_joint_distribution_sums_to_one(variant):
    """The leak detector: vocabulary 3, 4 targets, 2 fixed context tokens, one order: sum over the 81 target
    assignments of prod_t p(x_{z_t} | x_{z<t}) = 1."""
    lm = make(2, vocab_size=3, mem_len=4 if variant == "memory" else 0)
    T, ctx_pos, tgt_pos = 6, [1, 4], [0, 2, 3, 5]
    order = [1, 4, 3, 0, 5, 2]  # the context first, then the targets in a random order
    rank = torch.tensor([[order.index(p) for p in range(T)]])
    is_t = torch.zeros(1, T, dtype=torch.bool)
    is_t[0, tgt_pos] = True
    pm = perm_mask_from_ranks(rank, is_t)
    kw = {}
    if variant == "memory":
        kw["mems"] = lm(torch.tensor([[2, 0, 1, 1, 0]]))[1].mems
    if variant == "segments":
        kw["token_type_ids"] = torch.tensor([[0, 0, 0, 1, 1, 2]])
    seqs = torch.tensor(list(itertools.product(range(3), repeat=4)))
    x = torch.zeros(81, T, dtype=torch.long)
    x[:, ctx_pos] = torch.tensor([2, 1])
    x[:, tgt_pos] = seqs
    if "mems" in kw:
        kw["mems"] = tuple(m.expand(81, -1, -1) for m in kw["mems"])
    if "token_type_ids" in kw:
        kw["token_type_ids"] = kw["token_type_ids"].expand(81, -1)
    tp = torch.tensor(tgt_pos).expand(81, -1)
    out, _ = lm(x, perm_mask=pm.expand(81, -1, -1), target_pos=tp, **kw)
    logp = out.scores.log_softmax(-1).gather(-1, x.gather(1, tp)[..., None])[..., 0].sum(1)
    assert abs(logp.exp().sum().item() - 1) < 1e-6


def test_content_stream_invariant_to_later_tokens():
    lm = make(3)
    T, order = 7, [2, 6, 0, 5, 1, 3, 4]
    pm, rank = full_order_inputs(T, order)
    x = torch.randint(0, V, (1, T))
    h = lm.transformer(x, perm_mask=pm).hidden
    for p in range(T):
        y = x.clone()
        later = rank[0] > rank[0, p]
        y[0, later] = (y[0, later] + 3) % V
        assert torch.equal(lm.transformer(y, perm_mask=pm).hidden[0, p], h[0, p])


def test_target_rows_equal_dense_query_stream():
    """The query stream computed at P target rows equals the one computed at every position, restricted."""
    lm = make(4)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, V, (3, 8), generator=g)
    pm = torch.rand(3, 8, 8, generator=g) > 0.6
    seg = torch.randint(0, 2, (3, 8), generator=g)
    dense = lm(x, perm_mask=pm, token_type_ids=seg, target_pos=torch.arange(8).expand(3, -1))[1]
    rows = torch.tensor([[5, 1], [0, 7], [3, 3]])
    sparse = lm(x, perm_mask=pm, token_type_ids=seg, target_pos=rows)[1]
    assert torch.allclose(sparse.query, dense.query.gather(1, rows[..., None].expand(-1, -1, 16)), atol=1e-12)
    assert torch.equal(sparse.hidden, dense.hidden)  # the content stream never reads the query stream
    assert torch.equal(lm.transformer(x, perm_mask=pm, token_type_ids=seg).hidden, dense.hidden)


def test_empty_query_row_is_zero_attention_not_a_leak():
    """Pitfall 6: the first target of a fully-target order has nothing to attend; its output must not depend
    on its own token (the reference's -1e30 masking would attend uniformly, itself included)."""
    lm = make(5)
    pm, rank = full_order_inputs(4, [2, 0, 3, 1])
    x = torch.randint(0, V, (1, 4))
    a = lm(x, perm_mask=pm, target_pos=torch.tensor([[2]]))[0].scores
    x[0, 2] = (x[0, 2] + 1) % V
    b = lm(x, perm_mask=pm, target_pos=torch.tensor([[2]]))[0].scores
    assert torch.isfinite(a).all() and torch.equal(a, b)


def test_bi_data_reversal_symmetry():
    """No memory, no perm mask: the reversed sequence with negated positions gives the reversed outputs."""
    lm = make(6, bi_data=True)
    x = torch.randint(0, V, (1, 9))
    h = lm.transformer(torch.cat([x, x.flip(1)])).hidden
    assert torch.allclose(h[1], h[0].flip(0), atol=1e-10)
    with pytest.raises(ValueError, match="even batch"):
        lm.transformer(x)


def test_relative_segments():
    """Only same / different matters: swapping labels (and three segments) behaves; the term equals
    (q_i + b_s)·s_± by hand."""
    lm = make(7)
    x = torch.randint(0, V, (1, 6))
    seg = torch.tensor([[0, 0, 1, 1, 1, 0]])
    h = lm.transformer(x, token_type_ids=seg).hidden
    assert torch.allclose(lm.transformer(x, token_type_ids=1 - seg).hidden, h, atol=1e-12)
    assert not torch.allclose(lm.transformer(x).hidden, h)
    three = torch.tensor([[0, 0, 1, 1, 2, 2]])
    remapped = torch.tensor([[5, 5, 0, 0, 1, 1]])
    assert torch.allclose(lm.transformer(x, token_type_ids=three).hidden,
                          lm.transformer(x, token_type_ids=remapped).hidden, atol=1e-12)
    # by hand, layer 0: set everything but the segment term to zero and compare the attention weights
    att = lm.transformer.layer[0].rel_attn
    B, T, H, dh = 1, 6, 2, 8
    hin = lm.transformer.word_embedding(x)
    q = att.q(hin).view(B, T, H, dh)
    es = torch.einsum("bihd,shd->bhis", q + lm.transformer.r_s_bias[0], att.seg_embed) * dh**-0.5
    diff = seg[0][:, None] != seg[0][None, :]
    ef = torch.where(diff, es[0, :, :, 1:], es[0, :, :, :1])  # (H, T, T)
    with torch.no_grad():
        att.r.weight.zero_()
        lm.transformer.r_w_bias.zero_()
        att.k.weight.zero_()  # scores = the segment term alone
    probs = ef.softmax(-1)
    v = att.v(hin).view(T, H, dh).transpose(0, 1)
    ref = att.layer_norm(hin[0] + att.o((probs @ v).transpose(0, 1).reshape(T, H * dh)))
    r = torch.zeros(1, 2 * T, 16, dtype=torch.float64)
    diffm = diff[None, None].double()
    got = att.attend(hin, att.k(hin).view(1, T, H, dh).transpose(1, 2), v[None], att.r(r).view(1, 2 * T, H, dh)
                     .permute(0, 2, 3, 1), (lm.transformer.r_w_bias[0], lm.transformer.r_r_bias[0],
                                            lm.transformer.r_s_bias[0]), diffm, None, None, T)
    assert torch.allclose(got[0], ref, atol=1e-10)


def test_memory_equals_one_pass_over_both_sequences():
    """Sequence 2 with memory cached from sequence 1 == one pass over [seq1; seq2] where seq1 never sees seq2
    and seq2 sees all of seq1 (content states of seq1 under its own permutation). Cached rows are detached."""
    lm = make(8, mem_len=16)
    T = 5
    pm1, _ = full_order_inputs(T, [3, 0, 4, 2, 1])
    pm2, _ = full_order_inputs(T, [1, 4, 0, 2, 3])
    x1, x2 = torch.randint(0, V, (1, T)), torch.randint(0, V, (1, T))
    t2 = torch.tensor([[0, 3, 4]])
    _, o1 = lm(x1, perm_mask=pm1)
    s2, o2 = lm(x2, perm_mask=pm2, target_pos=t2, mems=o1.mems)
    assert all(not m.requires_grad for m in o1.mems)
    big = torch.ones(1, 2 * T, 2 * T, dtype=torch.bool)
    big[:, :T, :T], big[:, T:, T:], big[:, T:, :T] = pm1, pm2, False
    lm.transformer.cfg = dataclasses.replace(lm.transformer.cfg, mem_len=0)
    s, o = lm(torch.cat([x1, x2], 1), perm_mask=big, target_pos=t2 + T)
    assert torch.allclose(o.hidden[:, T:], o2.hidden, atol=1e-10)
    assert torch.allclose(s.scores, s2.scores, atol=1e-10)


def test_causal_order_reduces_to_uni_attention():
    """A single identity order without the query stream is a causal Transformer-XL: the content stream under the
    triangular perm mask equals attn_type='uni' (which only ever uses non-negative distances)."""
    bi, uni = make(9), make(9, attn_type="uni")
    x = torch.randint(0, V, (2, 7))
    pm = torch.triu(torch.ones(7, 7, dtype=torch.bool), 1).expand(2, -1, -1)
    assert torch.allclose(bi.transformer(x, perm_mask=pm).hidden, uni.transformer(x).hidden, atol=1e-10)


def test_bad_inputs():
    with pytest.raises(ValueError, match="vocab_size"):
        XLNet(XLNetConfig())
    lm = make(0)
    with pytest.raises(ValueError, match="memory tensors"):
        lm(torch.zeros(1, 3, dtype=torch.long), mems=(torch.zeros(1, 2, 16),))


def test_identity_order_content_stream_is_transformer_xl():
    """Spec §6.3 / issue: one identity order, no query stream -> a causal Transformer-XL. genfeat's TransformerXL
    weights copied into XLNet (ReLU FFN, LayerNorm eps 1e-5, the TXL embedding fed as inputs_embeds): the content
    stream equals TXL's hidden states over two segments with memory, and the memories match."""
    from genfeat.models.transformer_xl import TXLConfig
    from genfeat.models.transformer_xl.model import TransformerXL

    torch.manual_seed(10)
    tcfg = TXLConfig(vocab_size=V, n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, dropout=0.0, tgt_len=5,
                     mem_len=5, untie_r=True)
    txl = TransformerXL(tcfg).double().eval()
    with torch.no_grad():
        for p in txl.parameters():
            p.normal_(0, 0.4)
    xl = make(0, ff_activation="relu", layer_norm_eps=1e-5, mem_len=5).transformer
    sd = {}
    Hd = 16
    for i, layer in enumerate(txl.layers):
        w = layer.dec_attn.qkv_net.weight
        sd |= {f"layer.{i}.rel_attn.q.weight": w[:Hd], f"layer.{i}.rel_attn.k.weight": w[Hd:2 * Hd],
               f"layer.{i}.rel_attn.v.weight": w[2 * Hd:], f"layer.{i}.rel_attn.r.weight": layer.dec_attn.r_net.weight,
               f"layer.{i}.rel_attn.o.weight": layer.dec_attn.o_net.weight}
        for name in ("weight", "bias"):
            sd[f"layer.{i}.rel_attn.layer_norm.{name}"] = getattr(layer.dec_attn.layer_norm, name)
            sd[f"layer.{i}.ff.layer_norm.{name}"] = getattr(layer.pos_ff.layer_norm, name)
            sd[f"layer.{i}.ff.layer_1.{name}"] = getattr(layer.pos_ff.CoreNet[0], name)
            sd[f"layer.{i}.ff.layer_2.{name}"] = getattr(layer.pos_ff.CoreNet[3], name)
    sd["r_w_bias"] = torch.stack([layer.r_w_bias for layer in txl.layers])
    sd["r_r_bias"] = torch.stack([layer.r_r_bias for layer in txl.layers])
    missing = xl.load_state_dict(sd, strict=False).missing_keys
    assert set(missing) == {"word_embedding.weight", "mask_emb", "r_s_bias"} | {
        f"layer.{i}.rel_attn.seg_embed" for i in range(2)}
    T = 5
    ident = torch.triu(torch.ones(T, T, dtype=torch.bool), 1).expand(2, -1, -1)
    mems_t = mems_x = None
    for _ in range(2):
        x = torch.randint(0, V, (2, T))
        out_t = txl(x, mems=mems_t)
        out_x = xl(None, inputs_embeds=txl.word_emb(x), perm_mask=ident, mems=mems_x)
        assert torch.allclose(out_x.hidden, out_t.hidden, atol=1e-10)
        assert all(torch.allclose(a, b, atol=1e-10) for a, b in zip(out_x.mems, out_t.mems, strict=True))
        mems_t, mems_x = out_t.mems, out_x.mems
