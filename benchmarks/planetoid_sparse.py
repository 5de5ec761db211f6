"""Why Planetoid-T's combined output can score below its own feature branch on sparse graphs; records
docs/results/planetoid_sparse.{md,json}.

    python -m benchmarks.planetoid_sparse [--seeds 0 1 2] [--degrees 1 2 4]

Graphs: the spec's stochastic block model (planetoid.md §5.1) with 3,000 nodes, 4 classes, edge homophily 0.8,
feature-rich words (rho 0.3) and expected degree `--degrees`; 20 labels per class, 500 validation, 1,000 test nodes.
For each graph: feature-only logistic regression, Planetoid-T with the library defaults (the context budget of
`context_budget`), and the same without the per-branch losses (`--model.aux_branch_loss false`). Diagnostics of
the Planetoid-T run at its best-validation state: the accuracy of each branch alone on the labelled and the test
nodes, the combined output on isolated and connected test nodes, and the mean |weight| the output layer puts on
each branch's class probabilities.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import header, render, write_results
from genfeat.data.graph_synthetic import SBMConfig
from genfeat.data.graphs import GraphDataConfig, load_graph
from genfeat.models.planetoid.model import Planetoid
from genfeat.nn.sparse_linear import SparseRows
from genfeat.registry import RECIPES
from genfeat.runner import run_recipe
from genfeat.train.checkpoint import WEIGHTS, load_model_weights

NAME = "planetoid_sparse"


def one(deg: float, seed: int) -> dict[str, Any]:
    sbm = SBMConfig(n=3000, deg=deg, h=0.8, rho=0.3, per_class=20, num_val=500, num_test=1000)
    cfg = RECIPES["planetoid"].config_cls(seed=seed, data=GraphDataConfig(name="sbm", seed=seed, sbm=sbm))
    data = load_graph(cfg.data)
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"feat": dataclasses.replace(cfg, method="feat_lr"), "planetoid_t": cfg,
                "no_aux": dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, aux_branch_loss=False))}
        out = {k: run_recipe("planetoid", c, Path(tmp) / k, cpu_threads=1) for k, c in runs.items()}
        model = Planetoid(dataclasses.replace(cfg.model, variant="T"), data.num_nodes, data.num_features,
                          data.num_classes)
        load_model_weights(model, Path(tmp) / "planetoid_t" / WEIGHTS)  # its best-validation state
    model.eval()
    with torch.no_grad():
        logits, (z_feat, z_emb) = model(torch.arange(data.num_nodes), SparseRows(data.features))
    y = torch.from_numpy(data.labels)
    isolated = torch.from_numpy(data.adj.getnnz(1) == 0)

    def acc(t: torch.Tensor, idx: torch.Tensor) -> float:
        return round(float((t[idx].argmax(-1) == y[idx]).float().mean()), 4)

    train, test = torch.from_numpy(data.train_idx), torch.from_numpy(data.test_idx)
    w = model.out.weight.detach().abs()
    k = data.num_classes
    return {"degree": deg, "seed": seed, "isolated_share": round(float(isolated.float().mean()), 3),
            "feat_lr_test": round(out["feat"]["test_acc"], 4), "planetoid_t_test": acc(logits, test),
            "planetoid_t_no_aux_test": round(out["no_aux"]["test_acc"], 4),
            "test_isolated": acc(logits, test[isolated[test]]), "test_connected": acc(logits, test[~isolated[test]]),
            "feature_branch_train": acc(z_feat, train), "feature_branch_test": acc(z_feat, test),
            "embedding_branch_train": acc(z_emb, train), "embedding_branch_test": acc(z_emb, test),
            "embedding_branch_test_connected": acc(z_emb, test[~isolated[test]]),
            "out_weight_features": round(float(w[:, :k].mean()), 3),
            "out_weight_embedding": round(float(w[:, k:].mean()), 3), "best_round": out["planetoid_t"]["best_round"]}


def markdown(record: dict[str, Any]) -> str:
    rows = record["results"]["runs"]
    lines = [f"# Planetoid-T on sparse graphs: the combined output and its branches\n\n{header(record)}\n",
             __doc__.split("\n\n", 2)[2].strip(), "",

             "| degree | seed | isolated | Feat LR | Planetoid-T | its feature branch | its embedding branch "
             "(train / test / connected test) | output-layer weight (features / embedding) | Planetoid-T without "
             "branch losses |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['degree']:g} | {r['seed']} | {r['isolated_share']:.2f} | {r['feat_lr_test']:.3f} | "
                     f"{r['planetoid_t_test']:.3f} | {r['feature_branch_test']:.3f} | "
                     f"{r['embedding_branch_train']:.3f} / {r['embedding_branch_test']:.3f} / "
                     f"{r['embedding_branch_test_connected']:.3f} | {r['out_weight_features']:.2f} / "
                     f"{r['out_weight_embedding']:.2f} | {r['planetoid_t_no_aux_test']:.3f} |")
    lines += ["", "## Reading", "", READING]
    return "\n".join(lines) + "\n"


READING = """\
At an expected degree of 1 the free embeddings of the test nodes stay untrained: about a third of the nodes are
isolated and the rest sit in small components, so the random-walk context rarely links a test node to anything the
labels reach, and the embedding branch predicts test nodes at about chance (0.25-0.30). The labelled nodes'
embeddings, in contrast, are pulled together by label (the label context of Algorithm 2 and the supervised loss): on
the 80 labelled nodes the embedding branch is as accurate as the feature branch (1.000), and the output layer,
fitted on those nodes only, puts more weight on it (mean |w| 1.10-1.26 against 0.69-0.85). On test nodes that weight
adds noise: the combined output falls below feature-only logistic regression on every seed and below its own feature
branch on two of three. At degree 2 the embedding branch reaches 0.37-0.38 on test nodes, and the combined output is
above its feature branch but still at or below logistic regression; at degree 4 it reaches 0.64-0.66 and the
combined output beats both on every seed (+0.045 to +0.064 over logistic regression). So the weakness is the
method's, not a bug, and the per-branch losses already limit it: without them the combined output is lower at every
degree (0.42-0.47 at degree 1; last column). The thesis's graphs are denser (average degree about 4.0 for Cora, 2.8
for Citeseer, 4.5 for Pubmed, from their edge counts). On sparser graphs prefer Planetoid-I, whose embedding is a
function of the features, or a feature-only model."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--degrees", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    ap.add_argument("--render-only", action="store_true", help="rewrite the page from the recorded JSON")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    runs = []
    for deg in args.degrees:
        for seed in args.seeds:
            runs.append(one(deg, seed))
            print(runs[-1], flush=True)
    print(write_results(NAME, {"runs": runs}, markdown, seeds=args.seeds))


if __name__ == "__main__":
    main()
