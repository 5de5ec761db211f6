"""The planetoid recipe end to end on the synthetic graph, inductive leakage, and (opt-in, slow) the real
kernel-docs graph."""

from __future__ import annotations

import json

import numpy as np
import pytest

from genfeat.cli import main
from genfeat.data.graphs import GraphDataConfig, load_graph
from genfeat.errors import ConfigError
from genfeat.models.planetoid.train import make_sampler
from genfeat.paradigms.planetoid import run_method
from genfeat.recipes import planetoid as P


@pytest.mark.parametrize("method", [m for m in P.METHODS if m not in ("manireg_i", "semiemb_i", "tsvm_i")])
def test_every_method_runs_from_the_cli(method, tmp_path):  # the _i baselines: the never-read-test-nodes test
    out = tmp_path / method
    assert main(["run", "planetoid", "--preset", "tiny", "--method", method, "--out", str(out)]) == 0
    res = json.loads((out / "summary.json").read_text())
    assert res["method"] == method
    for split in ("train", "valid", "test"):
        assert 0.0 <= res[f"{split}_acc"] <= 1.0
    assert res["test_acc"] > 0.4  # 4 balanced classes: chance is 0.25; every method uses features or graph
    assert (out / "report.md").is_file() and (out / "config.yaml").is_file()
    if method.startswith("planetoid_"):
        assert res["sampler_triples_per_s"] > 0 and (out / "metrics.jsonl").is_file()
        branches = res["branch_test_acc"]
        assert set(branches) == ({"embedding h^l(e)"} if method == "planetoid_g" else
                                 {"features h^k(x)", "embedding h^l(e)"})
        assert all(0.0 <= v <= 1.0 for v in branches.values())


def test_a_budget_inside_the_warm_up_is_warned_about(tmp_path, capsys):
    """A step budget that ends in the context warm-up trains no classifier: said before training."""
    assert main(["run", "planetoid", "--preset", "tiny", "--method", "planetoid_t", "--train.warmup_steps", "50",
                 "--train.max_steps", "40", "--out", str(tmp_path / "w")]) == 0
    assert "train.max_steps 40 ends within the 50-step context warm-up" in capsys.readouterr().err
    assert main(["run", "planetoid", "--preset", "tiny", "--method", "planetoid_t", "--train.warmup_steps", "50",
                 "--train.max_steps", "60", "--out", str(tmp_path / "ok")]) == 0
    assert "warm-up" not in capsys.readouterr().err


def test_unknown_method_is_a_config_error():
    with pytest.raises(ConfigError, match="method must be one of"):
        P.PlanetoidRunConfig(method="nope")
    assert main(["run", "planetoid", "--preset", "tiny", "--method", "nope"]) == 2


def test_inductive_training_never_sees_test_nodes():
    data = load_graph(GraphDataConfig(name="sbm_b"))
    sampler = make_sampler(data, P.SamplerConfig(r2=0.9), "I", seed=0)
    i, c, _, _ = sampler.sample(50000)
    used = np.union1d(i.numpy(), c.numpy())
    assert not np.isin(data.test_idx, used).any()
    transductive = make_sampler(data, P.SamplerConfig(r2=0.9), "T", seed=0)
    assert np.isin(data.test_idx, transductive.sample(50000)[1].numpy()).any()  # the control can fail


def test_split_seed_redraws_a_standard_split():
    a = load_graph(GraphDataConfig(name="sbm_a", split_seed=3))
    b = load_graph(GraphDataConfig(name="sbm_a"))
    assert len(a.train_idx) == 80 and np.bincount(a.labels[a.train_idx]).tolist() == [20] * 4
    assert len(a.val_idx) == len(b.val_idx) and len(a.test_idx) == len(b.test_idx)
    assert not np.array_equal(a.train_idx, b.train_idx)
    a.validate()


@pytest.mark.slow
def test_kernel_docs_graph_from_the_real_package(tmp_path):
    from genfeat.data import kernel_docs as K
    from genfeat.data.sources import fetch

    fetch("linux-doc")
    g = K.load_kernel_docs(out_dir=tmp_path)
    g.validate()
    assert g.num_classes >= 10 and g.num_nodes > 2000 and g.num_features == 1500
    assert len(g.train_idx) == 20 * g.num_classes and len(g.val_idx) == 500 and len(g.test_idx) == 1000
    assert g.edge_homophily() > 0.5 and g.num_edges > g.num_nodes
    rebuilt = K.build_graph(K.read_docs(K.require("linux-doc") / K.SOURCES_DIR))
    assert rebuilt.num_edges == g.num_edges  # the files hold the same graph as a fresh build


