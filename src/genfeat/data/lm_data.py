"""Corpus + tokenizer -> cached token streams for language modelling."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from genfeat.config import default_mode
from genfeat.data.corpora import SPLITS, load_corpus
from genfeat.data.sources import data_home, require
from genfeat.data.streams import read_stream, write_stream
from genfeat.data.tokenizers import (
    GENFEAT_FILE,
    ByteTokenizer,
    CharTokenizer,
    HFTokenizer,
    Tokenizer,
    WordTokenizer,
    load_tokenizer,
)


@dataclass(frozen=True)
class LMDataConfig:
    corpus: str = "ptb"  # see genfeat.data.corpora (or dir:PATH)
    tokenizer: Literal["word", "char", "byte", "gpt2", "bpe", "unigram"] = "word"
    vocab_size: int = 0  # bpe/unigram: size to train; word: keep the most frequent (0 = all)
    seq_len: int = 64
    batch_size: int = 32  # global batch (split over ranks)
    eval_batch_size: int = 10
    iterator: Literal["ordered", "shuffled"] = "ordered"
    eval_tokens: int = 0  # > 0: validation and test use their first N tokens only (tiny presets, quick looks)

    def __post_init__(self):
        if self.seq_len < 1 or self.batch_size < 1 or self.eval_batch_size < 1:
            raise ValueError("seq_len, batch_size and eval_batch_size must be positive")
        if self.eval_tokens < 0:
            raise ValueError("eval_tokens must be >= 0 (0: all)")
        if self.tokenizer in ("bpe", "unigram") and self.vocab_size < 64:
            raise ValueError(f"tokenizer={self.tokenizer} needs vocab_size >= 64 (the size to train)")


def build_tokenizer(cfg: LMDataConfig, train_lines: list[str]) -> Tokenizer:
    if cfg.tokenizer == "word":
        return WordTokenizer.build(train_lines, max_size=cfg.vocab_size or None)
    if cfg.tokenizer == "char":
        return CharTokenizer.build(train_lines)
    if cfg.tokenizer == "byte":
        return ByteTokenizer()
    if cfg.tokenizer == "gpt2":
        root = require("gpt2-bpe", "package/encoder.json", "package/vocab.bpe")
        return HFTokenizer.gpt2(root / "package/encoder.json", root / "package/vocab.bpe")
    return HFTokenizer.train(train_lines, cfg.tokenizer, cfg.vocab_size)


def _cache_dir(cfg: LMDataConfig) -> Path:
    corpus = cfg.corpus
    kind, _, path = corpus.partition(":")
    if path:  # a file corpus: key the cache by kind and resolved path
        corpus = f"{kind}-" + hashlib.sha256(str(Path(path).expanduser().resolve()).encode()).hexdigest()[:12]
    return data_home() / "streams" / f"{corpus}.{cfg.tokenizer}{cfg.vocab_size or ''}"


def prepare_lm_data(cfg: LMDataConfig) -> tuple[Tokenizer, dict[str, np.memmap]]:
    """Tokenizer and {split: token memmap}; built once per (corpus, tokenizer) and cached atomically."""
    cache = _cache_dir(cfg)
    if not (cache / GENFEAT_FILE).is_file():
        splits = load_corpus(cfg.corpus)
        tok = build_tokenizer(cfg, splits["train"])
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=cache.parent, prefix=f".{cache.name}."))
        tmp.chmod(default_mode(directory=True))  # mkdtemp makes it 0700
        try:
            for split in SPLITS:
                write_stream(tmp / f"{split}.bin", tok.encode_lines(splits[split]), tok.vocab_size)
            tok.save(tmp / GENFEAT_FILE)
            if cache.exists():
                shutil.rmtree(cache)
            os.replace(tmp, cache)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    tok = load_tokenizer(cache / GENFEAT_FILE)
    return tok, {s: read_stream(cache / f"{s}.bin") for s in SPLITS}
