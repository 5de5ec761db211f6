"""Cold-start citation / authorship prediction (thesis C §3.4): the exactness tests of spec citation-prediction.md
§14, the data builders' rules and the recipe."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from genfeat.analysis.facet_scores import sif_bag_vectors
from genfeat.data.citation_synthetic import SyntheticCitationConfig, synthetic_citations
from genfeat.data.citations import EOS, PAD, SEP, UNK, CitationData, cold_start_split, paper_inputs, prune_columns
from genfeat.losses.max_facet import (
    autoencoder_regulariser,
    inverse_frequency_weights,
    max_facet_score,
    max_facet_scores,
)
from genfeat.models.citation import CitationConfig, CitationModel
from genfeat.models.citation.cbow import CBOWScorer, mixture
from genfeat.models.facets.config import FacetConfig
from genfeat.models.facets.model import FacetModel
from genfeat.tasks.citation import CitationPrediction, PairBatches


def small_data(seed: int = 0) -> CitationData:
    cfg = SyntheticCitationConfig(n_topics=6, n_papers=120, n_test=30, n_valid=20, n_citers=12, n_authors=10,
                                  topics_per_paper=2, seed=seed)
    return synthetic_citations(cfg).data


def small_model(data: CitationData, **kw) -> CitationModel:
    cfg = CitationConfig(**({"vocab_size": len(data.vocab), "d_model": 16, "d_target": 8, "k": 3, "n_enc": 1,
                             "n_dec": 1, "n_head": 2, "d_inner": 32, "max_len": data.input_ids.shape[1],
                             "n_types": 2, "dropout": 0.0, "magnitude_dropout": 0.0} | kw))
    torch.manual_seed(0)
    return CitationModel(cfg, data.n_authors, data.n_citers, d_word=5)


# ------------------------------------------------------------------------ 1. the score (Eq. 3.13)
def test_score_is_the_truncated_max_facet_dot_product_and_its_gradient_reaches_the_arg_max_only():
    P = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [0.5, 0.1]]], requires_grad=True)  # (1, K=3, d=2)
    a = torch.tensor([[0.5, 0.4]], requires_grad=True)
    s = max_facet_score(P, a)
    assert s.item() == pytest.approx(max(0.0, 0.5, 0.8, 0.29))
    s.sum().backward()
    torch.testing.assert_close(P.grad[0], torch.tensor([[0.0, 0.0], [0.5, 0.4], [0.0, 0.0]]))  # facet 2 only
    torch.testing.assert_close(a.grad, torch.tensor([[0.0, 2.0]]))
    P.grad, a.grad = None, None
    b = torch.tensor([[-0.1, -0.1]], requires_grad=True)
    s = max_facet_score(P, b)  # every dot product negative: 0 and no gradient
    assert s.item() == 0.0
    s.sum().backward()
    assert not P.grad.any() and not b.grad.any()
    assert max_facet_score(P, b, truncate=False).item() == pytest.approx(-0.06)
    table = torch.tensor([[0.5, 0.4], [-0.1, -0.1], [1.0, 0.0]])
    torch.testing.assert_close(max_facet_scores(P, table)[0], torch.tensor([0.8, 0.0, 1.0]))


# ------------------------------------------------------------------------ 2. the loss (Eq. 3.12)
def test_inverse_frequency_weights_have_mean_one_and_follow_the_column_counts():
    cols = torch.tensor([0, 0, 0, 1, 2, 2])
    w = inverse_frequency_weights(cols, 4)
    assert w.mean().item() == pytest.approx(1.0, abs=1e-6)
    assert w[0].item() * 3 == pytest.approx(w[3].item()) and w[4].item() * 2 == pytest.approx(w[3].item())


def test_pair_batches_give_every_positive_one_negative_training_paper_and_never_a_held_out_one():
    data = small_data()
    train = set(data.papers("train").tolist())
    pairs = PairBatches(data, 32, seed=1)
    for _ in range(20):
        b = next(pairs)
        assert len(b["negative"]) == len(b["paper"]) == 32
        assert (b["negative"] != b["paper"]).all()
        assert {int(i) for i in b["negative"]} <= train and {int(i) for i in b["paper"]} <= train
        for p, c, k in zip(b["paper"].tolist(), b["column"].tolist(), b["kind"].tolist(), strict=True):
            assert [p, c] in data.pairs("author" if k == 0 else "citer", "train").tolist()
    a, b2 = PairBatches(data, 32, seed=1), PairBatches(data, 32, seed=1)
    next(a)
    b2.load_state_dict(a.state_dict())
    assert all(torch.equal(x, y) for x, y in zip(next(a).values(), next(b2).values(), strict=True))


def test_the_loss_is_the_weighted_squared_error_with_targets_one_and_zero():
    data = small_data()
    model = small_model(data)
    task = CitationPrediction(data, alpha=5.0, beta=1.0, gamma=0.0)
    batch = next(task.batches(16, seed=0))
    loss, n = task.loss(model, batch)
    papers = torch.cat([batch["paper"], batch["negative"]])
    with torch.no_grad():
        out = model(torch.from_numpy(data.input_ids)[papers], torch.from_numpy(data.type_ids)[papers])
    want = 0.0
    for r in range(16):
        kind, col = int(batch["kind"][r]), batch["column"][r]
        table = model.author if kind == 0 else model.citer
        facets = out.author if kind == 0 else out.citer
        pos = max(0.0, float((facets[r] @ table.weight[col]).max()))
        neg = max(0.0, float((facets[16 + r] @ table.weight[col]).max()))
        want += (5.0 if kind == 0 else 1.0) * float(batch["weight"][r]) * ((pos - 1) ** 2 + neg ** 2)
    assert n == 16 and loss.item() == pytest.approx(want / 16, rel=1e-5)


# ------------------------------------------------------------------------ 3. magnitudes (Eq. 3.15)
def test_magnitudes_scale_one_shared_direction_per_facet():
    data = small_data()
    model = small_model(data, positive_magnitudes=True).eval()
    ids, types = torch.from_numpy(data.input_ids[:4]), torch.from_numpy(data.type_ids[:4])
    out = model(ids, types)
    rho, tau = out.author.norm(dim=-1) / out.facets.norm(dim=-1), out.citer.norm(dim=-1) / out.facets.norm(dim=-1)
    torch.testing.assert_close(out.author, rho[..., None] * out.facets)
    torch.testing.assert_close(out.citer, tau[..., None] * out.facets)
    cos = torch.nn.functional.cosine_similarity(out.author, out.citer, dim=-1)
    torch.testing.assert_close(cos, torch.ones_like(cos))
    assert not torch.allclose(rho, tau)  # two heads
    plain = small_model(data, magnitudes=False).eval()(ids, types)
    assert plain.author is plain.facets and plain.citer is plain.facets


# ------------------------------------------------------------------------ 4. joint weights (Eq. 3.14)
def test_the_joint_loss_is_alpha_beta_gamma_times_its_three_terms():
    data = small_data()
    sif = np.random.default_rng(0).normal(size=(data.n_papers, 5))
    model = small_model(data)
    batch = next(CitationPrediction(data).batches(24, seed=3))

    def loss(a, b, g, s=sif):
        return CitationPrediction(data, a, b, g, sif_vectors=s).loss(model, batch)[0].item()

    parts = loss(1, 0, 0), loss(0, 1, 0), loss(0, 0, 1)
    assert all(p > 0 for p in parts)
    assert loss(5, 1, 10) == pytest.approx(5 * parts[0] + parts[1] + 10 * parts[2], rel=1e-5)
    assert loss(5, 1, 0) == loss(5, 1, 0, None)  # γ = 0 disables Ω exactly
    with torch.no_grad():  # Ω by hand: the pair's paper against its own words (1) and its negative's (0)
        p, q = batch["paper"], batch["negative"]
        mu = model(torch.from_numpy(data.input_ids)[p], torch.from_numpy(data.type_ids)[p]).facets.mean(1)
        h = model.H(torch.as_tensor(sif, dtype=torch.float32))
        want = (((h[p] * mu).sum(1) - 1) ** 2 + (h[q] * mu).sum(1) ** 2).sum() / 24
    assert parts[2] == pytest.approx(want.item(), rel=1e-5)


# ------------------------------------------------------------------------ 5. Ω (Eqs. B.3-B.4)
def test_the_regulariser_reads_the_mean_unscaled_facet_and_trains_h_not_the_word_vectors():
    F = torch.tensor([[[1.0, 0.0], [0.0, 3.0]]])  # μ = (0.5, 1.5)
    own, other = torch.tensor([[1.0, 1.0]]), torch.tensor([[2.0, 0.0]])
    assert autoencoder_regulariser(F, own, other).item() == pytest.approx((2.0 - 1) ** 2 + 1.0 ** 2)
    probs = np.array([0, 0, 0, 0, 0.5, 0.25, 0.25])
    vectors = np.eye(7)
    ids = np.array([[0, 4, 5, 5]])
    v = sif_bag_vectors(ids, vectors, probs)
    nu = 1e-4
    np.testing.assert_allclose(v[0], [0, 0, 0, 0, nu / (nu + 0.5), 2 * nu / (nu + 0.25), 0])
    data = small_data()
    sif = torch.randn(data.n_papers, 5)
    model = small_model(data)
    task = CitationPrediction(data, 0.0, 0.0, 1.0, sif_vectors=sif.numpy())
    task.loss(model, next(task.batches(8, seed=0)))[0].backward()
    assert model.H.weight.grad.abs().sum() > 0 and task.sif.grad is None and not task.sif.requires_grad


# ------------------------------------------------------------------------ 6. facet-specific output layers
def test_per_facet_output_layers_differ_and_grow_linearly_in_k():
    def build(k, output):
        torch.manual_seed(0)
        return FacetModel(FacetConfig(vocab_size=30, d_model=8, d_target=4, k=k, n_enc=1, n_dec=1, n_head=2,
                                      d_inner=16, max_len=10, encoder="bow", decoder="linear", output=output,
                                      dropout=0.0))

    m = build(3, "per_facet")
    hidden = torch.randn(2, 1, 8).expand(2, 3, 8)  # identical decoder states in every slot
    out = m.decoder.out(hidden)
    assert not torch.allclose(out[:, 0], out[:, 1]) and not torch.allclose(out[:, 1], out[:, 2])
    shared = build(3, "shared").decoder.out(hidden)
    torch.testing.assert_close(shared[:, 0], shared[:, 1])

    def n_out(k):
        return sum(p.numel() for p in build(k, "per_facet").decoder.out.parameters())

    assert n_out(2) - n_out(1) == n_out(3) - n_out(2) == 8 * 4 + 4


def test_type_ids_and_the_gru_encoder():
    cfg = dict(vocab_size=30, d_model=8, d_target=4, k=2, n_enc=2, n_dec=1, n_head=2, d_inner=16, max_len=10,
               dropout=0.0, n_types=2)
    ids = torch.tensor([[0, 0, 5, 6, 7], [4, 5, 6, 7, 8]])
    for enc in ("transformer", "gru", "lstm", "bow"):
        torch.manual_seed(0)
        m = FacetModel(FacetConfig(encoder=enc, **cfg)).eval()
        a = m(ids, type_ids=torch.zeros_like(ids))
        b = m(ids, type_ids=torch.ones_like(ids))
        assert not torch.allclose(a, b), enc
        with pytest.raises(ValueError, match="type_ids"):
            m(ids)
    torch.manual_seed(0)
    gru = FacetModel(FacetConfig(encoder="gru", **cfg))
    assert isinstance(gru.encoder.rnn, torch.nn.GRU)
    x = gru(ids[:1, 2:], type_ids=torch.zeros_like(ids[:1, 2:]))  # left padding is never read
    torch.testing.assert_close(gru.eval()(ids[:1, 2:], type_ids=torch.zeros(1, 3, dtype=torch.long)),
                               gru(ids[:1], type_ids=torch.zeros(1, 5, dtype=torch.long)))
    assert x.shape == (1, 2, 4)


# ------------------------------------------------------------------------ 7-8. metrics and the hybrid
def test_task_metrics_average_per_column_scikit_learn_values_over_columns_with_a_positive():
    from sklearn.metrics import average_precision_score, ndcg_score, roc_auc_score

    data = small_data(1)
    task = CitationPrediction(data, ks=(5,))
    g = torch.Generator().manual_seed(0)
    scores = {k: torch.rand(data.n_columns(k), data.n_papers, generator=g).round(decimals=1)
              for k in ("author", "citer")}  # ties included

    def fn(kind, papers, cols):
        return scores[kind][torch.from_numpy(cols)][:, torch.from_numpy(papers)]

    got = task.evaluate_scores(fn, "test")
    papers = data.papers("test")
    for kind, prefix in (("author", "author"), ("citer", "cite")):
        rel = np.zeros((data.n_columns(kind), data.n_papers), dtype=bool)
        pairs = data.pairs(kind, "test")
        rel[pairs[:, 1], pairs[:, 0]] = True
        rows = [c for c in range(data.n_columns(kind)) if rel[c, papers].any()]
        assert len(rows) < data.n_columns(kind) or kind == "citer"
        s = scores[kind].numpy()[:, papers]
        y = rel[:, papers]
        want_ap = np.mean([average_precision_score(y[c], s[c]) for c in rows])
        want_auc = np.mean([roc_auc_score(y[c], s[c]) if 0 < y[c].sum() < len(y[c]) else np.nan for c in rows])
        want_ndcg = np.mean([ndcg_score(y[c][None], s[c][None]) for c in rows])
        assert got[f"test_{prefix}_ap"] == pytest.approx(want_ap, abs=1e-9)
        assert got[f"test_{prefix}_auc"] == pytest.approx(want_auc, abs=1e-9)
        assert got[f"test_{prefix}_ndcg"] == pytest.approx(want_ndcg, abs=1e-9)
    a = lambda k, p, c: torch.ones(len(c), len(p))  # noqa: E731
    b = lambda k, p, c: torch.arange(len(c) * len(p), dtype=torch.float64).view(len(c), len(p))  # noqa: E731
    torch.testing.assert_close(mixture(a, b, 0.2)("citer", np.arange(3), np.arange(2)),
                               0.2 + 0.8 * b("citer", np.arange(3), np.arange(2)))


def test_the_truncated_scores_ties_at_zero_are_evaluated_as_scikit_learn_does():
    """A scorer that is 0 for every paper gains nothing: AP = the positive rate, AUC = 1/2 (scikit-learn)."""
    data = small_data(2)
    task = CitationPrediction(data)
    got = task.evaluate_scores(lambda k, p, c: torch.zeros(len(c), len(p)), "test")
    papers = data.papers("test")
    pairs = data.pairs("citer", "test")
    rates = [np.isin(papers, pairs[pairs[:, 1] == c, 0]).mean() for c in np.unique(pairs[:, 1])]
    assert got["test_cite_ap"] == pytest.approx(np.mean(rates), abs=1e-9)
    assert got["test_cite_auc"] == pytest.approx(0.5)


# ------------------------------------------------------------------------ 9. splits and pruning
def test_cold_start_split_draws_test_from_eligible_groups_whole():
    rng = np.random.default_rng(0)
    n = 400
    groups = rng.integers(0, 150, size=n)
    eligible = rng.random(n) < 0.4
    split = cold_start_split(eligible, groups, 0.1, 0.1, seed=3)
    for g in np.unique(groups):
        assert len(set(split[groups == g])) == 1  # a group never straddles
    test_groups = np.unique(groups[split == 2])
    assert all(eligible[groups == g].any() for g in test_groups)
    assert abs(int((split == 2).sum()) - 0.1 * eligible.sum()) <= np.bincount(groups).max()
    rest = int((split != 2).sum())
    assert abs(int((split == 1).sum()) - 0.1 * rest) <= np.bincount(groups).max()
    assert np.array_equal(split, cold_start_split(eligible, groups, 0.1, 0.1, seed=3))


def test_prune_columns_drops_small_columns_before_anything_else():
    pairs = np.array([[0, 7], [1, 7], [2, 9], [0, 3], [1, 3], [2, 3], [2, 3]])
    kept, cols = prune_columns(pairs, 2)
    assert cols.tolist() == [3, 7]
    assert sorted(map(tuple, kept.tolist())) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]  # duplicates merged


# ------------------------------------------------------------------------ 10. the input builder
def test_paper_inputs_title_sep_abstract_eos_with_types_unk_and_truncation():
    titles = ["Deep nets", "Deep nets", "Deep graphs"]
    abstracts = ["we train deep nets on graphs", "", "deep " * 20]
    ids, types, vocab = paper_inputs(titles, abstracts, np.array([True, True, False]), min_count=2, max_words=6)
    assert vocab[:4] == ["<pad>", "<unk>", "<sep>", "<eos>"] and set(vocab[4:]) == {"deep", "nets"}
    d, n = vocab.index("deep"), vocab.index("nets")
    row0 = ids[0][ids[0] != PAD].tolist()
    assert row0 == [d, n, SEP, UNK, UNK, d, n, EOS]  # "we train deep nets" cut at 6 words in all ("on graphs")
    assert types[0][ids[0] != PAD].tolist() == [0, 0, 0, 1, 1, 1, 1, 1]
    assert ids[1][ids[1] != PAD].tolist() == [d, n, EOS] and types[1][ids[1] != PAD].tolist() == [0, 0, 0]
    assert ids[2][ids[2] != PAD].tolist() == [d, UNK, SEP, d, d, d, d, EOS]  # "graphs" is rare in training
    assert (ids[:, -1] == EOS).all()  # left-padded


# ------------------------------------------------------------------------ 11. CBOW baselines
def test_cbow_avg_and_max_are_the_mean_and_max_cosine_to_the_columns_training_papers():
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(10, 4))
    pairs = np.array([[0, 0], [1, 0], [2, 1], [3, 1], [4, 1]])
    papers, cols = np.array([5, 6, 7]), np.array([0, 1, 2])
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    for reduce, f in (("mean", np.mean), ("max", np.max)):
        for chunk in (2, 4096):  # the cosines in chunks of pairs
            got = CBOWScorer(vecs, {"author": pairs}, reduce)("author", papers, cols, chunk=chunk).numpy()
            for c in (0, 1):
                want = f(unit[papers] @ unit[pairs[pairs[:, 1] == c, 0]].T, axis=1)
                np.testing.assert_allclose(got[c], want, atol=1e-12)
            assert not got[2].any()  # no training paper: 0


def test_document_baselines_score_cbow_and_its_mixture_at_the_lambda_valid_picks():
    from genfeat.models.citation.cbow import mix
    from genfeat.tasks.citation import CitationEvalConfig, document_baselines

    data = small_data()
    model = small_model(data).eval()
    task = CitationPrediction(data, ks=(5,))
    vecs = np.random.default_rng(1).normal(size=(len(data.vocab), 6))
    cfg = CitationEvalConfig(baselines=("cbow_max",), lambdas=(0.0, 0.5, 1.0))
    got = document_baselines(task, model, vecs, cfg)
    doc = CBOWScorer(sif_bag_vectors(data.input_ids, vecs, data.word_probs()),
                     {k: data.pairs(k, "train") for k in ("author", "citer")}, "max")
    per_lambda = {}
    for lam in cfg.lambdas:
        per_lambda[lam] = {}
        for s in ("valid", "test"):
            cold = task.model_scores(model, s)
            per_lambda[lam] |= task.evaluate_scores(
                lambda k, p, c, cold=cold, lam=lam: mix(cold(k, p, c), doc(k, p, c), lam), s)
    best = max(cfg.lambdas, key=lambda lam: per_lambda[lam]["valid_author_ap"])
    assert got["model+cbow_max"]["lambda"] == best
    for key, value in per_lambda[best].items():
        assert got["model+cbow_max"][key] == pytest.approx(value, abs=1e-5)
    for key in ("valid_author_ap", "test_cite_ap"):
        want = task.evaluate_scores(doc, key.split("_")[0])[key]
        assert got["cbow_max"][key] == pytest.approx(want, abs=1e-5)
    assert document_baselines(task, model, vecs, CitationEvalConfig(baselines=())) == {}


def test_load_citations_draws_the_synthetic_graph_for_the_run_seed_and_reads_vectors_for_real_sources(tmp_path):
    from genfeat.data import citation_sources as S
    from genfeat.errors import ConfigError

    dc = S.CitationDataConfig(synthetic=SyntheticCitationConfig(n_topics=6, n_papers=120, n_test=30, n_valid=20,
                                                                n_citers=12, n_authors=10, topics_per_paper=2))
    (a, none), (b, _) = S.load_citations(dc, 0), S.load_citations(dc, 1)
    assert none is None and a.checksum != b.checksum
    assert a.checksum == S.load_citations(dc, 0)[0].checksum
    (tmp_path / "v.txt").write_text(f"{a.vocab[-1]} 1 2\nnotaword 3 4\n")
    S.READERS["s2orc"], old = (lambda path, seed: a), S.READERS["s2orc"]
    try:
        data, table = S.load_citations(S.CitationDataConfig(source="s2orc:x", vectors=str(tmp_path / "v.txt")), 0)
    finally:
        S.READERS["s2orc"] = old
    assert data is a and table.shape == (len(a.vocab), 2)
    assert table[-1].tolist() == [1.0, 2.0] and not table[:-1].any()
    with pytest.raises(ConfigError, match="data.source"):
        S.CitationDataConfig(source="arxiv:x")


# ------------------------------------------------------------------------ the synthetic graph
def test_the_synthetic_graph_follows_spec_13():
    syn = synthetic_citations(SyntheticCitationConfig(seed=0))
    d = syn.data
    assert d.n_papers == 3000 and (d.split == 2).sum() == 500 and (d.split[-500:] == 2).all()
    assert all(len(t) == 3 for t in syn.paper_topics)
    assert (d.input_ids != PAD).sum(1).tolist() == [5 * 3 + 3 + 1] * 3000
    has = np.array([syn.citer_topic[c] in syn.paper_topics[p] for p, c in d.citations])
    assert has.all()
    rate = len(d.citations) / sum(np.isin(syn.citer_topic, t).sum() for t in syn.paper_topics)
    assert rate == pytest.approx(0.8, abs=0.01)
    assert math.isclose(syn.oracle_scores("citer", np.array([0]))[:, 0].sum(),
                        np.isin(syn.citer_topic, syn.paper_topics[0]).sum())


@pytest.mark.parametrize("encoder,decoder", [("transformer", "transformer"), ("gru", "lstm")])
def test_the_recipe_trains_the_thesis_network_with_magnitude_heads_and_types(encoder, decoder, tmp_path):
    """The thesis's network (transformer or bi-GRU encoder, K output layers, the magnitude heads, type ids) through
    `genfeat.run_recipe`: both kinds' metrics on both splits, the baselines and their mixtures beside them."""
    import dataclasses

    from genfeat import run_recipe
    from genfeat.registry import RECIPES

    cfg = RECIPES["citation"].presets["tiny"]()
    syn = dataclasses.replace(cfg.data.synthetic, n_papers=400, n_test=80, n_valid=40)
    cfg = dataclasses.replace(
        cfg, data=dataclasses.replace(cfg.data, synthetic=syn),
        model=dataclasses.replace(cfg.model, encoder=encoder, decoder=decoder, magnitudes=True, n_types=2, n_enc=1,
                                  n_dec=1, n_head=2, d_inner=64),
        train=dataclasses.replace(cfg.train, max_steps=20, eval_every=10),
        eval=dataclasses.replace(cfg.eval, lambdas=(0.2,)))
    s = run_recipe("citation", cfg, tmp_path / "run")
    for split in ("valid", "test"):
        for m in ("cite_ap", "author_ap", "cite_auc", "cite_r@50", "cite_rcap@200", "author_ndcg"):
            assert 0.0 <= s[f"{split}_{m}"] <= 1.0
    assert set(s["baselines"]) == {"cbow_avg", "cbow_max", "model+cbow_avg", "model+cbow_max"}
    assert s["baselines"]["model+cbow_max"]["lambda"] == 0.2
    assert s["model"] == f"K=5 {encoder}" and s["best_step"] in (10, 20)
    from genfeat.models.citation import load_run
    from genfeat.train.checkpoint import WEIGHTS, load_weights

    model, info, config = load_run(tmp_path / "run")  # what `genfeat affinity` reads: the kept weights, exactly
    saved = load_weights(tmp_path / "run" / WEIGHTS)
    assert model.state_dict().keys() == saved.keys()
    assert all(torch.equal(v, saved[k]) for k, v in model.state_dict().items())
    assert not model.training and len(info["vocab"]) == model.cfg.vocab_size and config["model"]["encoder"] == encoder


