"""The graphs node classification runs on, by name (thesis Y §3.3.4; spec `planetoid.md` §5.1):

    linuxdoc              the Linux kernel documentation graph, built offline from Debian linux-doc-6.1
                          (`genfeat data fetch linux-doc` first; `genfeat.data.kernel_docs`)
    cora|citeseer|pubmed  the Planetoid files from `root` (default $GENFEAT_DATA/planetoid/<name>), downloaded
                          from kimiyoung/planetoid on first use when a network is available, checked against
                          their published blobs
    sbm_a | sbm_b         the spec's synthetic feature-rich / graph-rich graphs (§5.1 configs A and B), generated
                          from `seed`
    sbm                   a synthetic graph of the same model with the parameters of `sbm` (`SBMConfig`)
    any other name        `ind.<name>.*` files in `root`

`split_seed` re-draws a standard-style split (20 labels a class, the same validation count, at most 1,000 test
nodes) with that seed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from genfeat.data.graph_synthetic import SBM_A, SBM_B, SBMConfig, make_sbm_bow
from genfeat.data.planetoid import (
    PLANETOID_NAMES,
    GraphData,
    check_planetoid_files,
    download_planetoid,
    read_planetoid,
    standard_split,
)
from genfeat.data.sources import data_home
from genfeat.errors import ConfigError

SYNTHETIC = {"sbm_a": SBM_A, "sbm_b": SBM_B}


@dataclass(frozen=True)
class GraphDataConfig:
    name: str = "linuxdoc"
    root: str | None = None  # directory with ind.<name>.* (Planetoid format)
    seed: int = 0  # synthetic graphs only
    split_seed: int | None = None  # re-draw a standard-style split (20 per class / 500 / 1000) with this seed
    download: bool = True  # cora/citeseer/pubmed: fetch from kimiyoung/planetoid if missing
    sbm: SBMConfig = field(default_factory=SBMConfig)  # name "sbm" only


def load_graph(cfg: GraphDataConfig) -> GraphData:
    """The graph `cfg` names, with its split re-drawn when `cfg.split_seed` is set."""
    data = _load(cfg)
    if cfg.split_seed is not None:
        n_test = min(1000, len(data.test_idx))
        data = dataclasses.replace(data, name=f"{data.name}-split{cfg.split_seed}")
        data.train_idx, data.val_idx, data.test_idx = standard_split(
            data.labels, 20, len(data.val_idx), n_test, seed=cfg.split_seed)
    return data


def _load(cfg: GraphDataConfig) -> GraphData:
    if cfg.name in SYNTHETIC or cfg.name == "sbm":
        return make_sbm_bow(cfg.seed, **dataclasses.asdict(SYNTHETIC.get(cfg.name, cfg.sbm)))
    if cfg.name == "linuxdoc" and cfg.root is None:
        from genfeat.data.kernel_docs import load_kernel_docs

        return load_kernel_docs()
    root = Path(cfg.root) if cfg.root else data_home() / "planetoid" / cfg.name
    if not (root / f"ind.{cfg.name}.graph").exists():
        others = sorted(p.name[len("ind."):-len(".graph")] for p in root.glob("ind.*.graph"))
        if others:
            raise ConfigError(f"no ind.{cfg.name}.* files in {root}, but it holds the Planetoid graph(s) "
                              f"{', '.join(others)}: add --data.name {others[0]}")
        if cfg.name in PLANETOID_NAMES and cfg.download:
            download_planetoid(cfg.name, root)
        else:
            raise ConfigError(f"no Planetoid files ind.{cfg.name}.* in {root} (set data.root)")
    check_planetoid_files(root, cfg.name)  # Cora, Citeseer and Pubmed against their published files
    return read_planetoid(root, cfg.name)
