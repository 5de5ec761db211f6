"""Real prose for the interactive generators (thesis C §4.3.1 and Appendix C.1; spec interactive-generation.md §3.2,
§4.3): a corpus as GPT-2 BPE token streams aligned with their words, and the content-word vocabulary whose unit
word vectors are the option generator's targets and the conditional generator's hints.

    words       `data.facets`' word pattern over each line (letters / digits with an inner apostrophe), lower-cased;
                a content word is not a stop word (`data.stop_words`), has a word vector and occurs at least
                `min_count` times in the training split (the thesis: spaCy words seen >= 100 times in its Wikipedia
                training data that have GloVe vectors)
    table       (V, E) the content vocabulary's unit word vectors, most frequent word first
    streams     per split: ids (N,) the BPE tokens of every line + "\\n" (as the LM recipe encodes lines),
                word_starts (W,) the token each word begins in (`data.future_words.token_starts`), word_rows (W,)
                its table row or -1

`generator_rows` cuts a stream into blocks of L + 1 tokens with each position's O future content words (the
hints, §4.3); `option_rows` cuts it at word boundaries into prompts with their next O content words (the option
generator's targets, §3.2: O = 50); `prompts` draws held-out prompts of a given length in words (Table 4.1's Sim
and Sim Short).

Deviation: the thesis aligns spaCy words with GPT-2 tokens; a regex word pattern stands in for spaCy (offline).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch
from torch import Tensor

from genfeat.data.facets import WORD
from genfeat.data.future_words import next_content_words, token_starts
from genfeat.data.stop_words import is_stop
from genfeat.errors import DataError


@dataclass
class ProseStream:
    ids: np.ndarray  # (N,) model tokens
    word_starts: np.ndarray  # (W,) ascending token index of each word's first piece
    word_rows: np.ndarray  # (W,) table row, -1 for a stop word or a word outside the vocabulary

    @cached_property
    def _content(self) -> tuple[np.ndarray, np.ndarray]:
        keep = self.word_rows >= 0
        return self.word_starts[keep], self.word_rows[keep]

    def content(self) -> tuple[np.ndarray, np.ndarray]:
        """(starts, rows) of the content words, computed once (every block's `future` reads them)."""
        return self._content

    def future(self, start: int, n_tokens: int, o: int) -> np.ndarray:
        """(n_tokens, o): for positions start .. start + n_tokens - 1, the rows of the first o content words that
        begin after each (`data.future_words.next_content_words` on the stream's window)."""
        starts, rows = self.content()
        lo = np.searchsorted(starts, start, side="right")
        hi = min(len(starts), lo + n_tokens + o)  # at most one word begins per token
        return next_content_words(starts[lo:hi] - start, rows[lo:hi], n_tokens, o)


@dataclass
class ProseTopics:
    words: list[str]  # (V,) the content vocabulary
    table: np.ndarray  # (V, E) unit rows
    streams: dict[str, ProseStream]


def _line_words(line: str) -> list[tuple[int, str]]:
    """(first character, word) of each word, lower-cased, a possessive 's dropped (GloVe has "government", not
    "government's")."""
    out = []
    for m in WORD.finditer(line):
        w = m.group().lower()
        out.append((m.start(), w[:-2] if w.endswith("'s") and len(w) > 2 else w))
    return out


def content_vocabulary(lines: Sequence[str], vector_words: Sequence[str], stop: frozenset[str], min_count: int
                       ) -> list[str]:
    """The training split's content words seen >= min_count times that have a vector, most frequent first (ties
    alphabetical)."""
    have = set(vector_words)
    counts = Counter(w for line in lines for _, w in _line_words(line))
    kept = [w for w, c in counts.items() if c >= min_count and w in have and not is_stop(w, stop)]
    return sorted(kept, key=lambda w: (-counts[w], w))


def encode_stream(lines: Sequence[str], tokenizer, index: Mapping[str, int]) -> ProseStream:
    """Each line + "\\n" through the tokenizer's `tokenizers` object (with offsets), its words aligned to tokens."""
    hf = tokenizer.hf()
    encs = hf.encode_batch([line + "\n" for line in lines])
    ids, starts, rows, base = [], [], [], 0
    for line, enc in zip(lines, encs, strict=True):
        words = _line_words(line)
        if words:
            at = token_starts(np.asarray(enc.offsets).reshape(-1, 2), np.array([c for c, _ in words]))
            starts.append(at + base)
            rows.append(np.array([index.get(w, -1) for _, w in words]))
        ids.append(np.asarray(enc.ids))
        base += len(enc.ids)
    return ProseStream(*(np.concatenate(xs).astype(np.int64) if xs else np.zeros(0, dtype=np.int64)
                         for xs in (ids, starts, rows)))


def build_prose_topics(splits: Mapping[str, Sequence[str]], tokenizer, vector_words: Sequence[str],
                       vectors: np.ndarray, stop: frozenset[str], min_count: int) -> ProseTopics:
    words = content_vocabulary(splits["train"], vector_words, stop, min_count)
    if len(words) < 2:
        raise DataError(f"only {len(words)} content words occur >= {min_count} times in the training split")
    at = {w: i for i, w in enumerate(vector_words)}
    table = np.asarray(vectors, dtype=np.float32)[[at[w] for w in words]]
    table /= np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-12)
    index = {w: i for i, w in enumerate(words)}
    return ProseTopics(words, table, {s: encode_stream(lines, tokenizer, index) for s, lines in splits.items()})