# ------------------------------------------------------------------------ the Debian citation graph
def _write_lists(root, packages):
    """Packages + Translation-en for [(name, fields, synopsis, long)]."""
    import hashlib

    pk, tr = [], []
    for name, fields, synopsis, long in packages:
        md5 = hashlib.md5(f"{name}{synopsis}".encode()).hexdigest()
        pk.append("\n".join([f"Package: {name}", *(f"{k}: {v}" for k, v in fields.items()), "Section: libs",
                             f"Description: {synopsis}", f"Description-md5: {md5}"]))
        tr.append("\n".join([f"Package: {name}", f"Description-md5: {md5}",
                             f"Description-en: {synopsis}", *(f" {line}" for line in long.split("\n"))]))
    (root / "Packages").write_text("\n\n".join(pk) + "\n")
    (root / "Translation-en").write_text("\n\n".join(tr) + "\n")


def _archive(tmp_path):
    pkgs = []
    for i in range(40):  # libraries, each with a -dev package of the same source
        team = f"Team{i % 4} <Team{i % 4}@Lists.Debian.org>"
        pkgs.append((f"lib{i}", {"Maintainer": team, "Source": f"src{i}"}, f"library number {i} for things",
                     f"the library {i} does useful work\n.\nwith words like data and code"))
        pkgs.append((f"lib{i}-dev", {"Maintainer": team, "Source": f"src{i}", "Depends": f"lib{i} (= 1.0)"},
                     f"development files for library {i}", f"headers of lib{i} and the static library {i}"))
    for j in range(30):  # applications depending on 6 libraries each (alternatives, qualifiers)
        deps = ", ".join(f"lib{(j + d) % 40}" for d in range(4))
        pkgs.append((f"app{j}", {"Maintainer": f"Dev {j % 3} <dev{j % 3}@example.org>", "Depends": deps,
                                 "Recommends": f"lib{(j + 4) % 40}:any | nonexistent",
                                 "Suggests": f"lib{(j + 5) % 40} (>= 2) [amd64], lib{j % 40}"},
                     f"application {j} tool", f"a program that uses several libraries {j}"))
    pkgs.append(("oldlib", {"Maintainer": "x <x@y>", "Depends": "lib0"}, "transitional package", "dummy"))
    pkgs.append(("copy0", {"Maintainer": "Team0 <team0@lists.debian.org>", "Depends": "lib1"},
                 pkgs[0][2], pkgs[0][3]))  # repeats lib0's text
    _write_lists(tmp_path, pkgs)
    return pkgs


