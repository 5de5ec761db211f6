"""The universal-schema pieces a run composes: the matrix by name (`data/schema_sources.py`), the token table's
start, the stepping of the pair table (`models/universal_schema/method.py`), the objective a kind trains with and
the relation-extraction scores of a run (`tasks/universal_schema.py`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genfeat.data.schema_sources import SchemaDataConfig, load_schema, token_probs
from genfeat.errors import ConfigError
from genfeat.models.facets import input_table_start
from genfeat.models.universal_schema import (
    SchemaOptimConfig,
    UniversalSchemaConfig,
    build_model,
    schema_method,
)
from genfeat.tasks import universal_schema as T
from genfeat.train.loop import TrainConfig


def test_the_synthetic_matrix_follows_the_run_seed_and_draws_vectors_only_when_asked():
    dc = SchemaDataConfig(synthetic_vectors=6)
    m0, syn0, v0 = load_schema(dc, 0, vectors_wanted=True)
    m1, _, _ = load_schema(dc, 1, vectors_wanted=True)
    assert syn0 is not None and v0.shape == (len(m0.vocab), 6) and m0.checksum() != m1.checksum()
    m0b, _, none = load_schema(dc, 0, vectors_wanted=False)
    assert none is None and m0b.checksum() == m0.checksum()
    p = token_probs(m0)
    counts = np.bincount(np.concatenate([np.asarray(r) for r in m0.rows]), minlength=len(m0.vocab))
    assert p.sum() == pytest.approx(1.0) and np.allclose(p * counts.sum(), counts)
    with pytest.raises(ConfigError, match="pair_init=data"):
        SchemaDataConfig(source="news")


def test_the_token_table_starts_from_the_vectors_it_has():
    vecs = np.array([[0.0, 0.0], [1.0, 2.0], [0.0, 3.0]])
    torch.manual_seed(0)
    init = input_table_start(vecs, 2)
    assert init[1].tolist() == [1.0, 2.0] and init[2].tolist() == [0.0, 3.0]
    assert 0 < init[0].abs().max() < 0.2  # no vector: a small random start, not zeros
    assert input_table_start(vecs, 3) is None and input_table_start(None, 2) is None


def test_sgd_steps_the_pair_table_and_h_at_their_own_rates():
    cfg = UniversalSchemaConfig(encoder="bow", decoder="linear", d_model=8, d_target=4, k=2, k_rel=2, n_head=2,
                                d_inner=16, n_enc=1, n_dec=1, vocab_size=20, max_len=6)
    model = build_model(cfg, 10, 30, d_word=5)
    train = TrainConfig(max_steps=10, lr=3e-3)
    sgd = schema_method(model, lambda m, b: (None, 0), SchemaOptimConfig("sgd", pair_lr=0.7, h_lr=0.2), train)
    by_name = {name: opt for name, opt in sgd.optimizers.items()}
    assert set(by_name) == {"model", "pairs", "H"}
    assert by_name["pairs"].param_groups[0]["params"] == [model.pairs.weight]
    assert by_name["pairs"].param_groups[0]["lr"] == 0.7 and by_name["H"].param_groups[0]["lr"] == 0.2
    in_model = {id(p) for g in by_name["model"].param_groups for p in g["params"]}
    assert id(model.pairs.weight) not in in_model and id(model.H.weight) not in in_model
    assert len(in_model) == sum(1 for p in model.parameters()) - 2
    adam = schema_method(model, lambda m, b: (None, 0), SchemaOptimConfig(), train)
    assert set(adam.optimizers) == {"model"}
    assert id(model.pairs.weight) in {id(p) for g in adam.optimizers["model"].param_groups for p in g["params"]}


def test_each_kind_trains_with_its_objective():
    facet = T.objective_for("multi_facet", 30, gamma=0.2, assign="kmeans", seed=1, batch_groups=2)
    assert type(facet) is T.FacetObjective and (facet.gamma, facet.assign, facet.groups) == (0.2, "kmeans", 2)
    for kind in ("uschema", "cuschema"):
        assert type(T.objective_for(kind, 30)) is T.LogisticObjective


def test_extraction_scores_name_each_scorer(monkeypatch):
    calls = []

    class Extraction:
        def __init__(self, matrix):
            pass

        def evaluate(self, sim):
            return {"valid_f1": float(sim), "test_p": float(sim) + 1}

        def ensemble(self, a, b):
            calls.append((a, b))
            return {"test_f1": 9.0}

        def stats(self):
            return {"test_gold": 3}

    monkeypatch.setattr(T, "RelationExtraction", Extraction)
    monkeypatch.setattr(T, "relation_scores", lambda model, matrix: model)  # the "model" is its own score
    scores, stats = T.extraction_scores(1.0, None)
    assert scores == {"valid_re_f1": 1.0, "test_re_p": 2.0} and stats == {"test_gold": 3} and not calls
    scores, _ = T.extraction_scores(1.0, None, uschema=5.0)
    assert scores == {"valid_re_f1": 1.0, "test_re_p": 2.0, "valid_uschema_re_f1": 5.0, "test_uschema_re_p": 6.0,
                      "test_ensemble_re_f1": 9.0}
    assert calls == [(5.0, 1.0)]  # USchema's scores first, then this model's
