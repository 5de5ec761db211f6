"""Multi-CLS BERT's exact mechanics (spec multi-cls-bert.md §14.1): facet tokens, inserted maps, Eqs. 5.2-5.4 and
their identities, the K = 1 reductions, parameter counts, ECE and the uncertainty overlap."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from genfeat.losses.classification import classification_loss
from genfeat.metrics.calibration import ece, facet_distributions, top_overlap, variance_score
from genfeat.models.bert import BertConfig, BertModel
from genfeat.models.multi_cls import (
    FacetPooler,
    MultiCLSClassifier,
    MultiCLSConfig,
    MultiCLSEncoder,
    MultiCLSPretrainer,
    default_insert_after,
    mcqt_loss,
    multi_facet_logits,
)
from genfeat.models.multi_cls.pretrain import mcqt_floor, positive_first

TINY = BertConfig(vocab_size=120, d_model=16, n_layer=4, n_head=2, d_inner=32, max_len=32, dropout=0.0,
                  attn_dropout=0.0)


def _encoder(k=3, dtype=torch.float64, **kw) -> MultiCLSEncoder:
    torch.manual_seed(0)
    return MultiCLSEncoder(BertModel(TINY), MultiCLSConfig(k=k, **kw)).to(dtype).eval()


def _inputs(b=2, t=8):
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(104, 120, (b, t), generator=g)
    ids[:, 0], ids[:, -1] = 101, 102
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    types = torch.zeros_like(ids)
    types[:, 4:] = 1
    return ids, types, mask


def test_facet_tokens_follow_cls():
    enc = _encoder(k=3)
    ids, types, mask = _inputs()
    a, b, c = enc.add_facet_tokens(ids, types, mask)
    assert a[0, :4].tolist() == [101, 1, 2, 3] and torch.equal(a[:, 4:], ids[:, 1:])
    assert b[:, 1:4].eq(0).all() and torch.equal(b[:, 4:], types[:, 1:])
    assert c[:, 1:4].eq(1).all() and torch.equal(c[:, 4:], mask[:, 1:])
    assert default_insert_after(12) == (4, 8) and default_insert_after(24) == (8, 16)
    assert default_insert_after(6) == (2, 4) and enc.insert_after == (1, 3)
    with pytest.raises(ValueError, match="encode texts to max_len - 3"):
        enc(torch.full((1, 30), 104))


def test_identity_maps_leave_bert_unchanged():
    enc = _encoder(k=3)
    with torch.no_grad():
        for w in enc.inserted.values():
            w.copy_(torch.eye(16).expand_as(w))
    ids, types, mask = _inputs()
    plain = enc.bert(*enc.add_facet_tokens(ids, types, mask)).hidden
    assert torch.equal(enc(ids, types, mask).hidden, plain)


def test_zero_maps_zero_the_facets_entering_the_next_block_only():
    enc = _encoder(k=3)
    l = enc.insert_after[0]
    with torch.no_grad():
        enc.inserted[str(l)].zero_()
    ids, types, mask = _inputs()
    seen = {}
    def grab(module, args):
        seen["x"] = args[0].clone()  # returns None: the input goes on unchanged

    enc.bert.layers[l].register_forward_pre_hook(grab)
    ref = enc.bert(*enc.add_facet_tokens(ids, types, mask), output_all_hidden=True).all_hidden[l]  # block l out
    enc(ids, types, mask)
    x = seen["x"]
    assert x[:, 1:4].eq(0).all()
    assert torch.equal(x[:, :1], ref[:, :1]) and torch.equal(x[:, 4:], ref[:, 4:])


def test_a_later_map_does_not_touch_earlier_blocks():
    enc = _encoder(k=2)
    ids, types, mask = _inputs()
    before = enc(ids, types, mask, output_all_hidden=True).all_hidden
    l = enc.insert_after[1]
    with torch.no_grad():
        enc.inserted[str(l)].add_(0.3)
    after = enc(ids, types, mask, output_all_hidden=True).all_hidden
    for i in range(l):
        assert torch.equal(before[i], after[i])
    assert torch.equal(before[l][:, 3:], after[l][:, 3:]) and not torch.equal(before[l][:, 1:3], after[l][:, 1:3])
    assert torch.equal(enc.facet_states(after[-1]), after[-1][:, 1:3])


# ----------------------------------------------------------------------------------------- Eq. 5.2
def test_multi_facet_logit_special_cases():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(3, 4, 8, generator=g, dtype=torch.float64), torch.randn(5, 4, 8, generator=g,
                                                                                dtype=torch.float64)
    one_x, one_y = x[:, :1], y[:, :1]
    cos = F.cosine_similarity(one_x[:, None, 0], one_y[None, :, 0], dim=-1)
    for lam in (0.0, 0.1, 1.0):
        torch.testing.assert_close(multi_facet_logits(one_x, one_y, lam), cos)
    best = torch.empty(3, 5, dtype=torch.float64)
    for a in range(3):
        for b in range(5):
            best[a, b] = max(F.cosine_similarity(x[a, i], y[b, j], dim=0) for i in range(4) for j in range(4))
    torch.testing.assert_close(multi_facet_logits(x, y, 1.0), best)
    torch.testing.assert_close(multi_facet_logits(x, y, 0.0),
                               F.cosine_similarity(x.sum(1)[:, None], y.sum(1)[None], dim=-1))
    scaled = x.clone()
    scaled[:, 2] *= 5.0  # a facet's norm: no effect on the max term, a larger weight in the sum
    torch.testing.assert_close(multi_facet_logits(scaled, y, 1.0), multi_facet_logits(x, y, 1.0))
    assert not torch.allclose(multi_facet_logits(scaled, y, 0.0), multi_facet_logits(x, y, 0.0))


# ----------------------------------------------------------------------------------------- Eq. 5.3
def test_mcqt_against_a_double_loop():
    g = torch.Generator().manual_seed(1)
    N, K, lam = 3, 2, 0.1
    c = torch.randn(3 * N, K, 6, generator=g, dtype=torch.float64)
    a, p, h = c[:N], c[N:2 * N], c[2 * N:]

    def logit(u, v):
        cos = [F.cosine_similarity(u[i], v[j], dim=0) for i in range(K) for j in range(K)]
        return lam * max(cos) + (1 - lam) * F.cosine_similarity(u.sum(0), v.sum(0), dim=0)

    def term(anchor, cands):
        return sum(-(logit(anchor[i], cands[i]) - torch.logsumexp(torch.stack([logit(anchor[i], s) for s in cands]),
                                                                  0)) for i in range(N)) / N
    want = term(a, torch.cat([p, h])) + term(h, torch.cat([p, a]))
    torch.testing.assert_close(mcqt_loss(c, lam), want)
    swapped = torch.cat([h, p, a])  # A and H trade roles: the same two terms
    torch.testing.assert_close(mcqt_loss(swapped, lam), want)
    two = mcqt_loss(c[:2 * N], lam, hard_negatives=False)
    torch.testing.assert_close(two, term(a, p))


def test_positive_first_splits_the_rows_as_the_loss_does():
    torch.manual_seed(0)
    a, h = torch.randn(4, 3, 8), torch.randn(4, 3, 8)
    # each positive is its anchor itself: it scores highest in both batch layouts, and every anchor is counted
    assert positive_first(torch.cat([a, a, h]), 0.5, hard_negatives=True) == (4, 4)
    assert positive_first(torch.cat([a, a]), 0.5, hard_negatives=False) == (4, 4)
    # the hard negative is the anchor itself, the positive random: only the rare anchor whose positive wins counts
    assert positive_first(torch.cat([a, h, a]), 0.5, hard_negatives=True)[0] == 0


def test_mcqt_bounds():
    N = 4
    same = torch.ones(3 * N, 3, 5)
    torch.testing.assert_close(mcqt_loss(same, 0.1), torch.tensor(2 * math.log(2 * N)))
    g = torch.Generator().manual_seed(3)
    for _ in range(5):
        assert mcqt_loss(torch.randn(3 * N, 3, 5, generator=g), 0.1) >= 2 * mcqt_floor(N) - 1e-6
    assert mcqt_floor(10) == pytest.approx(math.log(1 + 19 * math.exp(-2)))
    with pytest.raises(ValueError, match="split"):
        mcqt_loss(torch.ones(7, 2, 3), 0.1)


# ----------------------------------------------------------------------------------------- Eq. 5.4
def _pooler(k=5, d=6, agg="reparam", bias=False):
    torch.manual_seed(4)
    p = FacetPooler(k, d, agg, bias).double()
    with torch.no_grad():
        p.weight.normal_()
        if p.bias is not None:
            p.bias.normal_()
    return p


def test_reparam_identities():
    p = _pooler()
    g = torch.Generator().manual_seed(5)
    h = torch.randn(7, 5, 6, generator=g, dtype=torch.float64)
    W, hbar = p.weight, h.mean(1, keepdim=True)
    centred = torch.einsum("bki,koi->bo", h - hbar, W)  # (a) Σ W_k (h_k - h̄)
    torch.testing.assert_close(p(h), centred, atol=1e-12, rtol=0)
    shifted = _pooler()
    with torch.no_grad():
        shifted.weight.add_(torch.randn(6, 6, dtype=torch.float64))  # (b) a common matrix: no change
    torch.testing.assert_close(shifted(h), p(h), atol=1e-12, rtol=0)
    same = h[:, :1].expand_as(h)  # (c) collapsed states: zero (plus Σ b_k)
    torch.testing.assert_close(p(same), torch.zeros(7, 6, dtype=torch.float64), atol=1e-12, rtol=0)
    pb = _pooler(bias=True)
    torch.testing.assert_close(pb(same), pb.bias.sum(0).expand(7, 6), atol=1e-12, rtol=0)
    gout = torch.randn(7, 6, generator=g, dtype=torch.float64)  # (d) the gradient of W_m
    (p(h) * gout).sum().backward()
    want = torch.einsum("bo,bki->koi", gout, h - hbar)
    torch.testing.assert_close(p.weight.grad, want, atol=1e-12, rtol=0)
    torch.testing.assert_close(p.weight.grad.sum(0), torch.zeros(6, 6, dtype=torch.float64), atol=1e-12, rtol=0)
    assert p.effective_weights().sum(0).abs().max() < 1e-12


def test_one_sgd_step_keeps_the_mean_weight_and_separates_identical_facets():
    p = _pooler()
    with torch.no_grad():
        p.weight.copy_(p.weight[:1].expand_as(p.weight))  # identical W_k
    g = torch.Generator().manual_seed(6)
    h = torch.randn(4, 5, 6, generator=g, dtype=torch.float64)
    mean_before = p.weight.mean(0).clone()
    opt = torch.optim.SGD(p.parameters(), lr=0.1)
    (p(h) * torch.randn(4, 6, generator=g, dtype=torch.float64)).sum().backward()
    opt.step()
    torch.testing.assert_close(p.weight.mean(0), mean_before, atol=1e-12, rtol=0)  # (e)
    w = p.weight.detach().flatten(1)
    assert all(not torch.allclose(w[i], w[j]) for i in range(5) for j in range(i + 1, 5))
    s = _pooler(agg="sum")  # (f) sum aggregation from identical weights and identical states stays collapsed
    with torch.no_grad():
        s.weight.copy_(s.weight[:1].expand_as(s.weight))
    same = h[:, :1].expand_as(h)
    (s(same) * torch.randn(4, 6, generator=g, dtype=torch.float64)).sum().backward()
    torch.optim.SGD(s.parameters(), lr=0.1).step()
    assert all(torch.equal(s.weight[0], s.weight[k]) for k in range(1, 5))


def test_k1_reductions():
    p = _pooler(k=1, bias=True)
    h = torch.randn(3, 1, 6, dtype=torch.float64)
    torch.testing.assert_close(p(h), h[:, 0] @ p.weight[0].T + p.bias[0])  # W_{O,1} h + b, not zero


def test_added_parameters_at_bert_base_size():
    """§4.4: 3·K·D² extra (two inserted maps and W_O per facet) at bert-base-uncased's dimensions."""
    base = BertConfig(vocab_size=30522, d_model=768, n_layer=12, n_head=12, d_inner=3072)
    for k, extra in ((1, 1_769_472), (5, 8_847_360)):
        with torch.device("meta"):
            bert = BertModel(base)
            model = MultiCLSClassifier(MultiCLSEncoder(bert, MultiCLSConfig(k=k, pool_bias=False)), 2)
        n = sum(p.numel() for name, p in model.named_parameters() if not name.startswith(("encoder.bert.", "out.")))
        assert n == extra
        assert model.encoder.insert_after == (4, 8)


