"""The wiring of the multi-facet system, each piece on its own (thesis C §3.2; spec multi-facet-embedding.md §3-§7):
a recipe run that must learn, the objective's negatives, table and evaluation solver, the batches, the network's
cross-attention, facet norms and initialisation, and the scores the results pages are built from. Each test is
aimed at one way the pieces can be wired wrong while every shape still fits."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from genfeat.analysis import facet_scores as S
from genfeat.data.facets import build_vocab, collate, sentence_examples, target_composition, tokenize
from genfeat.losses.nnsc import NNSCConfig, NNSCObjective, nnsc_coefficients, nnsc_loss, rotated_negatives
from genfeat.models.facets import Encoded, FacetConfig, FacetModel

CFG = FacetConfig(vocab_size=40, d_model=16, d_target=8, k=3, n_enc=1, n_dec=2, n_head=2, d_inner=32, max_len=12,
                  dropout=0.0)


def test_a_short_synthetic_run_learns(tmp_path):
    """200 steps of the spec's two-topic corpus: the held-out positives are rebuilt clearly better than the
    rotated negatives (a run that learns nothing has the two errors equal, and valid_loss = er_pos - er_neg
    still holds)."""
    from genfeat.cli import main

    assert main(["run", "facets", "--preset", "synthetic", "--train.max_steps", "200", "--train.eval_every", "200",
                 "--out", str(tmp_path / "s")]) == 0
    s = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert s["valid_er_neg"] - s["valid_er_pos"] > 0.1 and s["valid_er_pos"] < 0.75, s
    assert s["train_targets"]["punctuation_share"] == 0 and s["train_targets"]["targets"] > 1000


def _batch(seed=0, B=6, N=5, V=30, E=8):
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(1, N + 1, (B,), generator=g)
    mask = torch.arange(N)[None] < lens[:, None]
    return {"input_ids": torch.randint(3, 40, (B, 7), generator=g),
            "targets": torch.randint(0, V, (B, N), generator=g) * mask, "target_mask": mask}, \
        torch.randn(V, E, generator=g)


def test_objective_unit_normalises_its_table():
    torch.manual_seed(0)
    model = FacetModel(CFG).eval()
    batch, table = _batch()
    a, _, pa = NNSCObjective(table, 0.4, "pgd", 500, seed=1)(model, batch)
    b, _, pb = NNSCObjective(table * 7.0, 0.4, "pgd", 500, seed=1)(model, batch)
    assert float(a) == pytest.approx(float(b), abs=1e-6) and pa["er_pos"] == pytest.approx(pb["er_pos"], abs=1e-6)
    assert NNSCObjective(table * 7.0, 0.4, "pgd", 10, 0).table.norm(dim=1).sub(1).abs().max() < 1e-6


def test_objective_evaluates_with_the_exact_e_step():
    """exact=True: the errors of the exact optimum on the same rotated negatives, whatever the training solver."""
    torch.manual_seed(0)
    model = FacetModel(CFG).eval()
    batch, table = _batch(1)
    _, n, parts = NNSCObjective(table, 0.4, "rmsprop", 60, seed=5)(model, batch, exact=True)
    unit = torch.nn.functional.normalize(table, dim=1)
    F = model(batch["input_ids"]).transpose(1, 2)
    W = unit[batch["targets"]].transpose(1, 2)
    Wn, mn = rotated_negatives(W, batch["target_mask"], torch.Generator().manual_seed(5))
    _, ref = nnsc_loss(F, W, batch["target_mask"], Wn, mn, 0.4, "pgd", 20000)
    assert n == int(batch["target_mask"].sum())
    assert parts["er_pos"] == pytest.approx(ref["er_pos"], abs=2e-5)
    assert parts["er_neg"] == pytest.approx(ref["er_neg"], abs=2e-5)


def test_rotated_negatives_carry_their_own_mask():
    B, N = 5, 4
    W = torch.arange(float(B))[:, None, None].expand(B, 2, N).clone()
    mask = torch.arange(N)[None] < torch.tensor([1, 2, 3, 4, 2])[:, None]
    for seed in range(8):
        Wn, mn = rotated_negatives(W, mask, torch.Generator().manual_seed(seed))
        src = Wn[:, 0, 0].long()  # which example each negative came from
        assert (src != torch.arange(B)).all() and len(set(((src - torch.arange(B)) % B).tolist())) == 1
        assert torch.equal(mn, mask[src])


def test_collate_keeps_every_target_and_left_pads_inputs():
    inputs = [np.array([5, 6, 2]), np.array([7, 2])]
    targets = [np.array([3, 1, 4]), np.array([9])]
    b = collate(inputs, targets)
    assert b["input_ids"].tolist() == [[5, 6, 2], [0, 7, 2]]
    assert b["targets"][b["target_mask"]].tolist() == [3, 1, 4, 9]
    assert b["target_mask"].sum(1).tolist() == [3, 1]


def test_sentence_length_cap_counts_eos():
    """max_len includes <eos>: a sentence of max_len - 1 tokens is kept, one of max_len tokens dropped."""
    docs = [["alpha beta gamma delta.", "market.", "one two three four five.", "bank."]]
    vocab = build_vocab(docs, 1)
    words = ["market", "bank", "alpha", "five"]
    lengths = [len(x) for x in sentence_examples(docs, vocab, words, max_len=6).inputs]
    assert 6 in lengths  # "alpha beta gamma delta ." + <eos>
    assert max(lengths) == 6 and len(sentence_examples(docs, vocab, words, max_len=6)) == 3


def test_no_punctuation_or_function_word_becomes_a_target():
    docs = [["The interest rate rose, said the bill's author.", "Fire crews, \"systems\" and 3 banks - all fell.",
             "It's the system: interest (bill) fire!"]]
    vocab = build_vocab(docs, 1)
    words = sorted({t for s in docs[0] for t in tokenize(s)})
    ex = sentence_examples(docs, vocab, words)
    got = {words[i] for t in ex.targets for i in t}
    assert {"interest", "bill", "system", "fire", "3"} <= got  # content words and numbers stay
    assert not got & {",", ".", '"', "-", ":", "(", ")", "!", "the", "it's", "and", "all"}
    comp = target_composition(ex, words)
    assert comp["punctuation_share"] == 0 and comp["numeric_share"] > 0 and comp["targets"] == sum(map(len, ex.targets))


def test_stop_list_from_a_file(tmp_path):
    (tmp_path / "stops.txt").write_text("# mine\nRose\n\n")
    docs = [["The rate rose.", "Shares fell.", "Rates rose again."]]
    vocab = build_vocab(docs, 1)
    words = ["rate", "rose", "shares", "fell", "rates", "again", "."]
    ex = sentence_examples(docs, vocab, words, stops=str(tmp_path / "stops.txt"))
    got = {words[i] for t in ex.targets for i in t}
    assert "rose" not in got and "again" in got and "." not in got
    from genfeat.errors import ConfigError

    with pytest.raises(ConfigError, match="neither"):
        sentence_examples(docs, vocab, words, stops=str(tmp_path / "missing.txt"))


def test_decoder_reads_the_encoder_states_through_cross_attention(monkeypatch):
    """With cross-attention the facets move when the non-<eos> encoder states move (the pooled state held fixed);
    the phrase model's decoder never reads them."""
    torch.manual_seed(0)
    for cross in (True, False):
        m = FacetModel(FacetConfig(**{**CFG.__dict__, "cross_attention": cross})).eval()
        ids = torch.randint(3, 40, (2, 6))
        base = m(ids)
        real = m.encoder.forward

        def shifted(x, real=real):
            e = real(x)
            return Encoded(torch.cat([e.states[:, :-1] + 1.0, e.states[:, -1:]], 1), e.pooled, e.mask)
        monkeypatch.setattr(m.encoder, "forward", shifted)
        moved = (m(ids) - base).abs().max()
        assert (moved > 1e-3) if cross else (moved < 1e-6), (cross, float(moved))


