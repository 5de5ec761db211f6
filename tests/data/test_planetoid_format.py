"""The Planetoid ind.* reader/writer against fixture files written by hand in exactly that format, and
the kernel-docs graph builder on a small rst tree."""

from __future__ import annotations

import collections
import os
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from genfeat.data import kernel_docs as K
from genfeat.data.planetoid import GraphData, read_planetoid, write_planetoid
from genfeat.errors import DataError

# 10 nodes, 4 features, 3 classes. allx = nodes 0..5 (x = the first 3), test ids 6, 8, 9 listed in a
# shuffled order; node 7 is missing from the files (Citeseer's isolated test nodes).
N_ALLX, TEST_ORDER = 6, [9, 6, 8]
FEATS = collections.defaultdict(lambda: [0], {i: [i % 4, (i + 1) % 4] for i in range(10)})  # words i%4, (i+1)%4
LABEL = collections.defaultdict(lambda: 1, {i: i % 3 for i in range(10)})
EDGES = [(0, 1), (1, 2), (2, 6), (6, 9), (3, 4), (8, 3), (9, 6)]  # (9, 6) repeats (6, 9) reversed


def _rows(ids):
    m = np.zeros((len(ids), 4), np.float32)
    for r, i in enumerate(ids):
        m[r, FEATS[i]] = 1
    return sp.csr_matrix(m)


def _onehot(ids):
    m = np.zeros((len(ids), 3), np.int32)
    m[np.arange(len(ids)), [LABEL[i] for i in ids]] = 1
    return m


def write_fixture(root, name="citeseer", n_allx=N_ALLX, test_order=TEST_ORDER, edges=EDGES, n_train=3):
    graph = collections.defaultdict(list)
    for u, v in edges:
        graph[u].append(v)  # one direction only, as in the citation files
    graph[5]  # an isolated node present as a key  # noqa: B018
    objs = {"x": _rows(range(n_train)), "y": _onehot(range(n_train)), "allx": _rows(range(n_allx)),
            "ally": _onehot(range(n_allx)), "tx": _rows(test_order), "ty": _onehot(test_order), "graph": graph}
    for k, v in objs.items():
        with open(root / f"ind.{name}.{k}", "wb") as f:
            pickle.dump(v, f, protocol=2)
    (root / f"ind.{name}.test.index").write_text("\n".join(map(str, test_order)) + "\n")


def test_reader_matches_the_format(tmp_path):
    write_fixture(tmp_path)
    g = read_planetoid(tmp_path, "citeseer")
    assert g.num_nodes == 10 and g.num_features == 4 and g.num_classes == 3
    for i in [*range(N_ALLX), *TEST_ORDER]:
        assert g.features[i].toarray().nonzero()[1].tolist() == sorted(FEATS[i]), i
        assert g.labels[i] == LABEL[i]
    assert g.features[7].nnz == 0 and g.labels[7] == -1  # the gap
    dense = g.adj.toarray()
    assert (dense == dense.T).all() and dense.diagonal().sum() == 0
    assert {(u, v) for u, v in zip(*np.nonzero(np.triu(dense)), strict=True)} == {
        tuple(sorted(e)) for e in EDGES}
    assert g.train_idx.tolist() == [0, 1, 2]
    assert g.val_idx.tolist() == [3, 4, 5]  # the 500 after the training nodes, cut at len(allx)
    assert g.test_idx.tolist() == [6, 8, 9]


