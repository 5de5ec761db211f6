"""Inference with a trained universal-schema model (thesis C §3.3): load a finished `genfeat run universal_schema`
directory (its model config, weights and `schema_vocab.json`) for scoring new patterns (`genfeat eval
entailment`, `tasks.universal_schema.pattern_facets`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from torch import nn

from genfeat.config import from_dict, recorded_run
from genfeat.models.universal_schema.config import UniversalSchemaConfig
from genfeat.models.universal_schema.model import build_model
from genfeat.train.checkpoint import WEIGHTS, load_model_weights, load_weights

VOCAB = "schema_vocab.json"  # the run's tokens, written when it starts


def load_run(run_dir: str | Path) -> tuple[nn.Module, list[str], UniversalSchemaConfig]:
    """(model in eval mode on the CPU, its token vocabulary, its config) of a universal_schema run."""
    run = Path(run_dir)
    saved = recorded_run(run, "universal_schema", (WEIGHTS, VOCAB))
    cfg = from_dict(UniversalSchemaConfig, saved["config"]["model"], "model.")
    vocab = json.loads((run / VOCAB).read_text())["vocab"]
    weights = load_weights(run / WEIGHTS)
    n_pairs = weights["pairs.weight"].shape[0]
    n_rows = weights["rows.weight"].shape[0] if "rows.weight" in weights else 0
    d_word = weights["H.weight"].shape[1] if "H.weight" in weights else 0
    pos = weights.get("net.encoder.pos.weight")
    cfg = dataclasses.replace(cfg, vocab_size=len(vocab), max_len=cfg.max_len if pos is None else pos.shape[0])
    model = build_model(cfg, n_rows, n_pairs, d_word)
    load_model_weights(model, run / WEIGHTS)
    return model.eval(), vocab, cfg