# ----------------------------------------------------------------------------------------- calibration
def test_ece_cases():
    y = np.arange(100) % 2
    perfect = np.eye(2)[y]
    assert ece(perfect, y) == 0.0
    p = np.tile([0.9, 0.1], (100, 1))
    right = np.zeros(100, dtype=int)
    right[90:] = 1  # 90 of 100 correct at confidence 0.9
    assert ece(p, right) == pytest.approx(0.0, abs=1e-9)
    right[80:] = 1
    assert ece(p, right) == pytest.approx(10.0)
    assert ece(p, right, bins="count") == pytest.approx(ece(p, right, bins="width"))


def test_uncertainty_overlap_and_scores():
    rng = np.random.default_rng(0)
    u = rng.random(50_000)
    assert top_overlap(u, u) == 100.0
    assert top_overlap(u, rng.random(50_000)) == pytest.approx(20.0, abs=1.0)
    members = torch.tensor([[[0.9, 0.1]], [[0.5, 0.5]]])
    torch.testing.assert_close(variance_score(members), torch.tensor([0.04]))
    emb = torch.randn(10, 3, 4)
    labels = torch.arange(10) % 2
    P = facet_distributions(emb, labels, 2)
    protos = torch.stack([emb[labels == c].mean(0) for c in (0, 1)])  # (C, K, D): Eq. D.2's q_{l,k}
    for k in range(3):
        torch.testing.assert_close(P[k], torch.softmax(emb[:, k] @ protos[:, k].T, -1))


