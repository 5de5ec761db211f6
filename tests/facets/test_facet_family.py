"""The facet network as a family the next systems build on: a decoder separable from its encoder (a pretrained
GPT's or BERT's states), encoders and decoders chosen independently, slot masks for rows of different K, and the
NNSC loss's facet masks, per-word weights and Eq. 3.8's smallest-residual k-means."""

from __future__ import annotations

import itertools

import pytest
import torch

from genfeat.losses.nnsc import mean_error, nnsc_coefficients, nnsc_loss
from genfeat.models.bert import BertConfig, BertModel
from genfeat.models.facets import BackboneEncoder, FacetConfig, FacetModel
from genfeat.models.gpt import GPTConfig, GPTDecoder

CFG = FacetConfig(vocab_size=40, d_model=16, d_target=8, k=3, n_enc=1, n_dec=1, n_head=2, d_inner=32, max_len=12,
                  dropout=0.0)


def _cfg(**kw) -> FacetConfig:
    return FacetConfig(**{**CFG.__dict__, **kw})


@pytest.mark.parametrize("encoder,decoder", list(itertools.product(["transformer", "lstm", "bow"],
                                                                   ["transformer", "lstm", "linear"])))
def test_every_encoder_feeds_every_decoder(encoder, decoder):
    torch.manual_seed(0)
    m = FacetModel(_cfg(encoder=encoder, decoder=decoder)).eval()
    ids = torch.randint(1, 40, (2, 6))
    out = m.run(ids)
    assert out.slots.shape == out.hidden.shape == (2, 3, 16) and out.facets.shape == (2, 3, 8)
    assert torch.equal(out.facets, m(ids))


def test_a_pretrained_gpt_or_bert_is_the_encoder():
    """The decoder reads a GPT decoder's states (pooled at the last token) or a BERT's (at [CLS], padding masked),
    of another width than its own (the slot maps and the cross-attention memory are projected)."""
    torch.manual_seed(0)
    gpt = GPTDecoder(GPTConfig(vocab_size=40, d_model=24, n_layer=1, n_head=2, max_len=16, dropout=0.0))
    m = FacetModel(CFG, encoder=BackboneEncoder.from_gpt(gpt, pad_id=0)).eval()
    ids = torch.randint(1, 40, (2, 6))
    assert m(ids).shape == (2, 3, 8) and m.decoder.slots[0].in_features == 24
    assert torch.equal(m.encode(ids).pooled, gpt(ids).hidden[:, -1])
    bert = BertModel(BertConfig(vocab_size=40, d_model=20, n_layer=1, n_head=2, d_inner=32, max_len=16, dropout=0.0,
                                attn_dropout=0.0))
    m = FacetModel(CFG, encoder=BackboneEncoder.from_bert(bert, pad_id=0)).eval()
    padded = torch.cat([ids, torch.zeros(2, 3, dtype=torch.long)], 1)  # right padding, as BERT takes it
    torch.testing.assert_close(m(padded), m(ids), atol=1e-5, rtol=1e-5)
    assert torch.equal(m.encode(ids).pooled, bert(ids).hidden[:, 0])
    m(ids).sum().backward()
    assert bert.layers[0].ffn[0].weight.grad is not None  # the backbone trains with the decoder


@pytest.mark.parametrize("decoder", ["transformer", "lstm", "linear"])
def test_slot_masks_give_rows_their_own_k(decoder):
    """A row with 2 of 3 slots: its third facet is 0, and its first two are what a K = 2 network with the same
    weights gives (the masked slot is never read)."""
    torch.manual_seed(0)
    m3 = FacetModel(_cfg(decoder=decoder)).eval()
    m2 = FacetModel(_cfg(decoder=decoder, k=2)).eval()
    state = {k: v for k, v in m3.state_dict().items() if not k.startswith("decoder.slots.2.")}
    m2.load_state_dict(state)
    ids = torch.randint(1, 40, (2, 6))
    mask = torch.tensor([[True, True, False], [True, True, True]])
    out = m3(ids, mask)
    assert torch.equal(out[0, 2], torch.zeros(8)) and out[1, 2].abs().sum() > 0
    torch.testing.assert_close(out[0, :2], m2(ids[:1])[0], atol=1e-6, rtol=1e-6)
    if decoder == "transformer":  # without the mask the first two slots attend to the third
        assert not torch.allclose(m3(ids)[0, :2], out[0, :2])
    with pytest.raises(ValueError, match="slot_mask"):
        m3(ids, torch.zeros(2, 3, dtype=torch.bool))


def test_the_lstm_decoder_takes_prefix_masks_only():
    m = FacetModel(_cfg(decoder="lstm")).eval()
    with pytest.raises(ValueError, match="prefix"):
        m(torch.randint(1, 40, (1, 5)), torch.tensor([[True, False, True]]))


