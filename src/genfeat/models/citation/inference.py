"""A finished `genfeat run citation` directory for inference (`genfeat affinity`): its model config, weights and
`citation_vocab.json` (the run's words, their training probabilities, its author and citer names, written when
the run starts)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from genfeat.config import from_dict, recorded_run
from genfeat.models.citation.config import CitationConfig
from genfeat.models.citation.model import CitationModel
from genfeat.train.checkpoint import WEIGHTS, load_model_weights, load_weights

VOCAB = "citation_vocab.json"


def load_run(run_dir: str | Path) -> tuple[CitationModel, dict[str, Any], dict[str, Any]]:
    """(model in eval mode on the CPU, the run's vocab file {vocab, word_probs, authors, citers}, the run's config
    as recorded in config.yaml) of a citation run."""
    run = Path(run_dir)
    saved = recorded_run(run, "citation", (WEIGHTS, VOCAB))
    cfg = from_dict(CitationConfig, saved["config"]["model"], "model.")
    info = json.loads((run / VOCAB).read_text())
    weights = load_weights(run / WEIGHTS)
    d_word = weights["H.weight"].shape[1] if "H.weight" in weights else 0
    pos = weights.get("net.encoder.pos.weight")
    cfg = dataclasses.replace(cfg, vocab_size=len(info["vocab"]), max_len=cfg.max_len if pos is None else pos.shape[0])
    model = CitationModel(cfg, weights["author.weight"].shape[0], weights["citer.weight"].shape[0], d_word)
    load_model_weights(model, run / WEIGHTS)
    return model.eval(), info, saved["config"]
