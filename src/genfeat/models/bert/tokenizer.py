"""WordPiece for BERT checkpoints through the `tokenizers` library: the directory's `tokenizer.json` (what
`save_pretrained` writes), or its `vocab.txt` with the BERT normaliser (lower-casing as `tokenizer_config.json`
says). `encode` lays out single sequences [CLS] A [SEP] and pairs [CLS] A [SEP] B [SEP] with token types 0 / 1,
truncated (longest first) to `max_len` and right-padded with the padding id, attention_mask 1 on real tokens."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from genfeat.errors import DataError


def load_wordpiece(directory: str | Path):
    """A `tokenizers.Tokenizer` with BERT's normaliser, pre-tokeniser and [CLS] / [SEP] template."""
    from tokenizers import Tokenizer
    from tokenizers.implementations import BertWordPieceTokenizer

    d = Path(directory)
    if (d / "tokenizer.json").is_file():
        tk = Tokenizer.from_file(str(d / "tokenizer.json"))
    elif (d / "vocab.txt").is_file():
        conf = json.loads((d / "tokenizer_config.json").read_text()) if (d / "tokenizer_config.json").is_file() \
            else {}
        tk = BertWordPieceTokenizer(str(d / "vocab.txt"), lowercase=conf.get("do_lower_case", True))._tokenizer
    else:
        raise DataError(f"{d}: no tokenizer.json or vocab.txt (a BERT checkpoint directory has one)")
    tk.no_truncation()
    tk.no_padding()
    return tk


def encode(tk, a: Sequence[str], b: Sequence[str] | None = None, max_len: int = 128) -> dict[str, Tensor]:
    """Texts (and second texts of pairs) -> {"input_ids", "token_type_ids", "attention_mask"} (N, T), T = the
    longest row (<= max_len)."""
    if b is not None and len(a) != len(b):
        raise ValueError(f"{len(a)} first texts but {len(b)} second texts")
    tk.enable_truncation(max_len)
    pad = tk.token_to_id("[PAD]")
    tk.enable_padding(pad_id=0 if pad is None else pad, pad_token="[PAD]")
    try:
        encs = tk.encode_batch(list(a) if b is None else list(zip(a, b, strict=True)))
    finally:
        tk.no_truncation()
        tk.no_padding()
    return {"input_ids": torch.tensor([e.ids for e in encs]),
            "token_type_ids": torch.tensor([e.type_ids for e in encs]),
            "attention_mask": torch.tensor([e.attention_mask for e in encs])}