def test_facets_keep_their_norms_and_start_outside_the_dead_zone():
    """forward returns unnormalised facets (their norms are free in Eq. 3.1); the K input maps' biases U(-0.5,
    0.5) start the facets long enough that the E-step gives most target words a coefficient (spec §12.1)."""
    torch.manual_seed(0)
    m = FacetModel(CFG).eval()
    f = m(torch.randint(3, 40, (16, 8)))  # (B, K, E)
    norms = f.norm(dim=-1)
    assert norms.std() > 0.05 and (norms - 1).abs().max() > 0.1
    biases = torch.stack([lin.bias for lin in m.decoder.slots])
    assert 0.4 < float(biases.abs().max()) <= 0.5
    W = torch.nn.functional.normalize(torch.randn(16, 8, 10), dim=1)
    M = nnsc_coefficients(f.transpose(1, 2), W, 0.4, "pgd")
    assert float((M.sum(1) == 0).float().mean()) < 0.5


def test_bag_of_words_encoder_ignores_padding_with_an_init_table():
    torch.manual_seed(0)
    cfg = FacetConfig(**{**CFG.__dict__, "encoder": "bow", "decoder": "linear"})
    m = FacetModel(cfg, init_embedding=torch.randn(40, 16)).eval()
    assert float(m.encoder.tok.weight[cfg.pad_id].abs().max()) == 0.0
    ids = torch.randint(3, 40, (1, 5))
    padded = torch.cat([torch.zeros(1, 4, dtype=torch.long), ids], 1)
    torch.testing.assert_close(m(padded), m(ids), atol=1e-6, rtol=1e-6)
    with torch.no_grad():
        m.encoder.tok.weight[cfg.pad_id] = 3.0  # even a non-zero padding row is never read
    torch.testing.assert_close(m(padded), m(ids), atol=1e-6, rtol=1e-6)


