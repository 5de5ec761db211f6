"""The synthetic topic-chain corpus of interactive generation's small-scale reproduction (spec
interactive-generation.md §8.1): each topic has two equally likely successor topics, so the future of a prompt is
two-way, which one option-generator centre cannot cover and K can (claim G2), and which a hint can decide (G4).

    geometry    d = 32 ("GloVe" space); T = 12 orthonormal topic centres μ_t (QR of a Gaussian matrix); 10 content
                words per topic with vectors normalise(μ_t + 0.1 ε); 15 stop words (the period among them) with
                random unit vectors
    chain       successors s_1(t) ≠ s_2(t), both ≠ t (a fixed random table); a document is 5 sentences: the first
                topic uniform, each next one s_1 or s_2 of the previous with probability ½
    sentence    8 tokens: 4 content words of its topic (with replacement) and 4 stop words in a fixed template,
                the last a period: S C C S C S C .

Word-level tokens (one token per word), so the GPT-2 / word alignment is the identity. Words are named t<topic>w<i>
and s<i> ("." for the period); everything is a function of the seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

TEMPLATE = "SCCSCSC."  # S: a stop word, C: a content word, .: the period
SENTENCE = len(TEMPLATE)


@dataclass(frozen=True)
class TopicChainConfig:
    n_topics: int = 12
    words_per_topic: int = 10
    n_stop: int = 15  # with the period
    dim: int = 32
    noise: float = 0.1
    sentences: int = 5  # per document
    n_docs: int = 3000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_topics < 3 or self.n_topics > self.dim:
            raise ValueError(f"n_topics={self.n_topics}: at least 3 (two successors besides itself) and at most "
                             f"dim={self.dim} (orthonormal centres)")
        if min(self.words_per_topic, self.sentences, self.n_docs) < 1 or self.n_stop < 4:
            raise ValueError("words_per_topic, sentences and n_docs must be >= 1 and n_stop >= 4")


class TopicChain:
    """Vocabulary, word vectors, successor table and documents of one `TopicChainConfig`."""

    def __init__(self, cfg: TopicChainConfig):
        self.cfg = cfg
        rng = np.random.default_rng(cfg.seed)
        q, _ = np.linalg.qr(rng.standard_normal((cfg.dim, cfg.dim)))
        self.centres = q[:, : cfg.n_topics].T.astype(np.float32)  # (T, d) orthonormal rows
        self.words = ([f"t{t}w{i}" for t in range(cfg.n_topics) for i in range(cfg.words_per_topic)]
                      + [f"s{i}" for i in range(cfg.n_stop - 1)] + ["."])
        content = np.repeat(self.centres, cfg.words_per_topic, 0)
        content = content + cfg.noise * rng.standard_normal(content.shape)
        stop = rng.standard_normal((cfg.n_stop, cfg.dim))
        vec = np.concatenate([content, stop]).astype(np.float32)
        self.vectors = vec / np.linalg.norm(vec, axis=1, keepdims=True)  # (V, d) unit rows
        self.topic_of = np.concatenate([np.repeat(np.arange(cfg.n_topics), cfg.words_per_topic),
                                        np.full(cfg.n_stop, -1)])  # (V,) -1: a stop word
        succ = np.zeros((cfg.n_topics, 2), dtype=np.int64)
        for t in range(cfg.n_topics):
            succ[t] = rng.choice([u for u in range(cfg.n_topics) if u != t], 2, replace=False)
        self.successors = succ  # (T, 2)
        self.docs, self.doc_topics = self._documents(rng)

    @property
    def stop_ids(self) -> np.ndarray:
        return np.flatnonzero(self.topic_of < 0)

    @cached_property
    def is_stop(self) -> np.ndarray:
        return self.topic_of < 0

    def _documents(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        c = self.cfg
        topics = np.zeros((c.n_docs, c.sentences), dtype=np.int64)
        topics[:, 0] = rng.integers(0, c.n_topics, c.n_docs)
        for s in range(1, c.sentences):
            topics[:, s] = self.successors[topics[:, s - 1], rng.integers(0, 2, c.n_docs)]
        n_content = TEMPLATE.count("C")
        stops = self.stop_ids[:-1]  # the period is the template's last token only
        docs = np.zeros((c.n_docs, c.sentences, SENTENCE), dtype=np.int64)
        words = topics[..., None] * c.words_per_topic + rng.integers(0, c.words_per_topic,
                                                                     (c.n_docs, c.sentences, n_content))
        cpos = [i for i, ch in enumerate(TEMPLATE) if ch == "C"]
        spos = [i for i, ch in enumerate(TEMPLATE) if ch == "S"]
        docs[..., cpos] = words
        docs[..., spos] = stops[rng.integers(0, len(stops), (c.n_docs, c.sentences, len(spos)))]
        docs[..., -1] = len(self.words) - 1
        return docs.reshape(c.n_docs, -1), topics  # (n_docs, sentences * 8), (n_docs, sentences)

    def split(self, valid: float = 0.1, test: float = 0.1) -> dict[str, np.ndarray]:
        """Document indices of train / valid / test (contiguous: documents are independent draws)."""
        n = self.cfg.n_docs
        a, b = int(n * (1 - valid - test)), int(n * (1 - test))
        return {"train": np.arange(a), "valid": np.arange(a, b), "test": np.arange(b, n)}