def test_reader_agrees_with_pytorch_geometric(tmp_path):
    pyg_io = pytest.importorskip("torch_geometric.io")
    rng = np.random.default_rng(0)  # PyG takes 500 validation nodes after the training nodes
    test_order = [int(i) for i in rng.permutation(np.arange(520, 560)) if i != 533]  # a Citeseer-style gap
    edges = [tuple(int(v) for v in e) for e in rng.integers(0, 560, (300, 2)) if e[0] != e[1]]
    write_fixture(tmp_path, n_allx=520, test_order=test_order, edges=edges, n_train=12)
    ref = pyg_io.read_planetoid_data(str(tmp_path), "citeseer")
    g = read_planetoid(tmp_path, "citeseer")
    np.testing.assert_array_equal(ref.x.numpy(), g.features.toarray())
    known = g.labels >= 0
    np.testing.assert_array_equal(ref.y.numpy()[known], g.labels[known])
    ref_edges = {tuple(e) for e in ref.edge_index.t().tolist()}  # PyG keeps the dict's directions
    ref_edges |= {(v, u) for u, v in ref_edges}
    assert ref_edges == {(int(u), int(v)) for u, v in zip(*g.adj.nonzero(), strict=True)}
    assert np.flatnonzero(ref.train_mask.numpy()).tolist() == g.train_idx.tolist()
    assert set(np.flatnonzero(ref.test_mask.numpy())) >= set(g.test_idx.tolist())


def test_write_then_read_roundtrip(tmp_path):
    rng = np.random.default_rng(0)
    n = 700
    labels = rng.integers(0, 3, n)
    feats = sp.random(n, 30, density=0.1, format="csr", random_state=0, dtype=np.float32)
    feats.data[:] = 1
    a = sp.random(n, n, density=0.01, format="csr", random_state=1)
    a.data[:] = 1  # the format stores a binary graph
    from genfeat.data.planetoid import standard_split, symmetrize

    adj = symmetrize(a)
    train, val, test = standard_split(labels, 5, 500, 150, seed=0)
    g = GraphData("toy", feats, labels, adj, train, val, test)
    order = write_planetoid(tmp_path, g)
    h = read_planetoid(tmp_path, "toy")
    assert (h.features != g.features[order]).nnz == 0
    np.testing.assert_array_equal(h.labels, labels[order])
    assert (h.adj != adj[order][:, order]).nnz == 0
    assert sorted(order[h.train_idx]) == sorted(train)
    assert sorted(order[h.val_idx]) == sorted(val)
    assert sorted(order[h.test_idx]) == sorted(test)
    test_lines = (tmp_path / "ind.toy.test.index").read_text().split()
    assert test_lines != sorted(test_lines)  # listed in a shuffled order, as the original files


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_reader_refuses_code_in_pickles(tmp_path):
    write_fixture(tmp_path)
    with open(tmp_path / "ind.citeseer.graph", "wb") as f:
        pickle.dump(_Evil(), f, protocol=2)
    with pytest.raises(DataError, match="refusing to unpickle"):
        read_planetoid(tmp_path, "citeseer")


def test_reader_names_a_missing_file(tmp_path):
    write_fixture(tmp_path)
    (tmp_path / "ind.citeseer.ty").unlink()
    with pytest.raises(DataError, match=r"ind\.citeseer\.ty"):
        read_planetoid(tmp_path, "citeseer")


# ------------------------------------------------------------------------------- kernel-docs graph
DOCS = {
    "net/index": "Networking\n==========\n\n.. toctree::\n   :maxdepth: 1\n\n   intro\n   Title <drivers/*>\n\n"
                 "Packets travel through sockets.\n",
    "net/intro": ".. _net_intro:\n\nIntro\n=====\nSee :doc:`the ABI <../mm/abi>` and sockets packets.\n",
    "net/drivers/e1000": "Driver for packets. Read Documentation/mm/index.rst for memory.\n",
    "net/drivers/ixgbe": "Another packets driver, see :ref:`mm pages <mm_pages>`.\n",
    "mm/index": ".. toctree::\n\n   abi\n   /mm/pages\n\nMemory pages allocator.\n",
    "mm/abi": "Memory ABI pages, see :ref:`net_intro`.\n",
    "mm/pages": ".. _mm_pages:\n\nPages\n=====\nMemory pages. Unknown :doc:`missing`.\n",
    "tiny/one": "too small an area\n",
    "translations/zh/net": "translated :doc:`/net/index`\n",
}


