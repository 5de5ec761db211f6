"""RACE multiple-choice reading comprehension (Lai et al. 2017), the JSON files of the official release
(`RACE/{train,dev,test}/{middle,high}/*.txt`, one article with its questions per file), and XLNet's input layout
(spec xlnet.md §2.12): per option [passage, <sep>, question + option, <sep>, <cls>], the question+option part
kept to its last `max_qa` pieces, the passage truncated to fit, left-padded."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from genfeat.data.pair_inputs import pair_inputs
from genfeat.data.tokenizers import SentencePieceTokenizer
from genfeat.errors import DataError


@dataclass
class RaceExample:
    qid: str
    article: str
    question: str
    options: list[str]
    label: int  # index of the right option
    level: str  # middle | high (from the folder), "" if unknown


def load_race(path: str | Path) -> list[RaceExample]:
    """A RACE file or a directory of them (searched recursively)."""
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.suffix in (".txt", ".json")) if path.is_dir() else [path]
    if not files:
        raise DataError(f"{path}: no RACE files")
    out = []
    for f in files:
        try:
            d = json.loads(f.read_text(encoding="utf-8"))
            level = next((p for p in f.parts if p in ("middle", "high")), "")
            for i, (q, opts, ans) in enumerate(zip(d["questions"], d["options"], d["answers"], strict=True)):
                if len(opts) < 2 or ans not in "ABCDEFGH"[: len(opts)]:
                    raise ValueError(f"answer {ans!r} for {len(opts)} options")
                out.append(RaceExample(f"{d.get('id', f.stem)}-{i}", d["article"], q, list(opts),
                                       "ABCDEFGH".index(ans), level))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise DataError(f"{f}: not a RACE file ({e})") from None
    return out


def race_inputs(examples: list[RaceExample], tok: SentencePieceTokenizer, max_len: int = 512, max_qa: int = 128
                ) -> dict[str, torch.Tensor]:
    """(B, C, T) input_ids / token_type_ids / attention_mask and (B,) labels; C = the number of options."""
    sep, cls, pad = tok.ids["<sep>"], tok.ids["<cls>"], tok.ids["<pad>"]
    per_example = []
    for ex in examples:
        art = tok.encode(ex.article)
        a_rows, b_rows = [], []
        for opt in ex.options:
            qa = tok.encode(f"{ex.question} {opt}")[-max_qa:]
            a_rows.append(art[: max(0, max_len - len(qa) - 3)])
            b_rows.append(qa)
        per_example.append(pair_inputs(a_rows, b_rows, max_len, sep, cls, pad))
    T = max(e["input_ids"].size(1) for e in per_example)

    def left_pad(t: torch.Tensor, value: int) -> torch.Tensor:
        return torch.nn.functional.pad(t, (T - t.size(1), 0), value=value)
    out = {k: torch.stack([left_pad(e[k], v) for e in per_example])
           for k, v in (("input_ids", pad), ("token_type_ids", 4), ("attention_mask", 0))}
    out["labels"] = torch.tensor([ex.label for ex in examples])
    return out
