"""Tokenizers with one interface: word-level (PTB style), character, byte, GPT-2 byte-level BPE,
trainable BPE / unigram (HF `tokenizers`), and trainable SentencePiece with XLNet's special pieces.

    tok.encode_lines(lines) -> np.ndarray of ids      (the whole corpus, fast)
    tok.decode(ids) -> str         tok.vocab_size      tok.eos_id      tok.save(path) / load_tokenizer(path)

In a run directory (`save_tokenizer` / `load_tokenizer(run_dir)`): `genfeat_tokenizer.json`, genfeat's own file
(what genfeat reads back), and the same tokenizer in Hugging Face's format, so the usual tools read it:
`tokenizer.json` for `tokenizers.Tokenizer.from_file` (word, character, byte, BPE, unigram and GPT-2 tokenizers:
the same ids as `encode`) with `tokenizer_config.json` beside it, so `transformers.AutoTokenizer.from_pretrained`
reads it as a `PreTrainedTokenizerFast` with the special tokens (<eos> as bos / eos / pad of a word vocabulary),
and `spiece.model` for SentencePiece (XLNet's `XLNetTokenizer` / `AutoTokenizer`).

Line convention: the word tokenizer appends `<eos>` after every line (Mikolov PTB); the others
encode the text with its newlines.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from genfeat.errors import DataError


class Tokenizer:
    kind: str = ""
    eos_id: int | None = None

    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    def encode_lines(self, lines: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def encode(self, text: str) -> list[int]:
        return self.encode_lines([text]).tolist()

    def decode(self, ids: Iterable[int]) -> str:
        raise NotImplementedError

    def to_json(self) -> dict:
        raise NotImplementedError

    def save(self, path: str | Path) -> None:
        from genfeat.config import atomic_write_text

        atomic_write_text(path, json.dumps({"kind": self.kind, **self.to_json()}))

    def hf(self):
        """The same tokenizer as a HF `tokenizers.Tokenizer` (encode gives the same ids), or None."""
        return None

    def special_tokens(self) -> dict[str, str]:
        """transformers' names of this vocabulary's special tokens (`eos_token`, `unk_token`, ...): what
        tokenizer_config.json declares. A language model starts and pads at its end-of-sequence token."""
        eos = self.decode_token(self.eos_id) if self.eos_id is not None else None
        return {"bos_token": eos, "eos_token": eos, "pad_token": eos} if eos else {}

    def decode_token(self, i: int) -> str:
        """The vocabulary entry of id `i` (as the HF tokenizer writes it)."""
        return self.hf().id_to_token(i)


class WordTokenizer(Tokenizer):
    """Whitespace word vocabulary, most frequent first, with `<unk>` and `<eos>`."""

    kind = "word"

    def __init__(self, itos: list[str], unk: str = "<unk>", eos: str = "<eos>"):
        self.itos = list(itos)
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        if unk not in self.stoi or eos not in self.stoi:
            raise ValueError(f"vocabulary must contain {unk!r} and {eos!r}")
        self.unk, self.eos = unk, eos
        self.unk_id, self.eos_id = self.stoi[unk], self.stoi[eos]

    @classmethod
    def build(cls, lines: Iterable[str], max_size: int | None = None, min_freq: int = 1) -> WordTokenizer:
        counts = Counter(w for line in lines for w in line.split())
        counts.pop("<unk>", None)
        counts.pop("<eos>", None)
        words = sorted((w for w, c in counts.items() if c >= min_freq), key=lambda w: (-counts[w], w))
        if max_size is not None:
            words = words[: max(0, max_size - 2)]
        return cls(["<eos>", "<unk>", *words])

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode_lines(self, lines: Sequence[str]) -> np.ndarray:
        get, unk, eos = self.stoi.get, self.unk_id, self.eos_id
        ids = [i for line in lines for i in (*(get(w, unk) for w in line.split()), eos)]
        return np.asarray(ids, dtype=np.int64)

    def encode(self, text: str) -> list[int]:  # no <eos> appended for a prompt
        return [self.stoi.get(w, self.unk_id) for w in text.split()]

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join("\n" if i == self.eos_id else self.itos[i] for i in ids).replace(" \n ", "\n")

    def to_json(self) -> dict:
        return {"itos": self.itos, "unk": self.unk, "eos": self.eos}

    def hf(self):
        from tokenizers import Tokenizer as TK
        from tokenizers import models, pre_tokenizers

        tk = TK(models.WordLevel(vocab=self.stoi, unk_token=self.unk))
        tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        return tk

    def special_tokens(self) -> dict[str, str]:
        return {**super().special_tokens(), "unk_token": self.unk}

    def decode_token(self, i: int) -> str:
        return self.itos[i]


class CharTokenizer(Tokenizer):
    """Characters seen in the training text (plus `<unk>` = id 0)."""

    kind = "char"

    def __init__(self, chars: str):
        self.itos = ["<unk>", *chars]
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    @classmethod
    def build(cls, lines: Iterable[str]) -> CharTokenizer:
        seen = set("\n")
        for line in lines:
            seen.update(line)
        return cls("".join(sorted(seen)))

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode_lines(self, lines: Sequence[str]) -> np.ndarray:
        text = "".join(line + "\n" for line in lines)
        lut = self.stoi
        return np.fromiter((lut.get(c, 0) for c in text), dtype=np.int64, count=len(text))

    def encode(self, text: str) -> list[int]:
        return [self.stoi.get(c, 0) for c in text]

    def decode(self, ids: Iterable[int]) -> str:
        return "".join(self.itos[i] if i else "\ufffd" for i in ids)

    def to_json(self) -> dict:
        return {"chars": "".join(self.itos[1:])}

    def hf(self):
        from tokenizers import Regex, decoders, models, pre_tokenizers
        from tokenizers import Tokenizer as TK

        tk = TK(models.WordLevel(vocab=self.stoi, unk_token="<unk>"))
        tk.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # every character a token
        tk.decoder = decoders.Fuse()
        return tk

    def special_tokens(self) -> dict[str, str]:
        return {"unk_token": "<unk>"}


class ByteTokenizer(Tokenizer):
    """UTF-8 bytes, vocabulary 256 (enwik8 / bits-per-character setting)."""

    kind = "byte"

    @property
    def vocab_size(self) -> int:
        return 256

    def encode_lines(self, lines: Sequence[str]) -> np.ndarray:
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        return np.frombuffer(data, dtype=np.uint8).astype(np.int64)

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Iterable[int]) -> str:
        return bytes(int(i) for i in ids).decode("utf-8", errors="replace")

    def to_json(self) -> dict:
        return {}

    def hf(self):
        from tokenizers import Regex, decoders, models, pre_tokenizers
        from tokenizers import Tokenizer as TK

        byte_char = {b: c for b, c in enumerate(_bytes_to_unicode())}  # GPT-2's printable stand-in per byte
        tk = TK(models.WordLevel(vocab={c: b for b, c in byte_char.items()}, unk_token=byte_char[0]))
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")])  # one token per byte
        tk.decoder = decoders.ByteLevel()
        return tk


class HFTokenizer(Tokenizer):
    """Wraps a HF `tokenizers.Tokenizer`: GPT-2 byte-level BPE, or a BPE / unigram model trained here."""

    kind = "hf"

    def __init__(self, tk, eos: str | None = None):
        self.tk = tk
        self.eos_id = tk.token_to_id(eos) if eos else None
        self.eos = eos

    @classmethod
    def gpt2(cls, encoder_json: str | Path, merges: str | Path) -> HFTokenizer:
        from tokenizers import ByteLevelBPETokenizer

        bpe = ByteLevelBPETokenizer(str(encoder_json), str(merges))
        return cls(bpe._tokenizer, eos="<|endoftext|>")

    @classmethod
    def train(cls, lines: Sequence[str], model: str, vocab_size: int) -> HFTokenizer:
        from tokenizers import Tokenizer as TK
        from tokenizers import decoders, models, pre_tokenizers, trainers

        special = ["<unk>", "<eos>"]
        if model == "bpe":
            tk = TK(models.BPE(unk_token="<unk>"))
            tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            tk.decoder = decoders.ByteLevel()
            trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special,
                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                          show_progress=False)
        elif model == "unigram":
            tk = TK(models.Unigram())
            tk.pre_tokenizer = pre_tokenizers.Metaspace()
            tk.decoder = decoders.Metaspace()
            trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=special, unk_token="<unk>",
                                              show_progress=False)
        else:
            raise ValueError(f"unknown tokenizer model {model!r} (bpe or unigram)")
        tk.train_from_iterator(lines, trainer=trainer)
        return cls(tk, eos="<eos>")

    @property
    def vocab_size(self) -> int:
        return self.tk.get_vocab_size()

    def encode_lines(self, lines: Sequence[str]) -> np.ndarray:
        encs = self.tk.encode_batch([line + "\n" for line in lines])
        return np.fromiter((i for e in encs for i in e.ids), dtype=np.int64)

    def encode(self, text: str) -> list[int]:
        return self.tk.encode(text).ids

    def decode(self, ids: Iterable[int]) -> str:
        return self.tk.decode([int(i) for i in ids], skip_special_tokens=False)

    def to_json(self) -> dict:
        return {"tokenizer": self.tk.to_str(), "eos": self.eos}

    def hf(self):
        return self.tk


class SentencePieceTokenizer(Tokenizer):
    """A SentencePiece model (unigram by default, as XLNet) trained here, with XLNet's special pieces at the
    reference ids: <unk> 0, <s> 1, </s> 2, <cls> 3, <sep> 4, <pad> 5, <mask> 6, <eod> 7, <eop> 8."""

    kind = "sentencepiece"
    SPECIAL = ("<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>")

    def __init__(self, model_proto: bytes):
        import sentencepiece as spm

        self.proto = model_proto
        self.sp = spm.SentencePieceProcessor(model_proto=model_proto)
        self.eos_id = self.sp.piece_to_id("</s>")
        self.ids = {p: self.sp.piece_to_id(p) for p in ("<unk>", "<s>", "</s>", *self.SPECIAL)}
        starts = np.array([self.sp.id_to_piece(i).startswith("\u2581") or self.sp.is_control(i)
                           or self.sp.is_unknown(i) or self.sp.id_to_piece(i) in self.SPECIAL
                           or not self.sp.id_to_piece(i)[:1].isalnum() for i in range(self.sp.get_piece_size())])
        self.word_start = starts  # (V,) bool: the piece begins a word (span sampling aligns to these)

    @classmethod
    def train(cls, lines: Iterable[str], vocab_size: int, model_type: str = "unigram",
              character_coverage: float = 1.0, seed_sentencepiece_size: int = 200_000) -> SentencePieceTokenizer:
        import io

        import sentencepiece as spm

        buf = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=(line for line in lines if line.strip()), model_writer=buf, vocab_size=vocab_size,
            model_type=model_type, character_coverage=character_coverage, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
            user_defined_symbols=list(cls.SPECIAL), seed_sentencepiece_size=seed_sentencepiece_size,
            hard_vocab_limit=False, minloglevel=2, num_threads=1)
        return cls(buf.getvalue())

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode_lines(self, lines: Sequence[str]) -> np.ndarray:
        return np.fromiter((i for ids in self.sp.encode(list(lines)) for i in ids), dtype=np.int64)

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(text)

    def decode(self, ids: Iterable[int]) -> str:
        return self.sp.decode([int(i) for i in ids])

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids and each piece's [begin, end) character span in `text` (a leading space included), for mapping
        answer spans to tokens."""
        proto = self.sp.encode(text, return_type="proto")
        return [p.id for p in proto.pieces], [(p.begin, p.end) for p in proto.pieces]

    def to_json(self) -> dict:
        import base64

        return {"model": base64.b64encode(self.proto).decode("ascii")}


