"""The sequence -> K facets network (spec multi-facet-embedding.md §5, §11 test 19) and NNSC training on a
synthetic corpus whose neighbour words come from clusters named by the input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genfeat.losses.nnsc import nnsc_loss, rotated_negatives
from genfeat.models.facets import FacetConfig, FacetModel

CFG = FacetConfig(vocab_size=40, d_model=16, d_target=8, k=3, n_enc=2, n_dec=2, n_head=2, d_inner=32, max_len=12,
                  dropout=0.0)
LSTM = {"encoder": "lstm", "decoder": "lstm", "n_enc": 1, "n_dec": 1}
BOW = {"encoder": "bow", "decoder": "linear"}
ARCHS = {"transformer": {}, "lstm": LSTM, "bow": BOW}


def test_shapes_distinct_facets_and_phrase_mode():
    torch.manual_seed(0)
    m = FacetModel(CFG).eval()
    ids = torch.randint(1, 40, (4, 7))
    enc = m.encode(ids)
    out = m(ids)
    assert enc.states.shape == (4, 7, 16) and enc.pooled.shape == (4, 16) and out.shape == (4, 3, 8)
    assert not torch.allclose(out[:, 0], out[:, 1])  # distinct input maps: distinct facets at init
    phrase = FacetModel(FacetConfig(**{**CFG.__dict__, "cross_attention": False}))
    assert not any(".kv." in n or ".q." in n for n, _ in phrase.named_parameters())
    assert any(".kv." in n for n, _ in m.named_parameters())
    lstm = FacetModel(FacetConfig(**{**CFG.__dict__, **LSTM}))
    assert lstm(ids).shape == (4, 3, 8)
    bow = FacetModel(FacetConfig(**{**CFG.__dict__, **BOW})).eval()
    assert bow(ids).shape == (4, 3, 8) and not hasattr(bow.decoder, "layers")
    torch.testing.assert_close(bow(ids), bow(ids.flip(1)))  # order-free


@pytest.mark.parametrize("arch", list(ARCHS))
def test_left_padding_changes_nothing(arch):
    torch.manual_seed(0)
    m = FacetModel(FacetConfig(**{**CFG.__dict__, **ARCHS[arch]})).eval()
    ids = torch.randint(1, 40, (1, 5))
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), ids], 1)
    torch.testing.assert_close(m(padded), m(ids), atol=1e-5, rtol=1e-5)


def test_init_embedding_rows_are_scaled_unit_vectors():
    table = torch.randn(40, 16) * 5
    m = FacetModel(CFG, init_embedding=table)
    norms = m.encoder.tok.weight.detach().norm(dim=1)
    torch.testing.assert_close(norms[1:], torch.full((39,), 4.0))
    assert float(norms[CFG.pad_id]) == 0.0  # the padding row stays zero
    with pytest.raises(ValueError, match="init_embedding"):
        FacetModel(CFG, init_embedding=torch.randn(39, 16))


def test_nnsc_training_learns_the_clusters_of_each_input():
    """Token a in 1..6 names two of six clusters of unit target vectors; the neighbour words of a sequence are drawn
    from the clusters its tokens name. After training, positives are rebuilt better than rotated negatives."""
    g = torch.Generator().manual_seed(0)
    E = 8
    centres = torch.nn.functional.normalize(torch.randn(6, E, generator=g), dim=1)
    names = {a: (a - 1, a % 6) for a in range(1, 7)}

    def batch(n=16):
        ids = torch.randint(1, 7, (n, 2), generator=g)
        W = torch.empty(n, E, 6)
        for b in range(n):
            cl = [c for a in ids[b].tolist() for c in names[a]]
            picks = torch.tensor(cl)[torch.randint(0, len(cl), (6,), generator=g)]
            W[b] = torch.nn.functional.normalize(centres[picks] + 0.1 * torch.randn(6, E, generator=g), dim=1).T
        eos = torch.full((n, 1), 7)
        return torch.cat([ids, eos], 1), W, torch.ones(n, 6, dtype=torch.bool)

    torch.manual_seed(0)
    m = FacetModel(FacetConfig(vocab_size=8, d_model=16, d_target=E, k=4, n_enc=1, n_dec=1, n_head=2, d_inner=32,
                               max_len=4, dropout=0.0))
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    losses = []
    for _ in range(80):
        ids, W, mask = batch()
        Wn, mn = rotated_negatives(W, mask, g)
        loss, parts = nnsc_loss(m(ids).transpose(1, 2), W, mask, Wn, mn, 0.4, iters=100)  # F: (B, E, K)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-15:]) < np.mean(losses[:15]) - 0.1
    assert parts["er_pos"] < parts["er_neg"] and parts["zero_columns"] < 0.5


def test_sentence_facets_batches_like_one_sentence_at_a_time():
    """`recipes.facets.sentence_facets` (left-padded batches) gives each sentence the unit facets of its own call."""
    from genfeat.data.facets import EOS, PAD, UNK, tokenize
    from genfeat.models.facets.inference import sentence_facets

    torch.manual_seed(0)
    m = FacetModel(CFG).eval()
    vocab = [PAD, UNK, EOS] + [f"w{i}" for i in range(37)]
    sents = ["w1 w2 w3.", "w4", "w5 w6 unknown w7 w8 w9 w10 w11 w12 w13 w14 w15 w16 w17"]
    got = sentence_facets(m, vocab, sents, batch=2)
    for s, f in zip(sents, got, strict=True):
        ids = [vocab.index(t) if t in vocab else 1 for t in tokenize(s)][: CFG.max_len - 1] + [2]  # "." is UNK
        with torch.no_grad():
            one = torch.nn.functional.normalize(m(torch.tensor([ids]))[0], dim=-1).numpy()
        np.testing.assert_allclose(f, one, atol=1e-5)
        np.testing.assert_allclose(np.linalg.norm(f, axis=1), 1.0, atol=1e-6)
