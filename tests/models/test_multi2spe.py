"""Multi²SPE's exact mechanics (spec multi2spe.md §8.1, §13.1): [CLS] as facet 1, the mean-subtracted maps of
Eq. 5.5 and their identities, where the maps act, Eqs. 5.6-5.7 and the loss-mixing variant, the summed embedding,
the parameter count."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from genfeat.errors import ConfigError
from genfeat.losses.paper_triplets import best_pair, pair_similarity, specter_margin, sum_dot, triplet_loss
from genfeat.models.bert import BertConfig, BertModel
from genfeat.models.multi_cls import MultiCLSConfig, MultiCLSEncoder
from genfeat.models.multi_cls.model import facet_linear, facet_token_ids, mean_subtracted
from genfeat.models.multi_cls.paper import PaperEncoder

TINY = BertConfig(vocab_size=120, d_model=16, n_layer=3, n_head=2, d_inner=32, max_len=32, dropout=0.0,
                  attn_dropout=0.0)
VOCAB = {"[PAD]": 0, **{f"[unused{j}]": 1 + j for j in range(10)}, "[CLS]": 101, "[SEP]": 102}


def _spe(k=3, after=(1, 2, 3), dtype=torch.float64, **kw) -> MultiCLSEncoder:
    torch.manual_seed(0)
    cfg = MultiCLSConfig(k=k, insert_after=after, cls_facet=True, insert_bias=True, mean_subtract=True,
                         insert_init="eye", facet_ids=facet_token_ids(VOCAB.get, k - 1), **kw)
    return MultiCLSEncoder(BertModel(TINY), cfg).to(dtype).eval()


def _inputs(b=2, t=10):
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(104, 120, (b, t), generator=g)
    ids[:, 0], ids[:, 4], ids[:, -1] = 101, 102, 102  # [CLS] title [SEP] abstract [SEP]
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    return ids, mask


def test_cls_is_facet_one_and_the_facet_tokens_are_looked_up():
    assert facet_token_ids(VOCAB.get, 2) == (2, 3)  # [unused1], [unused2]: not [unused0]
    with pytest.raises(ConfigError, match=r"\[unused10\]"):
        facet_token_ids(VOCAB.get, 11)
    enc = _spe(k=3)
    ids, mask = _inputs()
    a, _, c = enc.add_facet_tokens(ids, None, mask)
    assert a[0, :3].tolist() == [101, 2, 3] and torch.equal(a[:, 3:], ids[:, 1:])
    assert c[:, :3].eq(1).all()
    h = enc(ids, attention_mask=mask).hidden
    assert h.shape == (2, 12, 16) and torch.equal(enc.facet_states(h), h[:, :3])
    with pytest.raises(ConfigError, match="facet_ids has 3 ids, 2"):
        MultiCLSConfig(k=3, cls_facet=True, facet_ids=(2, 3, 4))


def test_eq_5_5_identities():
    torch.manual_seed(1)
    K, D = 3, 5
    W = torch.randn(K, D, D, dtype=torch.float64, requires_grad=True)
    h = torch.randn(4, K, D, dtype=torch.float64)
    eff = mean_subtracted(W)
    assert eff.sum(0).abs().max() < 1e-12  # (a)
    lhs = torch.einsum("koi,bki->bo", eff, h)
    rhs = torch.einsum("koi,bki->bo", W, h - h.mean(1, keepdim=True))
    assert torch.allclose(lhs, rhs, atol=1e-12)  # (b)
    A = torch.randn(D, D, dtype=torch.float64)
    assert torch.allclose(mean_subtracted(W + A), eff, atol=1e-12)  # (c)
    g = torch.randn(4, K, D, dtype=torch.float64)
    (facet_linear(h, eff, None) * g).sum().backward()
    assert W.grad.sum(0).abs().max() < 1e-12  # (d)
    opt = torch.optim.SGD([W], lr=0.5)
    before = W.detach().mean(0).clone()
    opt.step()
    assert torch.allclose(W.detach().mean(0), before, atol=1e-12)  # (e)
    w1 = torch.randn(1, D, D, dtype=torch.float64)
    assert torch.equal(mean_subtracted(w1), w1)  # (f) K = 1: the plain map
    lin = torch.nn.Linear(D, D).double()
    x = torch.randn(4, 1, D, dtype=torch.float64)
    assert torch.allclose(facet_linear(x, lin.weight[None], lin.bias[None])[:, 0], lin(x[:, 0]), atol=1e-12)


def test_eye_maps_start_at_zero_and_act_on_the_facet_positions_only():
    enc = _spe(k=3, after=(1, 3))
    ids, mask = _inputs()
    seen = {}
    enc.bert.layers[1].register_forward_pre_hook(lambda m, args: seen.update(x=args[0].clone()))  # returns None
    enc(ids, attention_mask=mask)
    x = seen["x"]  # the input of block 2: block 1's output after its map
    assert x[:, :3].abs().max() == 0  # (g) identical identities: zero effective maps, zero bias
    with torch.no_grad():
        enc.inserted_bias["1"].copy_(torch.randn(3, 16))
    enc(ids, attention_mask=mask)
    assert torch.equal(seen["x"][:, :3], enc.inserted_bias["1"].detach().expand(2, 3, 16))  # the bias alone
    a, _, c = enc.add_facet_tokens(ids, None, mask)
    block1 = enc.bert.layers[0](enc.bert.embeddings(a, None), enc.bert.key_mask(c))
    assert torch.equal(x[:, 3:], block1[:, 3:])  # text positions untouched


def test_without_mean_subtraction_eye_maps_leave_bert_unchanged():
    torch.manual_seed(0)
    cfg = MultiCLSConfig(k=3, insert_after=(1, 2), cls_facet=True, insert_init="eye", facet_ids=(2, 3))
    enc = MultiCLSEncoder(BertModel(TINY), cfg).double().eval()
    ids, mask = _inputs()
    a, _, c = enc.add_facet_tokens(ids, None, mask)
    ref = enc.bert(a, attention_mask=c).hidden
    assert torch.allclose(enc(ids, attention_mask=mask).hidden, ref, atol=1e-12)


def test_eq_5_7_similarity():
    torch.manual_seed(3)
    ca, cb = torch.randn(4, 3, 6), torch.randn(4, 3, 6)
    assert torch.allclose(pair_similarity(ca, cb, 0.0), (ca.sum(1) * cb.sum(1)).sum(-1), atol=1e-5)
    brute = torch.tensor([max(float(ca[b, i] @ cb[b, j]) for i in range(3) for j in range(3)) for b in range(4)])
    assert torch.allclose(pair_similarity(ca, cb, 1.0), brute.float(), atol=1e-5)
    a1, b1 = ca[:, :1], cb[:, :1]
    for lam in (0.0, 0.3, 1.0):  # K = 1: the plain dot product
        assert torch.allclose(pair_similarity(a1, b1, lam), (a1[:, 0] * b1[:, 0]).sum(-1), atol=1e-5)
    scaled = ca.clone()
    scaled[:, 0] *= 3
    assert not torch.allclose(pair_similarity(scaled, cb, 0.1), pair_similarity(ca, cb, 0.1))  # no normalisation


def test_eq_5_6_loss_and_its_gradient():
    torch.manual_seed(4)
    cq, cp, cn = (torch.randn(5, 3, 4) for _ in range(3))
    sp, sn = pair_similarity(cq, cp, 0.1), pair_similarity(cq, cn, 0.1)
    loss = triplet_loss(cq, cp, cn, 0.1)
    assert torch.allclose(loss, F.softplus(sn - sp).mean(), atol=1e-6)
    assert torch.allclose(loss, F.cross_entropy(torch.stack([sp, sn], 1), torch.zeros(5, dtype=torch.long)),
                          atol=1e-6)
    assert triplet_loss(cq, cp, cp, 0.1).item() == pytest.approx(math.log(2), abs=1e-6)
    s_pos = sp.detach().requires_grad_(True)
    F.softplus(sn.detach() - s_pos).sum().backward()
    assert torch.allclose(s_pos.grad, -torch.sigmoid(sn - sp).detach(), atol=1e-6)


def test_loss_mixing_agrees_with_logit_mixing_only_at_the_ends():
    torch.manual_seed(5)
    cq, cp, cn = (torch.randn(6, 3, 4) for _ in range(3))
    for lam in (0.0, 1.0):
        assert torch.allclose(triplet_loss(cq, cp, cn, lam, "loss"), triplet_loss(cq, cp, cn, lam, "logit"),
                              atol=1e-6)
    mixed = triplet_loss(cq, cp, cn, 0.1, "loss")
    expect = 0.9 * F.softplus(sum_dot(cq, cn) - sum_dot(cq, cp)).mean() + 0.1 * F.softplus(
        best_pair(cq, cn) - best_pair(cq, cp)).mean()
    assert torch.allclose(mixed, expect, atol=1e-6)
    assert not torch.allclose(mixed, triplet_loss(cq, cp, cn, 0.1, "logit"), atol=1e-4)
    with pytest.raises(ValueError, match="lambda_mode"):
        triplet_loss(cq, cp, cn, 0.1, "sum")


def test_specter_margin():
    q, p, n = torch.zeros(2, 3), torch.tensor([[3.0, 4, 0], [0, 0, 0]]), torch.tensor([[0.0, 0, 1], [0, 2, 0]])
    assert specter_margin(q, p, n).item() == pytest.approx(((5 - 1 + 1) + 0.0) / 2)


def test_the_paper_embedding_is_the_sum_of_facets_after_tanh():
    paper = PaperEncoder(_spe(k=3), "tanh")
    ids, mask = _inputs()
    f = paper(ids, attention_mask=mask)
    raw = paper.encoder.facet_states(paper.encoder(ids, attention_mask=mask).hidden)
    assert torch.equal(f, torch.tanh(raw)) and torch.equal(paper.encode(ids, attention_mask=mask), f.sum(1))
    assert f.std(0).max() > 0  # the output maps tell the facets apart from step 0
    with pytest.raises(ConfigError, match="cls_facet"):
        PaperEncoder(MultiCLSEncoder(BertModel(TINY), MultiCLSConfig(k=2)))


def test_parameter_count_of_the_inserted_maps_at_bert_base():
    with torch.device("meta"):
        bert = BertModel(BertConfig(d_model=768, n_layer=12, n_head=12, d_inner=3072))
        enc = MultiCLSEncoder(bert, MultiCLSConfig(k=3, insert_after=(4, 8, 12), cls_facet=True, insert_bias=True,
                                                   mean_subtract=True, insert_init="eye", facet_ids=(2, 3)))
    added = sum(p.numel() for p in enc.parameters()) - sum(p.numel() for p in bert.parameters())
    assert added == 5_315_328  # 3 layers x K x (D² + D)
    assert sum(p.numel() for p in enc.parameters()) == 114_797_568  # the thesis's 114.8M (bert-base vocabulary)