GENFEAT_FILE, HF_FILE, SPM_FILE = "genfeat_tokenizer.json", "tokenizer.json", "spiece.model"
HF_CONFIG_FILE = "tokenizer_config.json"  # which transformers class reads tokenizer.json, and its special tokens


def _bytes_to_unicode() -> list[str]:
    """GPT-2's map from the 256 bytes to printable characters (what HF's ByteLevel pre-tokenizer emits), in byte
    order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    out, extra = {}, 0
    for b in range(256):
        if b in printable:
            out[b] = chr(b)
        else:
            out[b], extra = chr(256 + extra), extra + 1
    return [out[b] for b in range(256)]


def _head(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(200)
    except OSError:
        return ""


def save_tokenizer(tok: Tokenizer, directory: str | Path) -> None:
    """genfeat_tokenizer.json, and HF's tokenizer.json (or spiece.model for SentencePiece) beside it."""
    from genfeat.config import atomic_write_bytes, atomic_write_text

    directory = Path(directory)
    tok.save(directory / GENFEAT_FILE)
    hf = tok.hf()
    if hf is not None:
        from tokenizers import AddedToken

        special = tok.special_tokens()
        hf.add_special_tokens([AddedToken(t, special=True) for t in dict.fromkeys(special.values())])  # same ids
        atomic_write_text(directory / HF_FILE, hf.to_str())
        # AutoTokenizer.from_pretrained(directory) then loads this tokenizer (not the model type's default one);
        # spaces stay as genfeat decodes them (PTB's "it 's" is two words)
        atomic_write_text(directory / HF_CONFIG_FILE, json.dumps(
            {"tokenizer_class": "PreTrainedTokenizerFast", **special, "clean_up_tokenization_spaces": False},
            indent=1) + "\n")
    if isinstance(tok, SentencePieceTokenizer):
        atomic_write_bytes(directory / SPM_FILE, tok.proto)