def test_kmeans_assigns_by_cosine_and_caps_the_coefficient():
    """A long facet has the larger dot product with w, a short one the larger cosine: k-means picks the short
    one, with coefficient min(1, c·w / |c|²) = 1."""
    e0, e1 = torch.eye(3, dtype=torch.float64)[:2]
    long = 5.0 * (e0 + e1) / 2 ** 0.5
    short = 0.5 * (0.95 * e0 + 0.31 * e1)
    F = torch.stack([long, short], 1)[None]  # (1, E, K)
    w = e0[None, :, None]
    M = nnsc_coefficients(F, w, 0.4, "kmeans")[0, :, 0]
    assert M[0] == 0 and M[1] == pytest.approx(1.0)


def test_importance_uses_cosines_not_dot_products():
    words = np.array([[3.0, 0.0], [0.0, 0.2]])
    facets = np.array([[10.0, 0.0], [0.5, 0.5]])
    c = 1 / np.sqrt(2)
    np.testing.assert_allclose(S.importance(words, facets), [1 + c, c], atol=1e-12)


def test_sif_removes_the_first_principal_component():
    big, small = np.eye(4)[0], np.eye(4)[1]
    a, b = np.array([1, 1, -1, -1])[:, None], np.array([1, -1, 1, -1])[:, None]  # uncorrelated signs
    ref = np.tile(5 * a * big + b * small, (10, 1))  # second moment diag(25, 1, 0, 0): first component `big`
    u = S.principal_component(ref)
    assert abs(abs(float(u @ big)) - 1) < 1e-9
    x = np.array([[2.0, 1.0, 0.0, 0.0]])
    np.testing.assert_allclose(S.remove_component(x, u), [[0.0, 1.0, 0.0, 0.0]], atol=1e-9)


