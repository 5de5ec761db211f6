"""Corpus + tokenizer -> cached token streams for language modelling."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from genfeat.config import atomic_write_text, default_mode
from genfeat.data.corpora import SPLITS, corpus_files, load_corpus
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


SOURCE_HASHES = ".source-hashes.json"  # {file: [size, mtime_ns, ctime_ns, inode, sha256]} of file corpora read


def _content_key(files: list[Path], memo: Path) -> str:
    """A digest of the files' contents. A file whose size, mtime, change time and inode are those recorded when it
    was last hashed is not read again (any write moves its change time)."""
    try:
        seen = json.loads(memo.read_text())
    except (OSError, ValueError):
        seen = {}
    digest, fresh = hashlib.sha256(), {}
    for f in files:
        st, name = f.stat(), str(f.resolve())
        stats = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        old = seen.get(name)
        if isinstance(old, list) and old[:4] == stats:
            sha = old[4]
        else:
            with open(f, "rb") as fh:
                sha = hashlib.file_digest(fh, "sha256").hexdigest()
        fresh[name] = [*stats, sha]
        digest.update(f"{name}\0{sha}\0".encode())
    if any(seen.get(k) != v for k, v in fresh.items()):
        memo.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):  # a read-only cache: hash again next time
            atomic_write_text(memo, json.dumps(seen | fresh))
    return digest.hexdigest()


def _cache_dir(cfg: LMDataConfig) -> Path:
    """data_home()/streams/<corpus>.<tokenizer><vocab>; a file corpus (`dir:` etc.) is named by its kind, its
    resolved path and its files' contents, so an edited corpus builds a new cache."""
    root = data_home() / "streams"
    corpus = cfg.corpus
    kind, _, path = corpus.partition(":")
    if path:
        where = hashlib.sha256(str(Path(path).expanduser().resolve()).encode()).hexdigest()[:12]
        corpus = f"{kind}-{where}-{_content_key(corpus_files(cfg.corpus), root / SOURCE_HASHES)[:12]}"
    return root / f"{corpus}.{cfg.tokenizer}{cfg.vocab_size or ''}"


def _remove_stale(cache: Path) -> None:
    """Other caches of the same file corpus and tokenizer: built from an earlier version of its files."""
    stem, _, tok = cache.name.partition(".")
    kind, sep, rest = stem.partition("-")
    if not sep:
        return
    where = rest.split("-")[0]
    for old in cache.parent.glob(f"{kind}-{where}-*.{tok}"):
        if old != cache and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)


def clear_streams() -> int:
    """Delete every token-stream cache (`genfeat data clean`); return how many there were."""
    root = data_home() / "streams"
    caches = [d for d in root.iterdir() if d.is_dir() and not d.name.startswith(".")] if root.is_dir() else []
    for d in caches:
        shutil.rmtree(d)
    (root / SOURCE_HASHES).unlink(missing_ok=True)
    return len(caches)


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
            _remove_stale(cache)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    tok = load_tokenizer(cache / GENFEAT_FILE)
    return tok, {s: read_stream(cache / f"{s}.bin") for s in SPLITS}