# ----------------------------------------------------------------------------------------- end to end
def test_pretraining_losses_train_and_classifier_fits():
    torch.manual_seed(0)
    enc = MultiCLSEncoder(BertModel(TINY), MultiCLSConfig(k=3, insert_init="identity"))
    pre = MultiCLSPretrainer(enc)
    ids, types, mask = _inputs(b=6)
    labels = torch.full_like(ids, -100)
    labels[:, 2] = ids[:, 2]
    batch = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask, "mlm_labels": labels,
             "tfidf": torch.rand(ids.shape), "so_labels": torch.tensor([0, 1, 0, 1, 0, 1])}
    losses = pre.losses(batch)
    assert set(losses) == {"mlm", "tfidf", "so", "mcqt"} and all(torch.isfinite(v) for v in losses.values())
    assert losses["mcqt"] >= 2 * mcqt_floor(2) - 1e-6
    pre(**batch).backward()
    assert all(p.grad is not None for n, p in pre.named_parameters() if not n.startswith("encoder.bert.pooler"))
    clf = MultiCLSClassifier(enc, 2, dropout=0.0)
    clf.pooler.init_from_heads(pre.facet_heads.weight)  # fine-tuning starts from the pretraining heads' W_O
    assert torch.equal(clf.pooler.weight, pre.facet_heads.weight)
    y = (ids[:, 1] > 111).long()
    opt = torch.optim.Adam(clf.parameters(), lr=3e-3)
    for _ in range(60):
        loss = classification_loss(clf(ids, types, mask), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert (clf(ids, types, mask).argmax(-1) == y).all()
    assert clf.pooler.effective_weights().sum(0).abs().max() < 1e-5


def test_batch_groups_are_the_ranks_shares():
    """batch_groups 2 on 4 triples [A; P; H] (12 rows): the mean of the whole loss on the two halves of the
    triples, each as its own [A_g; P_g; H_g] batch (what each of 2 ranks holds), not the loss of the 12 rows."""
    from genfeat.models.multi_cls.pretrain import triple_groups

    torch.manual_seed(0)
    pre = MultiCLSPretrainer(MultiCLSEncoder(BertModel(TINY), MultiCLSConfig(k=2))).eval()
    ids, types, mask = _inputs(b=12)
    labels = torch.full_like(ids, -100)
    labels[:, 2] = ids[:, 2]
    labels[:5, 3] = ids[:5, 3]  # the groups hold different numbers of masked tokens
    batch = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask, "mlm_labels": labels,
             "tfidf": torch.rand(ids.shape), "so_labels": torch.arange(12) % 2}
    rows = [torch.tensor([0, 1, 4, 5, 8, 9]), torch.tensor([2, 3, 6, 7, 10, 11])]
    by_hand = [{k: v[r] for k, v in batch.items()} for r in rows]
    for got, want in zip(triple_groups(batch, 2, 3), by_hand, strict=True):
        assert all(torch.equal(got[k], want[k]) for k in batch)
    whole = pre(**batch)
    pre.batch_groups = 2
    halves = torch.stack([sum(pre.losses(b).values()) for b in by_hand]).mean()
    torch.testing.assert_close(pre(**batch), halves)
    assert not torch.allclose(pre(**batch), whole)
    with pytest.raises(ValueError, match="do not split"):
        triple_groups({k: v[:9] for k, v in batch.items()}, 2, 3)