def test_kmeans_min_dist_is_eq_3_8_and_differs_from_max_cos():
    """w = e0; a short facet 0.1·e0 (cosine 1, η clips at 1: residual 0.81) and a long one 2·(0.8, 0.6) (cosine
    0.8, η = 0.4: residual 0.36). max_cos takes the short facet, Eq. 3.8 the long one; and on random problems
    min_dist equals the brute force over k and a fine grid of η in [0, 1]."""
    e0, e1 = torch.eye(3, dtype=torch.float64)[:2]
    F = torch.stack([0.1 * e0, 2 * (0.8 * e0 + 0.6 * e1)], 1)[None]  # (1, E, K)
    w = e0[None, :, None]
    assert nnsc_coefficients(F, w, 0.4, "kmeans")[0, :, 0].tolist() == pytest.approx([1.0, 0.0])
    assert nnsc_coefficients(F, w, 0.4, "kmeans", assign="min_dist")[0, :, 0].tolist() == pytest.approx([0.0, 0.4])
    g = torch.Generator().manual_seed(0)
    F = torch.randn(4, 6, 3, generator=g, dtype=torch.float64) * torch.rand(4, 1, 3, generator=g) * 2
    W = torch.nn.functional.normalize(torch.randn(4, 6, 5, generator=g, dtype=torch.float64), dim=1)
    M = nnsc_coefficients(F, W, 0.4, "kmeans", assign="min_dist")
    got = (F @ M - W).pow(2).sum(1)  # (B, N) residuals
    eta = torch.linspace(0, 1, 20001, dtype=torch.float64)
    brute = (W[:, :, None, :, None] - eta * F[:, :, :, None, None]).pow(2).sum(1).amin(-1).amin(1)  # (B, N)
    torch.testing.assert_close(got, brute, atol=1e-7, rtol=0)
    assert ((M > 0).sum(1) <= 1).all()


@pytest.mark.parametrize("method", ["pgd", "rmsprop", "kmeans"])
def test_a_masked_facet_rebuilds_nothing(method):
    """facet_mask: the coefficients of a missing facet are 0 whatever its value (even after one RMSprop step from
    its random start), it fits nothing, and the loss is that of the row's real facets alone."""
    g = torch.Generator().manual_seed(1)
    F = torch.randn(2, 6, 3, generator=g, dtype=torch.float64)
    W = torch.nn.functional.normalize(torch.randn(2, 6, 4, generator=g, dtype=torch.float64), dim=1)
    F[0, :, 2] = W[0, :, 0] * 0.9  # the missing facet would fit word 0 well
    fm = torch.tensor([[True, True, False], [True, True, True]])
    kw = dict(generator=torch.Generator().manual_seed(0))
    M = nnsc_coefficients(F, W, 0.4, method, facet_mask=fm, **kw)
    assert torch.equal(M[0, 2], torch.zeros(4))
    assert torch.equal(nnsc_coefficients(F, W, 0.4, method, iters=1, facet_mask=fm, **kw)[0, 2], torch.zeros(4))
    alone = nnsc_coefficients(F[:1, :, :2], W[:1], 0.4, method, **kw)
    if method != "rmsprop":  # rmsprop's random start is drawn with another shape
        torch.testing.assert_close(M[0, :2], alone[0], atol=1e-6, rtol=0)
    mask = torch.ones(2, 4, dtype=torch.bool)
    loss, _ = nnsc_loss(F, W, mask, W.flip(0), mask, 0.4, "pgd", facet_mask=fm)
    loss2, _ = nnsc_loss(F * fm[:, None, :], W, mask, W.flip(0), mask, 0.4, "pgd")
    torch.testing.assert_close(loss, loss2)


def test_word_weights_scale_each_error():
    g = torch.Generator().manual_seed(2)
    F = torch.randn(2, 6, 3, generator=g, dtype=torch.float64)
    W = torch.nn.functional.normalize(torch.randn(2, 6, 4, generator=g, dtype=torch.float64), dim=1)
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    M = nnsc_coefficients(F, W, 0.4, "pgd", mask)
    err = (F @ M - W).pow(2).sum(1) * mask
    r = torch.tensor([[2.0, 0.0, 1.0, 5.0], [1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(mean_error(F, M, W, mask, r), (err * r).sum(1) / mask.sum(1))
    torch.testing.assert_close(mean_error(F, M, W, mask, torch.ones_like(r)), mean_error(F, M, W, mask))
    ones, _ = nnsc_loss(F, W, mask, W.flip(0), mask, 0.4, weights=torch.ones_like(r), weights_neg=torch.ones_like(r))
    plain, _ = nnsc_loss(F, W, mask, W.flip(0), mask, 0.4)
    torch.testing.assert_close(ones, plain)
    half, _ = nnsc_loss(F, W, mask, W.flip(0), mask, 0.4, weights=0.5 * torch.ones_like(r), neg_weight=0.0)
    torch.testing.assert_close(half, 0.5 * nnsc_loss(F, W, mask, W.flip(0), mask, 0.4, neg_weight=0.0)[0])
    zero = torch.zeros_like(r)
    neg1, _ = nnsc_loss(F, W, mask, W.flip(0), mask, 0.4, weights=zero, weights_neg=torch.ones_like(r))
    neg2, _ = nnsc_loss(F, W, mask, W.flip(0), mask, 0.4, weights=zero, weights_neg=2 * torch.ones_like(r))
    assert neg1 < 0 and torch.allclose(neg2, 2 * neg1)
