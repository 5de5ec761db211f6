"""Graphs for semi-supervised node classification, and the Planetoid `ind.<name>.*` file format.

The format (Yang et al. 2016, thesis Y §3.3; the files of `kimiyoung/planetoid`, later used by GCN,
PyG and DGL) is eight Python-2 pickles per data set:

    ind.<name>.x          scipy CSR, features of the labeled training nodes (the first len(y) nodes)
    ind.<name>.y          one-hot labels of those nodes
    ind.<name>.allx       features of every non-test node (labeled and unlabeled), node ids 0..len(allx)-1
    ind.<name>.ally       their one-hot labels (known to the files; unlabeled in the SSL protocol)
    ind.<name>.tx / .ty   features and one-hot labels of the test nodes, in the order of test.index
    ind.<name>.graph      dict {node id: [neighbour ids]}
    ind.<name>.test.index one node id per line: the id of each row of tx/ty

Standard split (GCN/PyG "public"): train = the first len(y) nodes, validation = the next 500, test =
the ids in test.index. Citeseer's test ids have gaps (isolated nodes missing from the files): those
nodes get zero features and label -1 (unknown), as in the reference loaders.

Loading uses a restricted unpickler that only rebuilds numpy arrays, scipy sparse matrices, lists
and dicts, so a downloaded file cannot run code. Reading and writing need scipy (`genfeat[graph]`).
"""

from __future__ import annotations

import collections
import hashlib
import io
import pickle
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from genfeat.errors import ChecksumError, DataError

SUFFIXES = ("x", "y", "tx", "ty", "allx", "ally", "graph")
PLANETOID_URL = "https://github.com/kimiyoung/planetoid/raw/master/data"
# The manifest of the download: each file's git blob id in kimiyoung/planetoid (commit af6abf46, data/; tkipf/gcn
# holds the same blobs), so a copy from either repository, or PyG's raw/ folder of them, checks too.
PLANETOID_BLOBS = {
    "cora": {"x": "c4a91d008245403e7f26aa616b437191509793c0", "y": "58e30ef120d3553cfaac33ff28c6b5436dbef661",
             "tx": "6e856d777401ee15dc8619db76c97d0a40ba2d60", "ty": "da1734ab670b5c8ecee78a9c30b35566df916f4b",
             "allx": "44d53b1fece343538e45592caac521d73c6f98d6", "ally": "04fbd0b083d09341fcf16b395c642329637f0542",
             "graph": "4d3bf85dfc8b1c105a2c995597a1b3eed6947925",
             "test.index": "ded8092db4cd767a367eebe09003b954a5316f24"},
    "citeseer": {"x": "f094104a66f2689ffbd01085fe6a856689e9db9e", "y": "e857ac49b611da98e101a068cf4855350274f68a",
                 "tx": "b2aff18aa1fc6f4f5e8c64db7643b59b24e42584", "ty": "3795f79df0cd1123f4478b77c148a5fbacc4cefb",
                 "allx": "592091071ac35b78599c722d0e60b1c655711728",
                 "ally": "7503f81a0b6ac1cc21cb5a97073542a6b1dfe99c",
                 "graph": "a01dca663d0103c130f525017a4a9c313037e286",
                 "test.index": "62d9e3d5ed53c66b069125af98529d76c70d9b3e"},
    "pubmed": {"x": "16c0eca8d2b3297014ff80327416f9332eda10d7", "y": "e86670576c85340eeb2271b3c918bfa89322b2cf",
               "tx": "eee4f3c988fde0da87a9ec7b01ca5e7863c1b1f1", "ty": "225a0bb9bb6430e3925d04688daf6a0da964c07a",
               "allx": "3b86bccf08111c37c632a9dd8ab63db25ea76361", "ally": "4c8bcdc80882dd225fe4dd4fafd723baa616ac97",
               "graph": "76eb87e628a6b9d43fc31ea42c8c6c8f3e52b404",
               "test.index": "41f6befcb7750cc4858cb852f2b349a9598cb2f4"},
}
PLANETOID_NAMES = ("cora", "citeseer", "pubmed")


def _scipy_sparse() -> Any:
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - depends on the environment
        raise DataError("graph data needs scipy: pip install 'genfeat[graph]'") from None
    return sp