def test_k1_without_inserted_maps_fine_tunes_as_plain_bert():
    """Spec §6.3: with K = 1 the pooler is c = W_{O,1} h_1 + b_1. Without inserted maps (the Table 5.2 ablation)
    Multi-CLS K = 1 is then plain BERT fine-tuning whose classifier reads the facet position through one linear
    map: three Adam steps of both give the same logits and weights (float64)."""
    torch.manual_seed(0)
    clf = MultiCLSClassifier(MultiCLSEncoder(BertModel(TINY), MultiCLSConfig(k=1, insert_after=())), 3,
                             dropout=0.0).double()
    bert = BertModel(TINY).double()
    bert.load_state_dict(clf.encoder.bert.state_dict())
    pool = torch.nn.Linear(16, 16).double()
    out = torch.nn.Linear(16, 3).double()
    with torch.no_grad():
        pool.weight.copy_(clf.pooler.weight[0])
        pool.bias.copy_(clf.pooler.bias[0])
        out.load_state_dict(clf.out.state_dict())
    ids, types, mask = _inputs()
    y = torch.tensor([0, 2])
    fx = clf.encoder.add_facet_tokens(ids, types, mask)  # [CLS] [unused0] text

    def plain() -> torch.Tensor:
        return out(pool(bert(*fx).hidden[:, 1]))

    opt_a = torch.optim.Adam([p for p in clf.parameters() if p.requires_grad], lr=1e-2)
    opt_b = torch.optim.Adam([p for m in (bert, pool, out) for p in m.parameters() if p.requires_grad], lr=1e-2)
    bert.pooler.requires_grad_(False)
    for _ in range(3):
        for opt, logits in ((opt_a, clf(ids, types, mask)), (opt_b, plain())):
            opt.zero_grad()
            F.cross_entropy(logits, y).backward()
            opt.step()
    torch.testing.assert_close(clf(ids, types, mask), plain())
    torch.testing.assert_close(clf.pooler.weight[0], pool.weight)
    for (name, a), b in zip(clf.encoder.bert.state_dict().items(), bert.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, msg=name)