def test_debian_citations_builds_the_graph_by_its_rules(tmp_path):
    from genfeat.data.debian_citations import debian_citations, dependency_names, maintainer_id

    assert dependency_names("a (>= 1), b:any | c [amd64], d(<<2)") == ["a", "b", "c", "d"]
    assert maintainer_id("Some Team <Team@Lists.Debian.org>") == "team@lists.debian.org"
    _archive(tmp_path)
    d = debian_citations(tmp_path, seed=0, test_fraction=0.25, valid_fraction=0.2, min_count=1)
    names = d.paper_names
    assert "oldlib" not in names and names.count("copy0") + names.count("lib0") == 1  # dummy and repeat dropped
    assert d.notes["dropped_transitional_or_dummy"] == 1 and d.notes["dropped_repeated_texts"] == 1
    # citations: (cited, citing), every field, alternatives inside the set, no self-citation
    cites = {(names[p], d.citer_names[c]) for p, c in d.citations}
    assert ("lib3", "app0") in cites and ("lib4", "app0") in cites and ("lib5", "app0") in cites
    assert all(not n.endswith("-dev") for _, n in cites)  # a -dev cites once: pruned (< 5 citations)
    assert set(d.citer_names) == {f"app{j}" for j in range(30)}  # 6 citations each
    types = {(names[p], d.citer_names[c]): d.type_names[x] for (p, c), x in zip(d.citations, d.citation_types,
                                                                                 strict=True)}
    assert types[("lib1", "app1")] == "Depends" and types[("lib6", "app1")] == "Suggests"  # the strongest field
    assert set(types.values()) == {"Depends", "Recommends", "Suggests"}
    # authors: e-mail identities, lower-cased; one author per package; columns with >= 2 packages
    assert set(d.author_names) == {f"team{i}@lists.debian.org" for i in range(4)} | \
        {f"dev{i}@example.org" for i in range(3)}
    # a source's packages never straddle a split; test packages have >= 5 citing packages
    split = dict(zip(names, d.split.tolist(), strict=True))
    for i in range(40):
        if f"lib{i}" in split:
            assert split[f"lib{i}"] == split[f"lib{i}-dev"]
    citers = dict(zip(names, np.bincount(d.citations[:, 0], minlength=d.n_papers).tolist(), strict=True))
    test = [n for n in names if split[n] == 2]
    assert test and all(citers[n.removesuffix("-dev")] >= 5 for n in test)  # a group with an eligible package
    # cold: no test paper's pair is a training pair; deterministic
    assert not set(d.pairs("citer", "train")[:, 0]) & set(d.papers("test"))
    assert d.checksum == debian_citations(tmp_path, seed=0, test_fraction=0.25, valid_fraction=0.2,
                                          min_count=1).checksum
    assert d.checksum != debian_citations(tmp_path, seed=1, test_fraction=0.25, valid_fraction=0.2,
                                          min_count=1).checksum
    files = d.write(tmp_path / "out")
    assert [f.name for f in files] == ["citations.npz", "citations.json"]
    assert np.array_equal(np.load(files[0])["citations"], d.citations)


