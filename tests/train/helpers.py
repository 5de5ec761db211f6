"""A tiny LM task for loop tests: GPT on synthetic tokens."""

import hashlib
import json
from pathlib import Path

import numpy as np
import torch

from genfeat.data.streams import OrderedSegments, ShuffledWindows
from genfeat.models.gpt import GPTConfig, build_gpt_lm
from genfeat.tasks.language_modeling import lm_loss

TOKENS = np.random.default_rng(0).integers(0, 40, size=4000)


def make(seed: int = 0, dropout: float = 0.1, iterator: str = "ordered", batch: int = 4, rank: int = 0,
         world: int = 1):
    torch.manual_seed(seed)
    lm = build_gpt_lm(GPTConfig(vocab_size=40, n_layer=2, n_head=2, d_model=32, max_len=16, dropout=dropout))
    cls = OrderedSegments if iterator == "ordered" else ShuffledWindows
    data = cls(TOKENS, batch, 16, rank=rank, world_size=world)
    return lm, data


def evaluate(model):
    x = torch.from_numpy(TOKENS[:17 * 8].reshape(8, 17)).long()
    out, _ = model(x[:, :-1])
    loss = torch.nn.functional.cross_entropy(out.scores.reshape(-1, 40), x[:, 1:].reshape(-1))
    return {"valid_loss": loss.item()}


def rehash(ckpt: Path) -> None:
    """Record a checkpoint's files as they are now in its checksums.json (a test that edits a trainer state on
    purpose)."""
    sums = {f: hashlib.sha256((ckpt / f).read_bytes()).hexdigest() for f in ("model.safetensors", "trainer_state.pt")}
    (ckpt / "checksums.json").write_text(json.dumps(sums))


__all__ = ["TOKENS", "evaluate", "lm_loss", "make", "rehash"]
