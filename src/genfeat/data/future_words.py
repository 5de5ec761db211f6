"""The future words of every position of a token sequence (thesis C §4.2, Appendix C.1; spec
interactive-generation.md §3.2, §4.3 and §9 test 17): for token position i, the first O non-stop words that start
after it, as rows of a word-vector table. They are the option generator's targets (O = 50 from the prompt's end)
and the conditional generator's hints (O = 25 from an insertion point).

A text's words (from any word tokenizer: the synthetic corpus's tokens, or the regex words of real prose) and its
model tokens (GPT-2 BPE pieces) are aligned by the token each word starts in: `word_starts` (W,) ascending, the
index of each word's first token; `word_rows` (W,) its row in the table, or -1 for a stop word or a word without a
vector. A word that starts at or before position i is not in position i's future: it has begun in the prompt.

Shapes: `next_content_words(word_starts, word_rows, n_tokens, O)` -> (n_tokens, O) rows, -1 padded;
`token_starts(offsets, char_starts)` maps word character offsets to token indices.
"""

from __future__ import annotations

import numpy as np


def next_content_words(word_starts: np.ndarray, word_rows: np.ndarray, n_tokens: int, o: int) -> np.ndarray:
    """(n_tokens, o): for each position i, the rows of the first `o` content words whose first token is > i."""
    word_starts, word_rows = np.asarray(word_starts), np.asarray(word_rows)
    if word_starts.shape != word_rows.shape:
        raise ValueError(f"word_starts {word_starts.shape} and word_rows {word_rows.shape} differ")
    if len(word_starts) > 1 and bool((np.diff(word_starts) < 0).any()):
        raise ValueError("word_starts must be ascending")
    keep = word_rows >= 0
    starts, rows = word_starts[keep], word_rows[keep]  # the content words
    first = np.searchsorted(starts, np.arange(n_tokens), side="right")  # (n_tokens,) first content word > i
    idx = first[:, None] + np.arange(o)[None]  # (n_tokens, o)
    padded = np.concatenate([rows, np.full(o, -1, dtype=rows.dtype)])
    return padded[np.minimum(idx, len(padded) - 1)]


def token_starts(token_offsets: np.ndarray, char_starts: np.ndarray) -> np.ndarray:
    """(W,) the token each word starts in: token_offsets (L, 2) character [start, end) of each token (a
    `tokenizers` encoding's offsets), char_starts (W,) each word's first character."""
    ends = np.asarray(token_offsets)[:, 1]
    return np.searchsorted(ends, np.asarray(char_starts), side="right")