# ------------------------------------------------------------------------ reviewer-paper affinity
def _venue(root, reviewers, seed=0):
    """archives/<reviewer>.jsonl (topic words of the reviewer's area; API v2 values for half) + submissions.json."""
    import json

    rng = np.random.default_rng(seed)
    topics = {r: [f"w{i}x{j}" for j in range(6)] for i, r in enumerate(reviewers)}
    (root / "archives").mkdir(parents=True)
    for r in reviewers:
        lines = []
        for p in range(6):
            words = " ".join(rng.choice(topics[r], 8))
            content = {"title": f"paper {p} on {topics[r][0]}", "abstract": words}
            if p % 2:
                content = {k: {"value": v} for k, v in content.items()}
            lines.append(json.dumps({"content": content}))
        (root / "archives" / f"{r}.jsonl").write_text("\n".join(lines) + "\n")
    subs = {f"sub{s}": {"content": {"title": "a submission", "abstract": " ".join(rng.choice(topics[r], 8))}}
            for s, r in enumerate(reviewers[:3])}
    (root / "submissions.json").write_text(json.dumps(subs))
    words = sorted({w for t in topics.values() for w in t} | {"paper", "on", "a", "submission"})
    (root / "vectors.txt").write_text("".join(f"{w} " + " ".join(f"{x:.4f}" for x in rng.normal(size=8)) + "\n"
                                              for w in words))
    return root