def test_a_root_with_other_planetoid_files_suggests_the_name(tmp_path):
    (tmp_path / "ind.mygraph.graph").write_bytes(b"")
    with pytest.raises(ConfigError, match="--data.name mygraph"):
        load_graph(GraphDataConfig(name="cora", root=str(tmp_path)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ind.mygraph.graph"]  # nothing downloaded into it


@pytest.mark.parametrize("method", ["planetoid_i", "graphemb"])  # planetoid_t: tests/test_recipe_matrix.py
def test_planetoid_resumes_bit_for_bit(method, tmp_path):
    """Fractional T1 (the schedule draws from the method's random stream) and N1 below the labeled set (random
    supervised batches from it): a copy of the run without its last checkpoint resumes from the one before to
    the same final weights, bit for bit (GraphEmb: its classifier, the last phase, resumes; its embedding phase:
    the next test)."""
    from tests.resume_check import assert_resume_is_exact

    assert_resume_is_exact(["planetoid", "--preset", "tiny", "--method", method, "--train.t1", "1.5", "--train.n1",
                            "30", "--train.warmup_steps", "400", "--train.rounds", "100"], tmp_path)


def test_graphemb_resumes_inside_its_embedding_phase(tmp_path):
    """GraphEmb's context-only embeddings are an earlier phase (run/phases/embeddings, not evaluated): a copy of
    the run cut back into that phase (its last checkpoint, its end record and everything of the classifier gone)
    resumes there and ends with the same embeddings, classifier weights and summary numbers; the summary counts
    both phases' steps."""
    import shutil

    from genfeat.train.checkpoint import latest_checkpoint
    from tests.resume_check import assert_same, summary_numbers

    a, b = tmp_path / "a", tmp_path / "b"
    args = ["run", "planetoid", "--preset", "tiny", "--method", "graphemb", "--train.warmup_steps", "300",
            "--train.rounds", "100"]
    assert main([*args, "--out", str(a)]) == 0
    phase = json.loads((a / "phases" / "embeddings" / "phase.json").read_text())
    assert phase["evaluation"] == {} and phase["steps"] == 400
    assert json.loads((a / "summary.json").read_text())["steps"] == 400 + P.tiny().baseline.lr_steps
    shutil.copytree(a, b)
    emb = b / "phases" / "embeddings"
    for p in [emb / "phase.json", emb / "model.safetensors", latest_checkpoint(emb)]:
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    for p in b.iterdir():
        if p.name not in ("config.yaml", "phases"):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    assert main(["run", "--resume", str(b)]) == 0
    for d in ("phases/embeddings", "."):  # the embeddings, the classifier
        assert_same(_weights(a / d), _weights(b / d), d)
    assert_same(summary_numbers(a), summary_numbers(b), "summary")


def test_planetoid_honours_train_max_steps(tmp_path):
    """train.max_steps is the whole step budget (warm-up included), the spelling every recipe honours."""
    out = tmp_path / "run"
    assert main(["run", "planetoid", "--preset", "tiny", "--train.warmup_steps", "400", "--train.max_steps", "520",
                 "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["steps"] == 520 and s["best_round"] <= 120


def _weights(run):
    from genfeat.train.checkpoint import load_weights

    return load_weights(run / "model.safetensors")


def test_graph_baselines_reduce_to_their_feature_baselines(tmp_path):
    """ManiReg with gamma = 0 is Feat (logistic regression) and SemiEmb with lambda = 0 is Feat's MLP, bit for
    bit; with their graph terms on, the weights move."""
    import dataclasses

    data = load_graph(GraphDataConfig(name="sbm_b"))
    cfg = P.tiny()
    off = dataclasses.replace(cfg.baseline, manireg_gamma=0.0, semiemb_lambda=0.0)
    runs = {"manireg": {"off": ("manireg_t", off), "on": ("manireg_t", cfg.baseline), "plain": ("feat_lr", off)},
            "semiemb": {"off": ("semiemb_t", off), "on": ("semiemb_t", cfg.baseline), "plain": ("feat_mlp", off)}}
    for name, variants in runs.items():
        for run, (method, baseline) in variants.items():
            run_method(dataclasses.replace(cfg, method=method, baseline=baseline), data, tmp_path / name / run)
        w = {r: _weights(tmp_path / name / r) for r in variants}
        assert all(np.array_equal(w["off"][k], w["plain"][k]) for k in w["plain"]), name
        assert not all(np.array_equal(w["on"][k], w["plain"][k]) for k in w["plain"]), name


def test_inductive_graph_baselines_never_read_test_nodes(tmp_path):
    """manireg_i / semiemb_i: the trained weights do not change when the test nodes' features and edges change
    (to float rounding: the sparse products sum in another order); the transductive ManiReg, the control, moves."""
    import dataclasses

    import scipy.sparse as sp

    data = load_graph(GraphDataConfig(name="sbm_b"))
    x = data.features.tolil()
    x[data.test_idx] = 0.0
    a = data.adj.tolil()
    a[data.test_idx[:5], data.test_idx[5:10]] = 1.0
    changed = dataclasses.replace(data, features=x.tocsr(), adj=sp.csr_matrix(a))
    cfg = P.tiny()
    for method in ("manireg_i", "semiemb_i", "manireg_t"):
        for tag, g in (("a", data), ("b", changed)):
            run_method(dataclasses.replace(cfg, method=method), g, tmp_path / method / tag)
        wa, wb = _weights(tmp_path / method / "a"), _weights(tmp_path / method / "b")
        gap = max(float((wa[k] - wb[k]).abs().max()) for k in wa)
        assert (gap > 1e-3) if method == "manireg_t" else (gap < 1e-5), (method, gap)