def test_kernel_docs_edges_and_features():
    g = K.build_graph({k: v for k, v in DOCS.items() if not k.startswith("translations/")},
                      K.KernelDocsConfig(min_class_size=3, vocab_size=50, min_df=1, max_df=1.0, per_class=1,
                                         num_val=0, num_test=2))
    assert g.class_names == ["mm", "net"]  # "tiny" has 1 document (< 3)
    name = {d: i for i, d in enumerate(g.node_names)}
    edges = {tuple(sorted((g.node_names[u], g.node_names[v]))) for u, v in zip(*g.adj.nonzero(), strict=True)}
    assert edges == {
        ("net/index", "net/intro"), ("net/drivers/e1000", "net/index"), ("net/drivers/ixgbe", "net/index"),  # toctree
        ("mm/abi", "net/intro"),  # :doc: relative path (and :ref: back)
        ("mm/index", "net/drivers/e1000"),  # Documentation/ path mention
        ("mm/pages", "net/drivers/ixgbe"),  # :ref: with title
        ("mm/abi", "mm/index"), ("mm/index", "mm/pages"),  # toctree, relative and absolute
    }
    assert g.labels[name["mm/abi"]] == 0 and g.labels[name["net/intro"]] == 1
    vocab = g.vocabulary
    assert "packets" in vocab and "memory" in vocab
    assert "abi" in vocab  # link text is prose ...
    assert "drivers" not in vocab and "maxdepth" not in vocab  # ... link targets and toctree blocks are not


def test_kernel_docs_build_is_deterministic(tmp_path):
    texts = {f"{area}/doc{i}": f"{area} words {' '.join(f'w{(i * 7 + j) % 13}' for j in range(5))} "
             f":doc:`doc{(i + 1) % 30}` {'shared' if i % 2 else 'other'} text\n"
             for area in ("alpha", "beta") for i in range(30)}
    texts = {k: v.replace("w", "word") for k, v in texts.items()}
    cfg = K.KernelDocsConfig(min_class_size=10, vocab_size=20, min_df=2, per_class=3, num_val=0, num_test=20)
    a, b = K.build_graph(texts, cfg), K.build_graph(dict(reversed(list(texts.items()))), cfg)
    assert a.node_names == b.node_names and a.vocabulary == b.vocabulary
    assert (a.adj != b.adj).nnz == 0 and (a.features != b.features).nnz == 0
    np.testing.assert_array_equal(a.train_idx, b.train_idx)
    np.testing.assert_array_equal(a.test_idx, b.test_idx)


def test_published_graphs_are_checked_against_their_blob_ids(tmp_path, monkeypatch):
    """Cora / Citeseer / Pubmed files are checked against the published ones (git blob ids: b"hello\\n" is git's
    ce013625...); another version of one file is a ChecksumError naming it, a missing one a DataError."""
    from genfeat.data import planetoid as P
    from genfeat.errors import ChecksumError, DataError

    assert P.git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    files = {s: f"contents of {s}".encode() for s in (*P.SUFFIXES, "test.index")}
    for s, data in files.items():
        (tmp_path / f"ind.cora.{s}").write_bytes(data)
    monkeypatch.setitem(P.PLANETOID_BLOBS, "cora", {s: P.git_blob_id(d) for s, d in files.items()})
    P.check_planetoid_files(tmp_path, "cora")
    (tmp_path / "ind.cora.ally").write_bytes(b"truncated")
    with pytest.raises(ChecksumError, match="ind.cora.ally"):
        P.check_planetoid_files(tmp_path, "cora")
    (tmp_path / "ind.cora.graph").unlink()
    with pytest.raises(DataError, match="ind.cora"):
        P.check_planetoid_files(tmp_path, "cora")
    P.check_planetoid_files(tmp_path, "toy")  # a graph without a manifest
