"""The universal-schema matrix, the spec §10.1 generator, and the recipe: the §10.2 claims at the tiny preset and
a resume across the USchema phase boundary."""

import json
import shutil

import numpy as np
import pytest

from genfeat.cli import main
from genfeat.data.schema_synthetic import SyntheticSchemaConfig, synthetic_schema
from genfeat.data.universal_schema import (
    EOS,
    PAD,
    RELATION,
    UNK,
    SchemaMatrix,
    encode_patterns,
    pattern_tokens,
)
from genfeat.errors import DataError
from genfeat.train.checkpoint import load_weights
from tests.resume_check import assert_same, summary_numbers


def _matrix(**kw):
    base = dict(name="m", vocab=["<pad>", "<eos>", "<unk>", "a", "b", "rel"], rows=[(3, 4), (4,), (5,)],
                row_types=np.array([0, 0, 1]), row_names=["a b", "b", "rel"], pair_names=["p0", "p1", "p2"],
                cells=np.array([[0, 0], [0, 1], [1, 1], [2, 0], [2, 1], [2, 2]]))
    return SchemaMatrix(**(base | kw))


def test_matrix_rows_instances_and_bad_input():
    m = _matrix()
    ids = m.input_ids()
    assert ids.tolist() == [[3, 4, EOS], [PAD, 4, EOS], [PAD, 5, EOS]]  # left-padded "tokens <eos>"
    assert m.pair_counts().tolist() == [2, 3, 1] and m.row_counts().tolist() == [2, 1, 3]
    rows, pairs = m.instances(max_pairs=2, seed=0)
    assert rows.tolist() == [0, 1, 2, 2] and (pairs >= 0).sum(1).tolist() == [2, 1, 2, 1]
    got = sorted((int(r), int(p)) for r, ps in zip(rows, pairs, strict=True) for p in ps if p >= 0)
    assert got == sorted(map(tuple, m.cells.tolist()))  # every cell exactly once
    assert m.checksum() != _matrix(cells=m.cells[:-1]).checksum()
    with pytest.raises(DataError, match="repeated"):
        _matrix(cells=np.array([[0, 0], [0, 0]]))
    with pytest.raises(DataError, match="does not exist"):
        _matrix(cells=np.array([[0, 3]]))
    with pytest.raises(DataError, match="outside the vocabulary"):
        _matrix(rows=[(3, 9), (4,), (5,)])
    with pytest.raises(DataError, match="outside the vocabulary"):  # <unk> is for new text, not for rows
        _matrix(rows=[(3, UNK), (4,), (5,)])
    assert encode_patterns(["$ARG1 A  zz $ARG2", "b"], m.vocab).tolist() == [
        [UNK, 3, UNK, UNK, EOS], [PAD, PAD, PAD, 4, EOS]]  # placeholders not in this vocabulary: <unk>
    assert pattern_tokens("$ARG1 Works\xa0with $ARG2") == ["$ARG1", "works", "with", "$ARG2"]


def test_synthetic_generator_follows_the_spec():
    syn = synthetic_schema(SyntheticSchemaConfig(seed=3))
    m = syn.matrix
    np.testing.assert_allclose(syn.centres @ syn.centres.T, np.eye(8), atol=1e-12)  # orthonormal
    assert m.stats() == {"patterns": 1500, "relations": 8, "pairs": 1600, "cells": 1500 * 5 + 1600, "vocab": 53}
    for i in range(1500):  # a pattern's pairs belong to the relations of its keywords
        rels = {int(m.vocab[t][2]) for t in m.rows[i] if m.vocab[t].startswith("kw")}
        assert 1 <= len(rels) <= 2
        assert set(syn.pair_relation[m.cells[m.cells[:, 0] == i, 1]]) <= rels
    kb = syn.relation_rows
    assert (m.row_types[kb] == RELATION).all() and (m.row_counts()[kb] == 200).all()
    for a, b, (r1, r2) in zip(syn.probe_two, syn.probe_one, syn.probe_relations, strict=True):
        a, b = [m.vocab[t] for t in a if t > UNK], [m.vocab[t] for t in b if t > UNK]
        assert set(b) < set(a) and len(a) == 4 and f"kw{r2}" not in "".join(b) and any(f"kw{r1}_" in w for w in b)
    assert np.linalg.norm(syn.pair_init - syn.centres[syn.pair_relation], axis=1).mean() < 0.8