def test_affinity_in_openreview_layout_trained_on_the_archives_and_as_is(tmp_path):
    import csv

    from genfeat.cli import main

    reviewers = [f"~Reviewer_{i}1" for i in range(6)]
    venue = _venue(tmp_path / "venue", reviewers)
    run = tmp_path / "run"
    assert main(["run", "citation", "--preset", "tiny", "--data.source", f"archives:{venue / 'archives'}",
                 "--data.vectors", str(venue / "vectors.txt"), "--data.batch_size", "8", "--model.d_model", "8",
                 "--model.magnitudes", "true",
                 "--eval.metric", "author_ap", "--eval.baselines", "[]", "--train.max_steps", "20",
                 "--train.eval_every", "10", "--out", str(run)]) == 0

    def read(path):
        with open(path) as f:
            return [(a, b, float(c)) for a, b, c in csv.reader(f)]

    got = {}
    for method in ("max-facet", "cbow-max", "mixture"):
        out = tmp_path / f"{method}.csv"
        assert main(["affinity", str(run), "--archives", str(venue / "archives"), "--submissions",
                     str(venue / "submissions.json"), "--out", str(out), "--method", method, "--vectors",
                     str(venue / "vectors.txt")]) == 0
        got[method] = read(out)
        assert [(a, b) for a, b, _ in got[method]] == [(f"sub{s}", r) for s in range(3) for r in reviewers]
    mix = [0.2 * a[2] + 0.8 * b[2] for a, b in zip(got["max-facet"], got["cbow-max"], strict=True)]
    np.testing.assert_allclose([c for _, _, c in got["mixture"]], mix, rtol=1e-4, atol=1e-6)
    assert max(c for *_, c in got["cbow-max"]) <= 1.0 + 1e-6

    # trained on these archives: Eq. 3.13 with the reviewer embeddings; as is (other reviewers): their papers' facets
    import json

    import torch

    from genfeat.data.citations import paper_inputs
    from genfeat.data.openreview import read_archives, read_submissions
    from genfeat.models.citation import load_run

    model, info, config = load_run(run)
    assert config["data"]["source"].startswith("archives:") and config["model"]["k"] == model.cfg.k
    subs = read_submissions(venue / "submissions.json")
    ids, types, _ = paper_inputs([t for _, t, _ in subs], [a for *_, a in subs], np.ones(3, bool),
                                 vocab=info["vocab"])
    sub = model.paper_facets(torch.from_numpy(ids), torch.from_numpy(types)).author
    cols = [info["authors"].index(r) for r in reviewers]
    want = torch.clamp((sub[:, None] * model.author.weight[cols][None, :, None]).sum(-1).amax(-1), min=0)
    np.testing.assert_allclose([c for *_, c in got["max-facet"]], want.detach().flatten().numpy(), rtol=1e-4,
                               atol=1e-6)
    other = tmp_path / "other"
    (other / "archives").mkdir(parents=True)
    archives = read_archives(venue / "archives")
    for i, r in enumerate(reviewers[:2]):
        (other / "archives" / f"new{i}.jsonl").write_text("\n".join(
            json.dumps({"content": {"title": t, "abstract": a}}) for t, a in archives[r]) + "\n")
    out = tmp_path / "as_is.csv"
    assert main(["affinity", str(run), "--archives", str(other / "archives"), "--submissions",
                 str(venue / "submissions.json"), "--out", str(out)]) == 0
    rows = read(out)
    papers = archives[reviewers[0]]
    pids, ptypes, _ = paper_inputs([t for t, _ in papers], [a for _, a in papers], np.ones(len(papers), bool),
                                   vocab=info["vocab"])
    facets = model.paper_facets(torch.from_numpy(pids), torch.from_numpy(ptypes)).facets.flatten(0, 1)  # (P K, d)
    want0 = torch.clamp((sub[:, :, None] * facets[None, None]).sum(-1).amax((1, 2)), min=0)  # reviewer new0
    np.testing.assert_allclose([c for a, b, c in rows if b == "new0"], want0.detach().numpy(), rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------------ SPECTER / SciDocs and S2ORC readers
def _graph_records(n=60, seed=0):
    """n papers, each by 5 of 12 authors and cited by 5-8 of the first 20 papers (none by itself)."""
    rng = np.random.default_rng(seed)
    names = [f"Ada Lovelace{i}" for i in range(12)]
    papers = {}
    for i in range(n):
        papers[f"p{i}"] = {"title": f"paper {i} about topic {i % 5}", "abstract": f"words of topic {i % 5} " * 3,
                           "authors": [names[j] for j in rng.choice(12, 5, replace=False)]}
    cites = {f"p{q}": [f"p{c}" for c in range(n) if c != q and rng.random() < (0.3 if q < 16 else 0.05)] +
             ["outside"] for q in range(20)}  # p16-p19 cite about 3 papers: pruned
    return papers, cites


def test_specter_data_json_qrels_and_s2orc_jsonl_read_to_the_same_graph(tmp_path):
    import json

    from genfeat.data.citation_readers import read_s2orc, read_specter

    papers, cites = _graph_records()
    spec = tmp_path / "specter"
    spec.mkdir()
    (spec / "metadata.json").write_text(json.dumps(papers))
    (spec / "data.json").write_text(json.dumps(
        {q: {**({} if "p59" in cs else {"p59": {"count": 1}}), **{c: {"count": 5} for c in cs}}
         for q, cs in cites.items()}))  # count 1: a citation's citation, not a citation
    qrel = tmp_path / "scidocs"
    qrel.mkdir()
    (qrel / "metadata.json").write_text(json.dumps(papers))
    (qrel / "test.qrel").write_text("".join(f"{q} 0 {c} 1\n" for q, cs in cites.items() for c in cs) +
                                    "".join(f"{q} 0 p59 0\n" for q, cs in cites.items() if "p59" not in cs))
    s2 = tmp_path / "s2orc.jsonl"
    s2.write_text("".join(json.dumps({"paper_id": p, "title": v["title"], "abstract": v["abstract"],
                                      "authors": [{"first": a.split()[0], "middle": [], "last": a.split()[1]}
                                                  for a in v["authors"]],
                                      "outbound_citations": cites.get(p, [])}) + "\n" for p, v in papers.items()))
    graphs = [read_specter(spec, min_count=1), read_specter(qrel, min_count=1), read_s2orc(s2, min_count=1)]
    for d in graphs[1:]:
        assert np.array_equal(d.citations, graphs[0].citations) and np.array_equal(d.authorship, graphs[0].authorship)
        assert np.array_equal(d.split, graphs[0].split)
    d = graphs[0]
    got = {(d.paper_names[p], d.citer_names[c]) for p, c in d.citations}
    want = {(c, q) for q, cs in cites.items() for c in cs if c != "outside"}
    per_citer = {q: sum(1 for _, x in want if x == q) for q in cites}
    assert got == {(c, q) for c, q in want if per_citer[q] >= 5}  # citers with < 5 citations pruned
    assert min(per_citer.values()) < 5 <= max(per_citer.values())
    for g in graphs:
        assert set(g.author_names) == {f"Ada Lovelace{i}" for i in range(12)}
    assert (d.split == 2).any()  # every paper has 5 authors: all eligible for test


def test_the_recipe_reads_a_specter_directory(tmp_path):
    import json

    from genfeat.cli import main

    papers, cites = _graph_records(80)
    spec = tmp_path / "specter"
    spec.mkdir()
    (spec / "metadata.json").write_text(json.dumps(papers))
    (spec / "data.json").write_text(json.dumps({q: {c: {"count": 5} for c in cs} for q, cs in cites.items()}))
    (tmp_path / "vectors.txt").write_text("paper 0.1 0.2\ntopic 0.3 -0.1\nwords 0.5 0.5\n")
    assert main(["run", "citation", "--preset", "tiny", "--data.source", f"specter:{spec}", "--data.vectors",
                 str(tmp_path / "vectors.txt"), "--data.batch_size", "8", "--train.max_steps", "10",
                 "--train.eval_every", "5", "--eval.lambdas", "[0.2]", "--out", str(tmp_path / "run")]) == 0
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["dataset"]["name"] == "specter specter" and s["dataset"]["papers"] == 80
    assert s["dataset"]["authors"] == 12 and s["dataset"]["citation_pairs"] == sum(
        len(cs) - 1 for q, cs in cites.items() if len(cs) - 1 >= 5)  # the in-set citations of citers kept


def test_genfeat_data_build_writes_the_graph(tmp_path, monkeypatch, capsys):
    import json

    from genfeat.cli import main
    from genfeat.data import built_tasks
    from genfeat.data.debian_citations import debian_citations

    _archive(tmp_path)
    monkeypatch.setitem(built_tasks.GRAPHS, "debian-citations",
                        lambda seed: debian_citations(tmp_path, seed=seed, test_fraction=0.25, min_count=1))
    assert main(["data", "build", "debian-citations", "--split-seed", "1", "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    described = json.loads(printed[: printed.index("\nwrote")])
    assert described["task"] == "debian-citations" and described["split_seed"] == 1
    meta = json.loads((tmp_path / "out" / "citations.json").read_text())
    assert meta["describe"]["sha256"] == described["sha256"] and len(meta["papers"]) == described["sizes"]["papers"]
    with pytest.raises(Exception, match="graph"):
        built_tasks.build_task("debian-citations")
