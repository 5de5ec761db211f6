"""The synthetic two-topic corpus (spec multi-facet-embedding.md §10.1) and `genfeat run facets --preset
synthetic`: the geometry, what a sentence and its neighbour bag contain, and a short run whose facets load back."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np

from genfeat.data.facets import EOS, PAD, UNK
from genfeat.data.stop_words import stop_list
from genfeat.data.topic_corpus import INCIDENTAL, STOP, STOPWORD, topic_corpus, topic_examples


def test_geometry():
    c = topic_corpus(3)
    assert c.vectors.shape == (8 * 15 + 60 + 10, 48) and len(c.words) == len(set(c.words)) == len(c.vectors)
    np.testing.assert_allclose(c.centres @ c.centres.T, np.eye(8), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(c.vectors, axis=1), 1.0, atol=1e-12)
    within = [(c.vectors[c.members(t)] @ c.vectors[c.members(t)].T)[np.triu_indices(15, 1)].mean() for t in range(8)]
    assert 0.55 < np.mean(within) < 0.75  # the spec: about 0.65
    to_centre = np.array([c.vectors[c.members(t)] @ c.centres[t] for t in range(8)])
    assert to_centre.min() > 0.6
    assert set(STOP) <= stop_list() and [c.words[i] for i in np.flatnonzero(c.topic == STOPWORD)] == list(STOP)
    assert np.array_equal(topic_corpus(3).vectors, c.vectors) and not np.array_equal(topic_corpus(4).vectors, c.vectors)


def test_sentences_and_neighbour_bags():
    c = topic_corpus(0)
    rng = np.random.default_rng(0)
    pairs = c.random_pairs(200, rng)
    assert (pairs[:, 0] != pairs[:, 1]).all() and set(pairs.ravel()) == set(range(8))
    index = {w: i for i, w in enumerate(c.words)}
    for a, b in pairs[:50]:
        words, bag = c.sentence((a, b), rng)
        kinds = Counter(int(c.topic[index[w]]) for w in words)
        assert kinds == {a: 3, b: 3, INCIDENTAL: 3, STOPWORD: 3} and len(set(words)) == 12
        assert Counter(int(c.topic[index[w]]) for w in bag) == {a: 5, b: 5} and len(set(bag)) == 10
    p = c.unigram(2000, 0)
    assert abs(p.sum() - 1) < 1e-12
    ratio = p[c.topic == STOPWORD].mean() / p[c.topic == INCIDENTAL].mean()
    assert 4.5 < ratio < 7.5  # stop words about 6x as frequent as the others


def test_examples_ids():
    c = topic_corpus(1)
    vocab = [PAD, UNK, EOS, *c.words]
    ex, pairs = topic_examples(c, vocab, 20, seed=5)
    assert len(ex) == 20 and pairs.shape == (20, 2)
    for x, t, (a, b) in zip(ex.inputs, ex.targets, pairs, strict=True):
        assert len(x) == 13 and x[-1] == vocab.index(EOS) and x[:-1].min() >= 3
        assert sorted(set(c.topic[t])) == sorted({a, b})
    again, _ = topic_examples(c, vocab, 20, seed=5)
    assert all(np.array_equal(u, v) for u, v in zip(ex.inputs, again.inputs, strict=True))


def test_synthetic_preset_runs_and_loads(tmp_path):
    from genfeat.cli import main
    from genfeat.models.facets.inference import load_run, sentence_facets

    out = tmp_path / "syn"
    assert main(["run", "facets", "--preset", "synthetic", "--model.n_enc", "1", "--model.n_dec", "1",
                 "--train.max_steps", "6", "--train.eval_every", "3", "--data.split_seed", "2", "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["k"] == 3 and s["train_sentences"] == 16_000 and 0 <= s["valid_er_pos"] <= 1.0 + 1e-6
    model, vocab, words, table = load_run(out)
    np.testing.assert_allclose(table.numpy(), topic_corpus(2).vectors, atol=1e-6)
    f = sentence_facets(model, vocab, ["t0w1 t3w2 x5 the"])
    assert f[0].shape == (3, 48)
