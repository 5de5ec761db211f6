"""A finished `genfeat run multi_cls_classify` run's predictions on a split (thesis C §5.2, the uncertainty
estimators of Table 5.4): its config.yaml names the task and the encoder it started from, model.safetensors holds
the selected weights.

    predict_run(run_dir, split="test", dropout_passes=0, seed=0, pretrained=None) -> {"probs" (N, C), "labels" (N,),
        "facet_emb" (N, K, D) for K > 1 facets, "dropout_probs" (T, N, C) with dropout_passes T > 0}
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from genfeat.config import recorded_run
from genfeat.data.labelled import load_labelled
from genfeat.errors import ConfigError
from genfeat.models.multi_cls import MultiCLSClassifier
from genfeat.models.multi_cls.inference import load_classifier
from genfeat.tasks.base import predict_rows
from genfeat.tasks.classification import encode_rows
from genfeat.train.checkpoint import WEIGHTS, load_model_weights

RECIPE = "multi_cls_classify"
DROPOUT_BATCH = 64


class _WithFacets(nn.Module):
    """A Multi-CLS classifier's logits and per-facet embeddings from one encoder pass (for `predict_rows`)."""

    def __init__(self, clf: MultiCLSClassifier):
        super().__init__()
        self.clf = clf

    def forward(self, **inputs: Tensor) -> dict[str, Tensor]:
        h = self.clf.facet_states(**inputs)
        return {"logits": self.clf.head(h), "facet_emb": self.clf.pooler.facet_embeddings(h)}


@torch.no_grad()
def predict_run(run_dir: str | Path, split: str = "test", dropout_passes: int = 0, seed: int = 0,
                pretrained: str | None = None) -> dict[str, Tensor]:
    """The run's class probabilities on `split` with its selected weights (module docstring); "facet_emb" holds
    the pooler's per-facet embeddings L^FT_{O,k}(h_k) (App. D.1.3's prototypes read them); "dropout_probs" comes
    from T forward passes with dropout on, seeded by `seed`. `pretrained`: where the encoder the run started from
    is now, when it has moved since the run (default: the run's `pretrained`)."""
    cfg = recorded_run(run_dir, RECIPE, (WEIGHTS,))["config"]
    columns = (cfg["text_column"], cfg["text_b_column"], cfg["label_column"])
    data, regression, _, _ = load_labelled(cfg["task"], cfg["data_dir"], cfg["split_seed"], columns)
    if regression:
        raise ConfigError(f"{cfg['task']} is a regression task: no class probabilities")
    n_labels = int(max(int(y.max()) for _, y in data.values())) + 1
    model, tok, k = load_classifier(pretrained or cfg["pretrained"], n_labels, cfg["dropout"], cfg["k"],
                                    cfg["aggregation"], cfg["insert_bias"])
    load_model_weights(model, Path(run_dir) / WEIGHTS)
    pairs, y = data[split]
    rows = encode_rows(tok, pairs, y, np.arange(len(y)), cfg["max_len"] - k)
    inputs = {n: v for n, v in rows.items() if n != "labels"}
    pred = predict_rows(_WithFacets(model) if k > 1 else model, inputs, trim_padding=True)
    out = {"probs": torch.softmax(pred["logits"] if k > 1 else pred, -1), "labels": rows["labels"]}
    if k > 1:
        out["facet_emb"] = pred["facet_emb"]
    if dropout_passes:
        torch.manual_seed(seed)
        model.train()
        out["dropout_probs"] = torch.stack([torch.cat([torch.softmax(model(**{n: v[a: a + DROPOUT_BATCH] for n, v in
                                                                              inputs.items()}), -1)
                                                       for a in range(0, len(y), DROPOUT_BATCH)])
                                            for _ in range(dropout_passes)])
        model.eval()
    return out
