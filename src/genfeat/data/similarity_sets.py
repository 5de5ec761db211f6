"""Human similarity judgements from the offline sources (gensim's test data, `genfeat data fetch gensim-testdata`):

    lee_documents()     the 50 news documents of Lee, Pincombe & Welsh (2005), one per line of lee.cor
    lee_pairs()         the 1,225 document pairs (i < j) with their mean human similarity in [0, 1]
                        (the upper triangle of similarities0-1.txt, a 50 x 50 matrix)
    lee_background()    the 300 background news documents (an unlabelled corpus of the same kind)
    word_pairs(name)    WordSim353 / SimLex-999: (word 1, word 2, mean human score) rows
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from genfeat.data.sources import require
from genfeat.errors import DataError

DIR = "gensim/test/test_data"
WORD_SETS = {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt"}


def _path(name: str) -> Path:
    return require("gensim-testdata", f"{DIR}/{name}") / DIR / name


def lee_documents() -> list[str]:
    docs = [line.strip() for line in _path("lee.cor").read_text(encoding="utf-8", errors="replace").splitlines()
            if line.strip()]
    if len(docs) != 50:
        raise DataError(f"{_path('lee.cor')}: {len(docs)} documents, expected 50")
    return docs


def lee_background() -> list[str]:
    return [line.strip() for line in _path("lee_background.cor").read_text(encoding="utf-8", errors="replace")
            .splitlines() if line.strip()]


def lee_pairs() -> tuple[list[tuple[int, int]], np.ndarray]:
    """(pairs (i, j) with i < j, gold similarity (1225,))."""
    m = np.loadtxt(_path("similarities0-1.txt"))
    if m.shape != (50, 50):
        raise DataError(f"{_path('similarities0-1.txt')}: shape {m.shape}, expected (50, 50)")
    i, j = np.triu_indices(50, 1)
    return list(zip(i.tolist(), j.tolist(), strict=True)), m[i, j]


def word_pairs(name: str) -> list[tuple[str, str, float]]:
    if name not in WORD_SETS:
        raise DataError(f"unknown word-similarity set {name!r}; known: {', '.join(WORD_SETS)}")
    rows = []
    for line in _path(WORD_SETS[name]).read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        a, b, score = line.split("\t")[:3]
        rows.append((a.lower(), b.lower(), float(score)))
    return rows
