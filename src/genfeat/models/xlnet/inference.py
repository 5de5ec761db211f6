"""A finished `genfeat run xlnet_pretrain` directory as fine-tuning (and any other reader) loads it: its
SentencePiece tokenizer, its network's config (model_config.json) and the path of its weights; and a task network
built on it for fine-tuning.

    load_pretrained(run)                                   -> (tokenizer, XLNetConfig, weights path)
    finetune_network(cls, run, init, dropout, *args)       -> (cls(fine-tuning config, *args), tokenizer)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

from torch import nn

from genfeat.data.tokenizers import GENFEAT_FILE, SentencePieceTokenizer, load_tokenizer
from genfeat.errors import ConfigError
from genfeat.models.xlnet.config import XLNetConfig
from genfeat.train.checkpoint import WEIGHTS, load_weights

MODEL_CONFIG = "model_config.json"
INITS = ("pretrained", "scratch", "body")  # what `finetune_network` loads: everything, nothing, all but the embeddings


def check_init(init: str) -> None:
    if init not in INITS:  # anything but pretrained / body would build from scratch: a typo must not get there
        raise ConfigError(f"init must be {', '.join(INITS)}, got {init!r}")


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


def finetune_network(cls: Callable[..., nn.Module], run: str | Path, init: str, dropout: float, /, *args, **kwargs
                     ) -> tuple[nn.Module, SentencePieceTokenizer]:
    """`cls(config, *args, **kwargs)` on the run's network in fine-tuning mode (no memory, bidirectional attention,
    `dropout` for dropout and attention dropout; `cls` has a `.transformer`), its weights loaded unless
    init=scratch (init=body: all but the word embeddings, which keep their fresh initialisation -- a diagnostic
    separating what the pretrained layers and the pretrained tied embeddings contribute)."""
    check_init(init)
    tok, model_cfg, weights = load_pretrained(run)
    ft = dataclasses.replace(model_cfg, dropout=dropout, dropatt=dropout, mem_len=0, reuse_len=0, bi_data=False,
                             attn_type="bi")
    model = cls(ft, *args, **kwargs)
    if init in ("pretrained", "body"):
        state = {k[len("transformer."):]: v for k, v in load_weights(weights).items() if k.startswith("transformer.")}
        if init == "body":  # keep this model's freshly initialised (tied) word embeddings
            state["word_embedding.weight"] = model.transformer.word_embedding.weight.detach().clone()
        model.transformer.load_state_dict(state)
    model.transformer.mask_emb.requires_grad_(False)  # the query stream's input: unused without a perm mask
    return model, tok
