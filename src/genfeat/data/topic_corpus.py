"""The synthetic two-topic corpus of the multi-facet model's small-scale reproduction (spec multi-facet-embedding.md
§10.1): a sentence mixes two topics, so one embedding cannot point at both and K facets can.

    geometry      d = 48; T = 8 orthonormal topic centres μ_t (QR of a Gaussian matrix); 15 words per topic with
                  vectors normalise(μ_t + 0.1 ε), ε ~ N(0, I) (within-topic cosine about 0.65); 60 incidental words
                  and 10 stop words with random unit vectors
    sentence      topic pair (a, b), a ≠ b: 3 words of a, 3 of b, 3 incidental, 3 stop words (each group drawn without
                  replacement), shuffled
    neighbours    5 words of a and 5 of b (never incidental or stop words): the sentence's target bag
    negatives     the recipe's rotation of the batch: the neighbours of another sentence, an independent pair

Words are named t<topic>w<i> and x<i>; the stop words are ten real English ones (all in `data.stop_words`' English
list, so the facet data's stop filter treats them as stop words). Everything is a function of the seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from genfeat.data.facets import EOS, FacetExamples

STOP = ("the", "of", "and", "a", "to", "in", "is", "it", "that", "for")
INCIDENTAL, STOPWORD = -1, -2  # `TopicCorpus.topic` of the words that belong to no topic


@dataclass(frozen=True)
class TopicCorpus:
    words: list[str]  # topic words, then incidental words, then stop words
    vectors: np.ndarray  # (V, d) unit rows
    centres: np.ndarray  # (T, d) orthonormal
    topic: np.ndarray  # (V,) the word's topic, INCIDENTAL or STOPWORD

    @cached_property
    def _groups(self) -> dict[int, np.ndarray]:
        return {int(g): np.flatnonzero(self.topic == g) for g in np.unique(self.topic)}

    def members(self, t: int) -> np.ndarray:
        """The word ids of topic t (or of INCIDENTAL / STOPWORD)."""
        return self._groups[int(t)]

    def random_pairs(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """(n, 2) topic pairs a ≠ b, uniform."""
        T = len(self.centres)
        a = rng.integers(0, T, n)
        b = (a + rng.integers(1, T, n)) % T
        return np.stack([a, b], 1)

    def sentence(self, pair: Sequence[int], rng: np.random.Generator) -> tuple[list[str], list[str]]:
        """(the sentence's shuffled words, its neighbour bag) for the topic pair (module docstring)."""
        pick = [rng.choice(self.members(t), 3, replace=False) for t in pair]
        pick += [rng.choice(self.members(g), 3, replace=False) for g in (INCIDENTAL, STOPWORD)]
        ids = np.concatenate(pick)
        rng.shuffle(ids)
        bag = np.concatenate([rng.choice(self.members(t), 5, replace=False) for t in pair])
        return [self.words[i] for i in ids], [self.words[i] for i in bag]

    def unigram(self, n: int = 5000, seed: int = 0) -> np.ndarray:
        """(V,) word probabilities estimated from n sampled sentences (for SIF weights)."""
        rng = np.random.default_rng([seed, 7])
        index = {w: i for i, w in enumerate(self.words)}
        counts = np.zeros(len(self.words))
        for pair in self.random_pairs(n, rng):
            for w in self.sentence(pair, rng)[0]:
                counts[index[w]] += 1
        return counts / counts.sum()


def topic_corpus(seed: int = 0, d: int = 48, n_topics: int = 8, per_topic: int = 15, n_incidental: int = 60,
                 noise: float = 0.1) -> TopicCorpus:
    """The corpus geometry of `seed` (module docstring)."""
    rng = np.random.default_rng([seed, 48])
    if n_topics > d:
        raise ValueError(f"{n_topics} orthonormal topic centres need d >= {n_topics}, got {d}")
    centres = np.linalg.qr(rng.standard_normal((d, n_topics)))[0].T  # (T, d)
    topical = np.repeat(centres, per_topic, 0) + noise * rng.standard_normal((n_topics * per_topic, d))
    other = rng.standard_normal((n_incidental + len(STOP), d))
    vectors = np.concatenate([topical, other])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = ([f"t{t}w{i}" for t in range(n_topics) for i in range(per_topic)]
             + [f"x{i}" for i in range(n_incidental)] + list(STOP))
    topic = np.concatenate([np.repeat(np.arange(n_topics), per_topic), np.full(n_incidental, INCIDENTAL),
                            np.full(len(STOP), STOPWORD)])
    return TopicCorpus(words, vectors, centres, topic)


def topic_examples(corpus: TopicCorpus, vocab: Sequence[str], n: int, seed: int
                   ) -> tuple[FacetExamples, np.ndarray]:
    """n training examples of the facet model (input ids ending with <eos>, target ids into `corpus.words`) and
    their topic pairs (n, 2)."""
    rng = np.random.default_rng([seed, 11])
    ids = {w: i for i, w in enumerate(vocab)}
    tid = {w: i for i, w in enumerate(corpus.words)}
    pairs = corpus.random_pairs(n, rng)
    ex = FacetExamples([], [])
    for pair in pairs:
        words, bag = corpus.sentence(pair, rng)
        ex.inputs.append(np.array([ids[w] for w in words] + [ids[EOS]], dtype=np.int64))
        ex.targets.append(np.array([tid[w] for w in bag], dtype=np.int64))
    return ex, pairs
