"""Training examples of the multi-facet sentence model (thesis C §3.2.1.1, §3.2.2.1; spec
multi-facet-embedding.md §3): each sentence of a document is an input; the words of its previous and next
sentences, stop words removed, are its targets (an unordered bag of word vectors). The phrase model (§3.2.2.5):
each noun phrase of a sentence is an input; the non-stop words within `window` tokens on either side of it in
its sentence are its targets (`phrase_examples`).

    noun phrases  a documented POS-free rule (no tagger model is available offline): greedy longest match, left to
                  right, of the sentence's tokens against a noun lexicon (WordNet 3.0's noun lemmas of one to three
                  words, `noun_lexicon`); a match that is a single stop word is skipped

    tokens        lower-cased word tokens ([a-z0-9]+ runs with inner apostrophes, and single punctuation marks):
                  the uncased GloVe 6B vocabulary's tokenisation, documented rule
    inputs        the sentence's tokens in the input vocabulary (others -> <unk>) + <eos>, at most max_len
                  (longer sentences are dropped, as consecutive duplicates are); left-padded in batches
    targets       the tokens of the neighbouring sentences that have a target vector and are not stop tokens
                  (`data.stop_words`: an English function-word list, or a file, plus every punctuation token);
                  duplicates kept; at most max_targets, subsampled with the seed; a sentence with no target is
                  dropped; `target_composition` describes what they are
    batches       `FacetBatches`: shuffled epochs of (input_ids (B, T), target ids (B, N), target mask (B, N)),
                  seeded and resumable; the loss looks the target ids up in the unit-normalised target table

The input vocabulary: tokens seen at least `min_count` times in the training documents, ids from 2 (0 <pad>,
1 <unk>, then <eos>).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from genfeat.data.batches import rank_share
from genfeat.data.stop_words import is_punctuation, is_stop, stop_list

TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]")
WORD = re.compile(TOKEN.pattern, re.IGNORECASE)  # TOKEN's tokens on the original text: case kept, offsets exact
PAD, UNK, EOS = "<pad>", "<unk>", "<eos>"


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


def build_vocab(docs: Sequence[Sequence[str]], min_count: int) -> list[str]:
    """<pad>, <unk>, <eos>, then the tokens seen >= min_count times, most frequent first (ties alphabetical)."""
    counts = Counter(t for d in docs for s in d for t in tokenize(s))
    kept = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return [PAD, UNK, EOS, *kept]


@dataclass
class FacetExamples:
    inputs: list[np.ndarray]  # per sentence: input ids ending with <eos>
    targets: list[np.ndarray]  # per sentence: target-table row ids

    def __len__(self) -> int:
        return len(self.inputs)


class _ExampleBuilder:
    """Input ids and target bags of examples, the bags cut to `max_targets` by a seeded subsample."""

    def __init__(self, vocab: Sequence[str], target_words: Sequence[str], max_targets: int, seed: int,
                 stops: str = "english"):
        self.ids = {w: i for i, w in enumerate(vocab)}
        self.tid = {w: i for i, w in enumerate(target_words)}
        self.stops, self.max_targets = stop_list(stops), max_targets
        self.rng = np.random.default_rng(seed)
        self.ex = FacetExamples([], [])

    def bag(self, tokens: Sequence[str]) -> list[int]:
        """The target ids of the non-stop-word tokens that have a target vector."""
        return [self.tid[t] for t in tokens if t in self.tid and not is_stop(t, self.stops)]

    def add(self, tokens: Sequence[str], bag: list[int]) -> None:
        if not bag:
            return
        if len(bag) > self.max_targets:
            bag = [bag[j] for j in np.sort(self.rng.choice(len(bag), self.max_targets, replace=False))]
        self.ex.inputs.append(np.array([self.ids.get(t, 1) for t in tokens] + [self.ids[EOS]], dtype=np.int64))
        self.ex.targets.append(np.array(bag, dtype=np.int64))


def sentence_examples(docs: Sequence[Sequence[str]], vocab: Sequence[str], target_words: Sequence[str],
                      max_len: int = 50, max_targets: int = 30, seed: int = 0, stops: str = "english"
                      ) -> FacetExamples:
    """The examples of every sentence that has a neighbour with a target (module docstring); `stops`: the stop
    list (`data.stop_words.stop_list`)."""
    out = _ExampleBuilder(vocab, target_words, max_targets, seed, stops)
    for doc in docs:
        sents = []
        for s in doc:
            toks = tokenize(s)
            if toks and (not sents or toks != sents[-1]) and len(toks) < max_len:
                sents.append(toks)
        bags = [out.bag(toks) for toks in sents]
        for i, toks in enumerate(sents):
            out.add(toks, (bags[i - 1] if i > 0 else []) + (bags[i + 1] if i + 1 < len(sents) else []))
    return out.ex


def noun_lexicon(root: str | None = None, max_words: int = 3) -> frozenset[tuple[str, ...]]:
    """WordNet 3.0's noun lemmas of 1..max_words tokens (as `tokenize` splits them), lower-cased."""
    from genfeat.data.wordnet import read_synsets

    return frozenset(t for s in read_synsets("noun", root) for lemma in s.lemmas
                     if 1 <= len(t := tuple(tokenize(lemma))) <= max_words)