def load_tokenizer(path: str | Path) -> Tokenizer:
    """From a genfeat tokenizer file, or a directory holding genfeat_tokenizer.json (a run directory)."""
    path = Path(path)
    if path.is_dir():
        if not (path / GENFEAT_FILE).is_file() and '"kind"' in _head(path / HF_FILE):
            raise DataError(f"{path / HF_FILE} is genfeat's own tokenizer format, as earlier genfeat versions wrote "
                            f"it; rename it to {GENFEAT_FILE} (tokenizer.json now holds HF's format)")
        path = path / GENFEAT_FILE
    try:
        data = json.loads(path.read_text())
        kind = data.pop("kind")
    except (OSError, json.JSONDecodeError, KeyError, AttributeError):
        raise DataError(f"tokenizer file {path} is missing or corrupt") from None
    if kind == "word":
        return WordTokenizer(data["itos"], data["unk"], data["eos"])
    if kind == "char":
        return CharTokenizer(data["chars"])
    if kind == "byte":
        return ByteTokenizer()
    if kind == "sentencepiece":
        import base64

        return SentencePieceTokenizer(base64.b64decode(data["model"]))
    if kind == "hf":
        from tokenizers import Tokenizer as TK

        return HFTokenizer(TK.from_str(data["tokenizer"]), eos=data.get("eos"))
    raise DataError(f"tokenizer file {path} has unknown kind {kind!r}")