def test_avg_sums_the_raw_word_vectors():
    words = np.array([[3.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(S.weighted_average(words), [3.0, 1.0])
    np.testing.assert_allclose(S.weighted_average(words, np.array([0.5, 2.0])), [1.5, 2.0])


def test_summariser_objective_by_hand():
    """Eq. 3.7 on unit vectors whatever the input lengths, weighted by the document weights, and a candidate's
    gain counting only the words it improves."""
    e = np.eye(3)
    doc = np.stack([4 * e[0], 0.5 * e[1], 2 * e[2]])  # not unit: normalised inside
    weights = np.array([1.0, 3.0, 1.0])
    reps = [np.stack([0.8 * e[0] + 0.6 * e[1]]), np.stack([2 * e[1]]), np.stack([(e[0] + e[2]) / 2 ** 0.5])]
    chosen, obj = S.summarise(doc, weights, reps, n=3)
    assert chosen[0] == 1 and obj[0] == pytest.approx(3.0)  # the heavy word (weight 3): weights are read
    c = 1 / np.sqrt(2)
    # then sentence 0 gains 0.8 (word 0) and sentence 2 gains c + c (words 0, 2); sentence 0 is worse than the
    # summary on word 1 (0.6 < 1), which must not count against it
    assert chosen[1] == 2 and obj[1] == pytest.approx(3 + 2 * c)
    assert chosen[2] == 0 and obj[2] == pytest.approx(0.8 + 3 + c)


def test_per_length_gain_does_not_pick_the_shortest_sentence_first():
    """W Emb: the improvement is divided by the length, not the lift from the empty summary's floor."""
    e = np.eye(4)
    doc = e[:3]
    weights = np.ones(3)
    short = [0.9 * e[3] + 0.1 * e[0]]  # one word, barely related
    long = [e[0], e[1], e[2]]  # three words covering the document exactly
    chosen, _ = S.summarise(doc, weights, [np.stack(short), np.stack(long)], n=1, per_length=[1, 3])
    assert chosen == [1]  # per word: 3 / 3 = 1 against ~0.11


def test_topic_recovery_and_facet_spread():
    e = np.eye(4)
    facets = np.stack([3 * e[0], (e[1] + e[2]) / 2 ** 0.5, 0.1 * e[0]])  # lengths do not matter
    assert S.topic_recovery(facets, e[[0, 1]]) == pytest.approx(1 / 2 ** 0.5)  # topic 1 only half-covered
    assert S.topic_recovery(facets, e[[0]]) == pytest.approx(1.0)
    assert S.topic_recovery(facets, e[[3]]) == pytest.approx(0.0)
    assert S.facet_spread(facets) == pytest.approx((0 + 1 + 0) / 3)
    with pytest.raises(ValueError, match="at least 2"):
        S.facet_spread(facets[:1])


def test_the_facet_task_scores_valid_with_fixed_negatives():
    """tasks.facet_prediction: training takes the objective itself (its stream is checkpointed through it); every
    evaluation draws the same negatives (a fixed seed, not the training stream), with the exact E-step."""
    from genfeat.tasks.facet_prediction import NeighbourWordFacets

    torch.manual_seed(0)
    m = FacetModel(CFG).eval()
    table = torch.randn(30, CFG.d_target)
    objective = NNSCObjective(table, 0.4, "rmsprop", 20, seed=0)
    valid = [collate([torch.randint(3, 40, (5,)).tolist() for _ in range(6)],
                     [torch.randint(0, 30, (4,)).tolist() for _ in range(6)])]
    task = NeighbourWordFacets(objective, valid)
    assert task.loss is objective
    first = task.evaluate(m, "valid")
    objective(m, valid[0])  # the training stream moves on
    assert task.evaluate(m, "valid") == first
    assert first["valid_loss"] == pytest.approx(first["valid_er_pos"] - first["valid_er_neg"], abs=1e-6)
    with torch.no_grad():
        exact, _, _ = NNSCObjective(table, 0.4, "pgd", 500, seed=12_345)(m, valid[0])  # the exact E-step's loss
    assert first["valid_loss"] == pytest.approx(exact.item(), abs=1e-5)
    with pytest.raises(KeyError):
        task.evaluate(m, "test")
    assert (task.metric, task.mode) == ("loss", "min")
    sel = NeighbourWordFacets(objective, valid, metric="er_neg", mode="max")
    assert (sel.metric, sel.mode) == ("er_neg", "max")
    with pytest.raises(ValueError, match="er_pos"):
        NeighbourWordFacets(objective, valid, metric="accuracy")


def test_the_run_keeps_the_weights_best_on_the_metric_it_names(tmp_path):
    """train.early_stop_metric / early_stop_mode choose the kept weights: the lowest positive error here, at a
    step where neither the lowest valid_loss nor the highest positive error lies."""
    from genfeat.cli import main

    assert main(["run", "facets", "--preset", "synthetic", "--train.max_steps", "30", "--train.eval_every", "5",
                 "--train.early_stop_metric", "valid_er_pos", "--train.early_stop_mode", "min",
                 "--out", str(tmp_path / "s")]) == 0
    s = json.loads((tmp_path / "s" / "summary.json").read_text())
    evals = [r for r in map(json.loads, (tmp_path / "s" / "metrics.jsonl").read_text().splitlines())
             if "valid_er_pos" in r]
    best = min(reversed(evals), key=lambda r: r["valid_er_pos"])  # the last of ties, as fit keeps it
    assert len(evals) == 6 and s["best_step"] == best["step"]
    assert s["valid_er_pos"] == pytest.approx(best["valid_er_pos"], abs=1e-5)  # the summary keeps 5 digits
    others = {min(evals, key=lambda r: r["valid_loss"])["step"], max(evals, key=lambda r: r["valid_er_pos"])["step"]}
    assert best["step"] not in others  # the test tells the three selections apart


def test_the_nnsc_config_section_builds_the_objective_it_names():
    """`loss.*` (facets) and `nnsc.*` (interactive) reach the objective field by field, each off its default."""
    cfg = NNSCConfig(lam=0.7, solver="kmeans", kmeans_assign="min_dist", iters=9, neg_weight=0.5, batch_groups=3)
    table = torch.randn(5, 4) * 3
    obj = cfg.objective(table, seed=1)
    assert (obj.lam, obj.method, obj.assign, obj.iters, obj.neg_weight, obj.batch_groups) == (
        0.7, "kmeans", "min_dist", 9, 0.5, 3)
    assert torch.allclose(obj.table, torch.nn.functional.normalize(table, dim=1))
    assert torch.equal(torch.rand(3, generator=obj.gen), torch.rand(3, generator=torch.Generator().manual_seed(1)))
    for bad in ({"batch_groups": 0}, {"solver": "adam"}, {"kmeans_assign": "nearest"}, {"lam": -1.0},
                {"neg_weight": -1.0}, {"iters": 0}):
        with pytest.raises(ValueError):
            NNSCConfig(**bad)