def noun_phrases(tokens: Sequence[str], lexicon: frozenset[tuple[str, ...]], max_words: int = 3,
                 stops: str = "english") -> list[tuple[int, int]]:
    """[start, end) spans of the noun phrases of a token list (module docstring: greedy longest match)."""
    stop, out, i = stop_list(stops), [], 0
    while i < len(tokens):
        for n in range(min(max_words, len(tokens) - i), 0, -1):
            span = tuple(tokens[i: i + n])
            if span in lexicon and not (n == 1 and (span[0] in stop or not span[0].isalpha())):
                out.append((i, i + n))
                i += n
                break
        else:
            i += 1
    return out


def phrase_examples(docs: Sequence[Sequence[str]], vocab: Sequence[str], target_words: Sequence[str],
                    lexicon: frozenset[tuple[str, ...]], window: int = 5, max_targets: int = 30, seed: int = 0,
                    stops: str = "english") -> FacetExamples:
    """Each noun phrase of every sentence with its context words as targets (module docstring)."""
    out = _ExampleBuilder(vocab, target_words, max_targets, seed, stops)
    for doc in docs:
        for s in doc:
            toks = tokenize(s)
            for a, b in noun_phrases(toks, lexicon, stops=stops):
                out.add(toks[a:b], out.bag(toks[max(0, a - window): a] + toks[b: b + window]))
    return out.ex


def target_composition(ex: FacetExamples, target_words: Sequence[str], top: int = 10) -> dict[str, Any]:
    """What the training targets are: their number, distinct words, the shares of punctuation and of numbers,
    and the `top` most frequent words with their shares (recorded in each run's summary)."""
    counts = Counter(int(i) for t in ex.targets for i in t)
    total = max(1, sum(counts.values()))
    words = {target_words[i]: c for i, c in counts.items()}

    def share(pred) -> float:
        return sum(c for w, c in words.items() if pred(w)) / total
    return {"targets": sum(counts.values()), "target_types": len(counts),
            "punctuation_share": share(is_punctuation),
            "numeric_share": share(lambda w: any(ch.isdigit() for ch in w)),
            "top": [[w, round(c / total, 5)] for w, c in sorted(words.items(), key=lambda x: (-x[1], x[0]))[:top]]}


def collate(inputs: Sequence[np.ndarray], targets: Sequence[np.ndarray]) -> dict[str, torch.Tensor]:
    """Left-padded input ids (B, T) and right-padded target ids (B, N) with their mask."""
    T, N = max(len(x) for x in inputs), max(len(t) for t in targets)
    x = np.zeros((len(inputs), T), dtype=np.int64)
    y = np.zeros((len(targets), N), dtype=np.int64)
    m = np.zeros((len(targets), N), dtype=bool)
    for i, (a, t) in enumerate(zip(inputs, targets, strict=True)):
        x[i, T - len(a):] = a
        y[i, : len(t)], m[i, : len(t)] = t, True
    return {"input_ids": torch.from_numpy(x), "targets": torch.from_numpy(y), "target_mask": torch.from_numpy(m)}


class FacetBatches:
    """Shuffled epochs of `batch_size` examples (the last partial batch skipped), seeded, resumable; under torchrun
    each rank keeps its share of every global batch."""

    def __init__(self, ex: FacetExamples, batch_size: int, seed: int, rank: int = 0, world_size: int = 1):
        if len(ex) < batch_size:
            raise ValueError(f"{len(ex)} examples make no batch of {batch_size}")
        self.ex, self.batch_size = ex, batch_size
        self.rng = np.random.default_rng(seed)
        self.per_epoch = len(ex) // batch_size
        self.pos, self.perm = self.per_epoch, np.arange(0)
        self.share = rank_share(batch_size, rank, world_size)

    def __iter__(self) -> FacetBatches:
        return self

    def __next__(self) -> dict[str, torch.Tensor]:
        if self.pos == self.per_epoch:
            self.perm, self.pos = self.rng.permutation(len(self.ex)), 0
        idx = self.perm[self.pos * self.batch_size: (self.pos + 1) * self.batch_size][self.share]
        self.pos += 1
        return collate([self.ex.inputs[i] for i in idx], [self.ex.targets[i] for i in idx])

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "pos": self.pos, "perm": torch.from_numpy(self.perm)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.pos, self.perm = state["pos"], state["perm"].numpy()
