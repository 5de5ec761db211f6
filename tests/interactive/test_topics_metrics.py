"""Topics (Eq. 4.1), their metrics (Eq. 4.2, Dist-n, hits, BLEU-2 / Self-BLEU), the baselines' selection, the
future-word alignment and the hint sampler (spec interactive-generation.md §9 tests 1, 2, 8, 10-13, 16, 17)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from genfeat.analysis.topic_baselines import kmeans_local, select_global
from genfeat.data.future_words import next_content_words, token_starts
from genfeat.data.topic_chain import TEMPLATE, TopicChain, TopicChainConfig
from genfeat.metrics.topics import bleu2, distinct_n, mean_se, self_bleu, sim, sim_diff, topic_hits, topic_judgements
from genfeat.models.interactive.topics import nearest_words, topic_vectors
from genfeat.tasks.conditional_lm import HintSampler


def _table(seed=0, v=30, e=8):
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(v, e, generator=g), dim=1)


def test_topic_vector_is_the_normalised_cosine_weighted_sum():
    table = _table()
    c = torch.randn(3, 8, generator=torch.Generator().manual_seed(1)) * 3
    t, ids = topic_vectors(c, table, 4)
    cos = F.normalize(c, dim=1) @ table.T
    for k in range(3):
        top = sorted(range(30), key=lambda j: (-float(cos[k, j]), j))[:4]
        assert ids[k].tolist() == top
        want = sum(float(cos[k, j]) * table[j] for j in top)
        torch.testing.assert_close(t[k], want / want.norm())
    torch.testing.assert_close(t.norm(dim=1), torch.ones(3))
    t1, ids1 = topic_vectors(c, table, 1)  # M = 1: the nearest word's own vector
    torch.testing.assert_close(t1, table[ids1[:, 0]])


def test_nearest_words_exclude_and_break_ties_by_id():
    table = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    ids, cos = nearest_words(torch.tensor([[2.0, 0.0]]), table, 2)
    assert ids.tolist() == [[0, 1]] and torch.allclose(cos, torch.ones(1, 2))
    ids, _ = nearest_words(torch.tensor([[2.0, 0.0]]), table, 2, exclude=torch.tensor([True, False, False, False]))
    assert ids.tolist() == [[1, 3]]
    with pytest.raises(ValueError, match="candidates"):
        nearest_words(torch.tensor([[1.0, 0.0]]), table, 4, exclude=torch.tensor([True, False, False, False]))


def test_sim_and_sim_diff():
    """Test 10: T = {e1, e2}, Ȳ = {e1, e3} -> mean × 100 = 50; Sim Diff = Sim(Ȳ) - Sim(X̄)."""
    e = np.eye(4)
    assert sim(e[[0, 1]], e[[0, 2]]) == pytest.approx(50.0)
    assert sim_diff(e[[0, 1]], e[[0, 2]], e[[0, 1]]) == pytest.approx(50.0 - 100.0)


def test_distinct_hits_and_bleu():
    """Tests 11-13."""
    assert distinct_n([["a", "b", "a", "b"]], 1) == pytest.approx(2 / 4)
    assert distinct_n([["a", "b", "a", "b"]], 2) == pytest.approx(2 / 3)
    assert topic_hits(["cat", "cat", "dog"], [["cat", "lion"], ["dog"]]) == {"token": 3, "word": 2, "topic": 2}
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    ref, hyp = "the cat sat on the mat".split(), "the cat is on a mat".split()
    assert bleu2([ref], hyp) == pytest.approx(sentence_bleu([ref], hyp, weights=(0.5, 0.5),
                                                             smoothing_function=SmoothingFunction().method3))
    gens = [s.split() for s in ("a b c d", "a b x y", "q r s t")]
    assert self_bleu(gens) == pytest.approx(np.mean([bleu2([gens[1], gens[2]], gens[0]),
                                                     bleu2([gens[0], gens[2]], gens[1]),
                                                     bleu2([gens[0], gens[1]], gens[2])]))


def test_global_selection_and_local_kmeans():
    """Test 16: the K topics of highest cosine to the normalised prompt sum; k-means local pads a short prompt."""
    topics = np.eye(4)
    prompt = np.array([[0.9, 0.1, 0, 0], [0.7, 0.0, 0.3, 0]])
    assert select_global(topics, prompt, 2).tolist() == [0, 2]
    c = kmeans_local(np.eye(3)[[0, 0, 1]], 3)  # two distinct words, K = 3: resampled to fill the clusters
    assert c.shape == (3, 3)
    assert {tuple(np.round(r, 6)) for r in c} <= {(1.0, 0.0, 0.0), (0.0, 1.0, 0.0)}


def test_future_words_alignment():
    """Test 17: each position's future = the first O content words starting after it (a hand-built BPE case).

    text "The unbelievable zombies attacked" in BPE pieces: The | un | bel | iev | able | zomb | ies | attacked;
    words start at tokens 0, 1, 5, 7; 'The' is a stop word."""
    offsets = np.array([[0, 3], [3, 6], [6, 9], [9, 12], [12, 16], [16, 22], [22, 25], [25, 34]])
    char_starts = np.array([0, 4, 17, 26])
    starts = token_starts(offsets, char_starts)
    assert starts.tolist() == [0, 1, 5, 7]
    rows = np.array([-1, 10, 11, 12])
    fut = next_content_words(starts, rows, 8, 2)
    assert fut.tolist() == [[10, 11], [11, 12], [11, 12], [11, 12], [11, 12], [12, -1], [12, -1], [-1, -1]]
    first = np.where(fut[:, 0] >= 0, fut[:, 0], 99)
    assert (np.diff(first) >= 0).all()  # monotone


def test_hint_sampler_draws_only_future_words():
    """Test 8: points distinct, sorted, in [0, L - 20); n in 0..10; hints only from each point's own O future words,
    with replacement."""
    L, O = 40, 25
    table = _table(v=200)
    rows = next_content_words(np.arange(L + 1), np.arange(L + 1) + 100, L, O)  # word i has row 100 + i
    future = torch.as_tensor(rows)[None].repeat(16, 1, 1)
    s = HintSampler(table, seed=0)
    seen_n, dup = set(), False
    for _ in range(20):
        ins = s(future, torch.arange(16))
        for b in range(16):
            used = ins.locations[b] >= 0
            loc = ins.locations[b][used]
            points = loc.unique()
            assert len(points) <= 5 and bool((points < L - 20).all()) and bool((points >= 0).all())
            assert torch.equal(loc, loc.sort().values)
            for p in points.tolist():
                vec = ins.vectors[b][used][loc == p]
                seen_n.add(len(vec))
                word = (vec @ table.T).argmax(1) - 100  # the token index each hint came from
                assert bool((word > p).all()) and bool((word <= p + O).all())
                dup |= len(word.unique()) < len(word)
    assert max(seen_n) <= 10 and dup and len(seen_n) > 5
    a, b = HintSampler(table, seed=0), HintSampler(table, seed=0)  # a row's hints do not depend on its batch
    whole = a(future[:4], torch.tensor([3, 4, 5, 6]))
    half = b(future[:2], torch.tensor([5, 6]))
    torch.testing.assert_close(half.vectors[:, : half.locations.size(1)], whole.vectors[2:, : half.locations.size(1)])
    assert a.state_dict() == {"calls": 1}


def test_topic_chain_corpus():
    c = TopicChain(TopicChainConfig(n_docs=50))
    assert c.docs.shape == (50, 5 * len(TEMPLATE))
    np.testing.assert_allclose(c.centres @ c.centres.T, np.eye(12), atol=1e-5)
    assert (c.successors != np.arange(12)[:, None]).all() and (c.successors[:, 0] != c.successors[:, 1]).all()
    for d in range(50):  # every sentence's content words are its topic's, and each next topic a successor
        topics = c.doc_topics[d]
        for s in range(5):
            sent = c.docs[d, 8 * s: 8 * (s + 1)]
            assert [c.topic_of[w] >= 0 for w in sent] == [ch == "C" for ch in TEMPLATE]
            assert set(c.topic_of[sent[~c.is_stop[sent]]]) == {topics[s]}
            if s:
                assert topics[s] in c.successors[topics[s - 1]]
    assert c.words[c.docs[0, 7]] == "."


def test_human_judgement_counts_and_their_complement_form():
    # the thesis's example: topics A, B, C; A likely, A and B promoting
    assert topic_judgements([0], [0, 1], k=3) == {"L": 1, "TP": 2, "L&TP": 1}
    # the reference's form: the worker marks what is NOT likely (B, C) and NOT promoting (C) among 3
    assert topic_judgements([1, 2], [2], k=3, complement=True) == {"L": 1, "TP": 2, "L&TP": 1}
    assert topic_judgements([], [], k=10, complement=True) == {"L": 10, "TP": 10, "L&TP": 10}
    with pytest.raises(ValueError, match="in \\[0, 3\\)"):
        topic_judgements([3], [], k=3)
    m, se = mean_se([1.0, 2.0, 6.0])
    assert m == pytest.approx(3.0) and se == pytest.approx(np.std([1, 2, 6], ddof=1) / np.sqrt(3))