@dataclass
class GraphData:
    """A graph for semi-supervised node classification.

    features: (N, F) scipy CSR float32; labels: (N,) int64, -1 where unknown; adj: (N, N) scipy CSR
    float32, symmetric for undirected graphs, no self loops; train/val/test_idx: int64 node ids.
    """

    name: str
    features: Any
    labels: np.ndarray
    adj: Any
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    class_names: list[str] | None = None
    node_names: list[str] | None = None
    vocabulary: list[str] | None = None  # the word of each feature column, when known

    @property
    def num_nodes(self) -> int:
        return int(self.labels.shape[0])

    @property
    def split_idx(self) -> dict[str, np.ndarray]:
        """{"train", "valid", "test"} -> node ids."""
        return {"train": self.train_idx, "valid": self.val_idx, "test": self.test_idx}

    @property
    def num_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def num_classes(self) -> int:
        return int(self.labels.max()) + 1

    @property
    def num_edges(self) -> int:
        """Undirected edges (each stored pair counted once)."""
        return int(self.adj.nnz // 2)

    def edge_homophily(self) -> float:
        """Fraction of edges whose endpoints share a (known) label."""
        a = self.adj.tocoo()
        known = (self.labels[a.row] >= 0) & (self.labels[a.col] >= 0)
        return float((self.labels[a.row] == self.labels[a.col])[known].mean())

    def summary(self) -> str:
        return (f"{self.name}: {self.num_nodes} nodes, {self.num_edges} undirected edges, {self.num_features} "
                f"features, {self.num_classes} classes, split {len(self.train_idx)}/{len(self.val_idx)}/"
                f"{len(self.test_idx)}, edge homophily {self.edge_homophily():.3f}")

    def validate(self) -> None:
        n = self.num_nodes
        if self.features.shape[0] != n or self.adj.shape != (n, n):
            raise DataError(f"{self.name}: features {self.features.shape} / adj {self.adj.shape} do not match "
                            f"{n} nodes")
        for split in ("train_idx", "val_idx", "test_idx"):
            idx = getattr(self, split)
            if len(idx) and (idx.min() < 0 or idx.max() >= n):
                raise DataError(f"{self.name}: {split} has ids outside [0, {n})")
            if len(idx) and (self.labels[idx] < 0).any():
                raise DataError(f"{self.name}: {split} contains nodes without a label")
        parts = np.concatenate([self.train_idx, self.val_idx, self.test_idx])
        if len(np.unique(parts)) != len(parts):
            raise DataError(f"{self.name}: train/val/test splits overlap")


def symmetrize(adj: Any) -> Any:
    """Undirected, de-duplicated, binary-or-weighted adjacency without self loops (pitfall 7)."""
    sp = _scipy_sparse()
    a = sp.csr_matrix(adj, dtype=np.float32)
    a = a.maximum(a.T).tocsr()
    a.setdiag(0)
    a.eliminate_zeros()
    a.sort_indices()
    return a


def standard_split(labels: np.ndarray, per_class: int = 20, num_val: int = 500, num_test: int = 1000,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`per_class` labeled nodes per class, then `num_val` and `num_test` nodes drawn from the rest."""
    rng = np.random.default_rng(seed)
    classes = np.unique(labels[labels >= 0])
    train = []
    for c in classes:
        members = np.flatnonzero(labels == c)
        if len(members) < per_class:
            raise DataError(f"class {c} has {len(members)} nodes, fewer than {per_class} per class")
        train.append(rng.choice(members, per_class, replace=False))
    train_idx = np.sort(np.concatenate(train))
    rest = np.setdiff1d(np.flatnonzero(labels >= 0), train_idx)
    if len(rest) < num_val + num_test:
        raise DataError(f"{len(rest)} labeled nodes left after the training set, need {num_val}+{num_test}")
    rest = rng.permutation(rest)
    return train_idx, np.sort(rest[:num_val]), np.sort(rest[num_val:num_val + num_test])


# ------------------------------------------------------------------------------------- file format
def _multiarray() -> Any:
    try:
        from numpy._core import multiarray  # numpy >= 2
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core import multiarray
    return multiarray


class _SafeUnpickler(pickle.Unpickler):
    """Rebuilds only numpy arrays, scipy sparse matrices and plain containers."""

    def find_class(self, module: str, name: str) -> Any:
        module = {"__builtin__": "builtins", "copy_reg": "copyreg"}.get(module, module)  # Python-2 names
        if module.startswith("scipy.sparse") and name in ("csr_matrix", "csc_matrix", "coo_matrix", "lil_matrix"):
            return getattr(_scipy_sparse(), name)
        if module.startswith("numpy") and name in ("_reconstruct", "scalar"):
            return getattr(_multiarray(), name)
        if module.startswith("numpy") and name in ("ndarray", "dtype"):
            return getattr(np, name)
        allowed = {("collections", "defaultdict"): collections.defaultdict, ("builtins", "list"): list,
                   ("builtins", "dict"): dict, ("builtins", "object"): object, ("builtins", "set"): set,
                   ("_codecs", "encode"): __import__("codecs").encode,  # py2-compatible bytes
                   ("copyreg", "_reconstructor"): __import__("copyreg")._reconstructor}
        if (module, name) in allowed:
            return allowed[(module, name)]
        raise DataError(f"refusing to unpickle {module}.{name} from a Planetoid file")


def _load_pickle(path: Path) -> Any:
    try:
        with open(path, "rb") as f:
            return _SafeUnpickler(io.BytesIO(f.read()), encoding="latin1").load()
    except FileNotFoundError:
        raise DataError(f"missing Planetoid file {path}") from None
    except (pickle.UnpicklingError, EOFError, ValueError) as e:
        raise DataError(f"{path} is not a valid Planetoid pickle: {e}") from None


def read_planetoid(root: str | Path, name: str) -> GraphData:
    """Read `root/ind.<name>.*` into a GraphData with the standard split."""
    sp = _scipy_sparse()
    root = Path(root)
    obj = {s: _load_pickle(root / f"ind.{name}.{s}") for s in SUFFIXES}
    try:
        test_order = np.array([int(line) for line in (root / f"ind.{name}.test.index").read_text().split()])
    except FileNotFoundError:
        raise DataError(f"missing Planetoid file {root / f'ind.{name}.test.index'}") from None
    allx, tx = sp.csr_matrix(obj["allx"], dtype=np.float32), sp.csr_matrix(obj["tx"], dtype=np.float32)
    ally, ty = np.asarray(obj["ally"]), np.asarray(obj["ty"])
    if tx.shape[0] != len(test_order) or ty.shape[0] != len(test_order):
        raise DataError(f"{name}: tx has {tx.shape[0]} rows, ty {ty.shape[0]}, test.index {len(test_order)} ids")
    n = max(allx.shape[0] + tx.shape[0], int(test_order.max()) + 1)
    # Row k of tx/ty belongs to node test_order[k]; ids in the test range that are missing from
    # test.index (Citeseer's isolated nodes) keep zero features and label -1.
    rows = np.concatenate([np.arange(allx.shape[0]), test_order])
    if len(np.unique(rows)) != len(rows):
        raise DataError(f"{name}: test.index overlaps the allx ids or repeats an id")
    perm = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, np.arange(len(rows)))), shape=(n, len(rows)))
    features = (perm @ sp.vstack([allx, tx]).tocsr()).tocsr()
    onehot = np.concatenate([ally, ty])
    labels = np.full(n, -1, np.int64)
    has = onehot.sum(1) > 0
    labels[rows[has]] = onehot[has].argmax(1)
    graph = obj["graph"]
    src = np.array([u for u, vs in graph.items() for _ in vs], np.int64)
    dst = np.array([v for vs in graph.values() for v in vs], np.int64)
    n = max(n, int(max(src.max(initial=-1), dst.max(initial=-1))) + 1)
    if n > features.shape[0]:  # graph mentions nodes beyond the feature rows
        features = sp.vstack([features, sp.csr_matrix((n - features.shape[0], features.shape[1]))]).tocsr()
        labels = np.concatenate([labels, np.full(n - len(labels), -1, np.int64)])
    adj = symmetrize(sp.csr_matrix((np.ones(len(src), np.float32), (src, dst)), shape=(n, n)))
    n_train = np.asarray(obj["y"]).shape[0]
    train_idx = np.arange(n_train)
    val_idx = np.arange(n_train, min(n_train + 500, allx.shape[0]))
    test_idx = np.sort(test_order[labels[test_order] >= 0])
    data = GraphData(name, features, labels, adj, train_idx, val_idx, test_idx)
    data.validate()
    return data


def write_planetoid(root: str | Path, data: GraphData, seed: int = 0) -> np.ndarray:
    """Write `data` as `root/ind.<data.name>.*` so that the standard split of the files is data's split.

    Nodes are renumbered train, validation, other, test (the format demands it); test ids are listed
    in a shuffled order, as in the original files. Returns `order`: new id k is old node order[k].
    """
    sp = _scipy_sparse()
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    data.validate()
    if len(data.val_idx) != 500 and len(data.val_idx) != 0:
        raise DataError("the Planetoid format fixes the validation set to the 500 nodes after the training "
                        f"nodes; this split has {len(data.val_idx)}")
    taken = np.concatenate([data.train_idx, data.val_idx, data.test_idx])
    others = np.setdiff1d(np.arange(data.num_nodes), taken)
    order = np.concatenate([data.train_idx, data.val_idx, others, data.test_idx])
    inv = np.empty_like(order)
    inv[order] = np.arange(len(order))
    feats = sp.csr_matrix(data.features, dtype=np.float32)[order]
    onehot = np.zeros((data.num_nodes, data.num_classes), np.int64)
    known = data.labels[order] >= 0
    onehot[np.flatnonzero(known), data.labels[order][known]] = 1
    n_allx, n_train = data.num_nodes - len(data.test_idx), len(data.train_idx)
    test_ids = np.random.default_rng(seed).permutation(np.arange(n_allx, data.num_nodes))
    a = data.adj.tocoo()
    graph: collections.defaultdict[int, list[int]] = collections.defaultdict(list)
    for k in range(data.num_nodes):
        graph[k] = []
    for u, v in zip(inv[a.row].tolist(), inv[a.col].tolist(), strict=True):
        graph[u].append(v)
    objects = {"x": feats[:n_train], "y": onehot[:n_train], "allx": feats[:n_allx], "ally": onehot[:n_allx],
               "tx": feats[test_ids], "ty": onehot[test_ids], "graph": graph}
    for suffix, value in objects.items():
        with open(root / f"ind.{data.name}.{suffix}", "wb") as f:
            pickle.dump(value, f, protocol=2)
    (root / f"ind.{data.name}.test.index").write_text("".join(f"{i}\n" for i in test_ids))
    return order


def download_planetoid(name: str, root: str | Path, url: str = PLANETOID_URL) -> Path:
    """Fetch `ind.<name>.*` from the authors' repository (needs a general network)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for suffix in (*SUFFIXES, "test.index"):
        target = root / f"ind.{name}.{suffix}"
        if target.exists():
            continue
        try:
            with urllib.request.urlopen(f"{url}/ind.{name}.{suffix}", timeout=60) as r:
                blob = r.read()
        except OSError as e:
            raise DataError(f"cannot download {url}/ind.{name}.{suffix} ({e}); without a network, copy the eight "
                            f"ind.{name}.* files of kimiyoung/planetoid (or PyG's raw/ folder) to {root}/") from None
        target.write_bytes(blob)
    check_planetoid_files(root, name)
    return root


def git_blob_id(data: bytes) -> str:
    """Git's object id of a file's contents: sha1 of b"blob <size>\\0" + data."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def check_planetoid_files(root: str | Path, name: str) -> None:
    """ChecksumError naming the first of Cora's / Citeseer's / Pubmed's eight files under `root` that is not the
    published one (`PLANETOID_BLOBS`); other names have no manifest and pass."""
    for suffix, want in PLANETOID_BLOBS.get(name, {}).items():
        path = Path(root) / f"ind.{name}.{suffix}"
        if not path.is_file():
            raise DataError(f"missing Planetoid file {path}")
        got = git_blob_id(path.read_bytes())
        if got != want:
            raise ChecksumError(f"{path}: git blob id {got}, the published file has {want} (a partial download or "
                                "another version: delete it and fetch again)")


def files_sha256(root: str | Path, name: str) -> dict[str, str]:
    root = Path(root)
    return {f"ind.{name}.{s}": hashlib.sha256((root / f"ind.{name}.{s}").read_bytes()).hexdigest()
            for s in (*SUFFIXES, "test.index")}