def _claims(tmp_path, *args):
    out = tmp_path / "_".join(a.strip("-").replace(".", "") for a in args) if args else tmp_path / "k3"
    assert main(["run", "universal_schema", "--preset", "tiny", "--out", str(out), *args]) == 0
    return json.loads((out / "summary.json").read_text())


def test_tiny_multi_facet_recovers_two_facets_and_direction_single_facet_cannot(tmp_path):
    """Spec §10.2 at the tiny preset (1,500 steps): U1 >= 0.5 with K = 3 and <= 0.05 with K = 1; U2 > 0.95 for
    both; U3 >= 0.75 with K = 3 and exactly ½ with K = 1; U4 with KB rows."""
    multi = _claims(tmp_path)
    single = _claims(tmp_path, "--model.k", "1", "--model.k_rel", "1")
    assert multi["valid_u1_two_facets"] >= 0.5 and single["valid_u1_two_facets"] <= 0.05
    assert min(multi["valid_u2_one_relation"], single["valid_u2_one_relation"]) > 0.95
    assert multi["valid_u3_direction"] >= 0.75 and single["valid_u3_direction"] == 0.5
    assert multi["valid_u4_top1"] >= 0.95 and multi["valid_u4_top2"] >= 0.9
    assert multi["valid_facet_cosine"] < 0.5 and single["valid_facet_cosine"] == 1.0


def test_uschema_cannot_score_new_patterns(tmp_path):
    s = _claims(tmp_path, "--model.kind", "uschema", "--train.max_steps", "50", "--train.eval_every", "50")
    assert "valid_loss" in s and not any(k.startswith("valid_u") for k in s)


ALG2 = ["universal_schema", "--preset", "tiny", "--data.pair_init", "uschema", "--optim.pair_optimizer", "sgd",
        "--train.max_steps", "40", "--train.eval_every", "20", "--uschema.max_steps", "40",
        "--uschema.eval_every", "20", "--train.plateau_factor", "0.25"]


def test_algorithm_2_starts_the_pair_table_from_the_uschema_phase(tmp_path):
    out = tmp_path / "r"
    assert main(["run", *ALG2, "--train.max_steps", "2", "--train.eval_every", "1", "--optim.pair_lr", "1e-9",
                 "--uschema.lr", "0.02", "--out", str(out)]) == 0  # the pair table all but frozen in the second phase
    from genfeat.train.logging import read_metrics

    assert [r["lr"] for r in read_metrics(out / "phases" / "uschema") if "lr" in r][0] == 0.02  # the phase's own
    start, end = (load_weights(out / p)["pairs.weight"] for p in ("phases/uschema/model.safetensors",
                                                                    "model.safetensors"))
    assert (start - end).abs().max() < 1e-6 and start.std() > 0.05


def test_algorithm_2_resumes_across_the_uschema_phase(tmp_path, capsys):
    """A run stopped inside the USchema phase, or after it and before the multi-facet phase's first checkpoint,
    resumes to the weights and summary of an uninterrupted run; a finished phase is reloaded, not retrained."""
    a = tmp_path / "a"
    assert main(["run", *ALG2, "--out", str(a)]) == 0
    phase = a / "phases" / "uschema"
    assert json.loads((phase / "phase.json").read_text())["steps"] == 40
    inside = ["phases/uschema/checkpoints/step_00000020", "phases/uschema/metrics.jsonl",
              "phases/uschema/model.safetensors"]  # a run stopped after step 20 (its best weights so far)
    for name, keep in (("inside", inside),
                       ("after", ["phases/uschema"])):
        b = tmp_path / name
        b.mkdir()
        shutil.copy(a / "config.yaml", b / "config.yaml")
        for k in keep:
            (shutil.copytree if (a / k).is_dir() else shutil.copy)(a / k, b / k)
        before = (b / "phases/uschema/phase.json").stat().st_mtime_ns if name == "after" else None
        capsys.readouterr()
        assert main(["run", "--resume", str(b)]) == 0
        said = capsys.readouterr().out
        assert ("phase uschema: resuming from" in said and "step_00000020" in said) if name == "inside" else \
            "phase uschema: finished before" in said
        if before is not None:
            assert (b / "phases/uschema/phase.json").stat().st_mtime_ns == before  # reloaded, not retrained
        for part in ("model.safetensors", "phases/uschema/model.safetensors"):
            assert_same(load_weights(a / part), load_weights(b / part), f"{name}: {part}")
        assert_same(summary_numbers(a), summary_numbers(b), f"{name}: summary")
