"""A finished `genfeat run xlnet_pretrain` directory as fine-tuning (and any other reader) loads it: its
SentencePiece tokenizer, its network's config (model_config.json) and the path of its weights."""

from __future__ import annotations

import json
from pathlib import Path

from genfeat.data.tokenizers import GENFEAT_FILE, SentencePieceTokenizer, load_tokenizer
from genfeat.errors import ConfigError
from genfeat.models.xlnet.config import XLNetConfig
from genfeat.train.checkpoint import WEIGHTS

MODEL_CONFIG = "model_config.json"


def load_pretrained(run: str | Path) -> tuple[SentencePieceTokenizer, XLNetConfig, Path]:
    """(tokenizer, network config, weights path) of an xlnet_pretrain run; ConfigError when `run` is empty or is
    not one."""
    if not run:
        raise ConfigError("fine-tuning needs pretrained=RUN_DIR (an xlnet_pretrain run: its tokenizer and network; "
                          "with init=scratch its weights are not used)")
    run = Path(run)
    if not (run / MODEL_CONFIG).is_file() or not ((run / GENFEAT_FILE).is_file() or
                                                   (run / "tokenizer.json").is_file()):
        raise ConfigError(f"{run}: not an xlnet_pretrain run directory ({MODEL_CONFIG} / {GENFEAT_FILE} "
                          "missing); train one with `genfeat run xlnet_pretrain`")
    cfg = XLNetConfig(**json.loads((run / MODEL_CONFIG).read_text()))
    return load_tokenizer(run), cfg, run / WEIGHTS