def generator_rows(stream: ProseStream, seq_len: int, o: int, limit: int = 0) -> dict[str, Tensor]:
    """Blocks of seq_len + 1 tokens (the last one only a target) with each position's o future content words:
    input_ids (N, L + 1), future (N, L, o), row_id (N,). `limit` > 0 keeps the first blocks."""
    n = (len(stream.ids) - 1) // seq_len
    n = min(n, limit) if limit else n
    if n < 1:
        raise DataError(f"a stream of {len(stream.ids)} tokens has no block of {seq_len + 1}")
    ids = np.stack([stream.ids[b * seq_len: b * seq_len + seq_len + 1] for b in range(n)])
    future = np.stack([stream.future(b * seq_len, seq_len, o) for b in range(n)])
    return {"input_ids": torch.as_tensor(ids), "future": torch.as_tensor(future), "row_id": torch.arange(n)}


def word_boundaries(stream: ProseStream, min_tokens: int) -> np.ndarray:
    """Token indices p >= min_tokens where a word begins: a prompt ids[:p] ends on a whole word."""
    b = np.unique(stream.word_starts)
    return b[b >= min_tokens]


def option_rows(stream: ProseStream, o: int, min_prompt: int, max_prompt: int, stride: int, pad_id: int,
                seed: int, limit: int = 0) -> dict[str, Tensor]:
    """Prompts ending at a word boundary about every `stride` tokens, each the preceding U{min_prompt ..
    max_prompt} tokens (the reference's prefixes of a block, bounded by the context), left-padded with `pad_id`;
    targets (N, o) the next o content words' rows with target_mask (N, o). Points with no content word after them
    are dropped."""
    rng = np.random.default_rng(seed)
    cuts = word_boundaries(stream, min_prompt)
    if not len(cuts):
        raise DataError(f"no word boundary after {min_prompt} tokens in a stream of {len(stream.ids)}")
    marks = np.arange(int(rng.integers(0, stride)) + cuts[0], cuts[-1] + 1, stride)
    points = np.unique(cuts[np.minimum(np.searchsorted(cuts, marks), len(cuts) - 1)])
    if limit:
        points = points[:limit]
    lengths = rng.integers(min_prompt, max_prompt + 1, len(points))
    targets = np.stack([stream.future(p - 1, 1, o)[0] for p in points])  # (N, o)
    keep = targets[:, 0] >= 0
    points, lengths, targets = points[keep], lengths[keep], targets[keep]
    T = int(min(max_prompt, points.max()))
    ids = torch.full((len(points), T), pad_id, dtype=torch.long)
    for i, (p, n) in enumerate(zip(points, lengths, strict=True)):
        seg = stream.ids[max(0, p - n): p]
        ids[i, T - len(seg):] = torch.as_tensor(seg)
    mask = torch.as_tensor(targets >= 0)
    return {"input_ids": ids, "targets": torch.as_tensor(np.maximum(targets, 0)), "target_mask": mask}
