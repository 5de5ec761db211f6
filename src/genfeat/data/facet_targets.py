"""The data section of a facet-embedding run (thesis C §3.2): which corpus, unit and target table, and the target
table itself, `load_targets` (the word vectors the facets live among, or the synthetic corpus's own), and a run's
examples, `training_data` (the input vocabulary, the target table and the train / valid sentences or phrases).
Training (`recipes/facets.py`) and inference on a finished run (`models/facets/inference.py`) read a run's data the
same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genfeat.data.facets import (
    EOS,
    PAD,
    UNK,
    FacetExamples,
    build_vocab,
    noun_lexicon,
    phrase_examples,
    sentence_examples,
    tokenize,
)
from genfeat.data.sentences import documents
from genfeat.data.topic_corpus import topic_corpus, topic_examples
from genfeat.data.word_vectors import named_vectors
from genfeat.errors import ConfigError

SYNTHETIC_SIZES = {"train": 16_000, "valid": 320}  # sentences of data.corpus=synthetic (1,000 steps of 16)


@dataclass(frozen=True)
class FacetDataConfig:
    corpus: str = "bbc-news"  # "+"-joined: bbc-news, wiki, austen, kjv, shakespeare, python-doc, linux-doc, dir:PATH;
    #   or synthetic (the spec's two-topic corpus, data/topic_corpus.py: its own 48d target vectors, seed split_seed)
    dedupe: bool = False  # drop sentences seen before (data.sentences.documents); the multi-corpus preset sets it
    split_seed: int = 0
    vectors: str = "glove-6b-50d"  # or the path of a GloVe / word2vec text file
    min_count: int = 3  # the input vocabulary
    max_len: int = 50
    max_targets: int = 30
    batch_size: int = 64
    limit_docs: int = 0  # > 0: the first N documents per split (tests)
    unit: str = "sentence"  # sentence (targets: the neighbouring sentences' words) | phrase (noun phrases by the
    #   WordNet-lexicon rule of data/facets.py; targets: the words within `window` tokens; needs the wordnet source)
    window: int = 5
    stop_words: str = "english"  # never targets: genfeat's English function words, or a file of one word a line
    #   (data/stop_words.py); punctuation is never a target either way

    def __post_init__(self) -> None:
        if self.unit not in ("sentence", "phrase"):
            raise ConfigError(f"data.unit must be sentence or phrase, got {self.unit!r}")
        if min(self.min_count, self.max_len, self.max_targets, self.batch_size, self.window) < 1 or self.limit_docs < 0:
            raise ConfigError("data.min_count, max_len, max_targets, batch_size and window must be >= 1 and "
                              "limit_docs >= 0")


def load_targets(dc: FacetDataConfig, vocab_hint: set[str], d: int) -> tuple[list[str], np.ndarray]:
    """(target words, their vectors) of the configured table; `d`: the synthetic corpus's dimension
    (model.d_target)."""
    if dc.corpus == "synthetic":
        corpus = topic_corpus(dc.split_seed, d=d)
        return corpus.words, corpus.vectors
    return named_vectors(dc.vectors, vocab_hint)


def training_data(dc: FacetDataConfig, d_target: int, seed: int
                  ) -> tuple[list[str], list[str], np.ndarray, dict[str, FacetExamples]]:
    """(input vocabulary, target words, their vectors (V_t, E), {"train", "valid"} examples) of the configured corpus
    and unit; `d_target` the synthetic corpus's width; the synthetic corpus's geometry is `split_seed`'s, its
    sentences are drawn per split; `seed` draws the targets kept of a long list."""
    if dc.corpus == "synthetic":
        corpus = topic_corpus(dc.split_seed, d=d_target)
        vocab = [PAD, UNK, EOS, *corpus.words]
        ex = {k: topic_examples(corpus, vocab, n, seed=1000 * dc.split_seed + i)[0]
              for i, (k, n) in enumerate(SYNTHETIC_SIZES.items())}
        return vocab, corpus.words, corpus.vectors, ex
    docs = documents(dc.corpus, dc.split_seed, dc.limit_docs, dedupe=dc.dedupe)
    vocab = build_vocab(docs["train"], dc.min_count)
    seen = {t for split in docs.values() for d in split for s in d for t in tokenize(s)}
    target_words, target_vecs = load_targets(dc, seen, d_target)
    if dc.unit == "phrase":
        lexicon = noun_lexicon()
        ex = {k: phrase_examples(v, vocab, target_words, lexicon, dc.window, dc.max_targets, seed,
                                 dc.stop_words) for k, v in docs.items()}
    else:
        ex = {k: sentence_examples(v, vocab, target_words, dc.max_len, dc.max_targets, seed, dc.stop_words)
              for k, v in docs.items()}
    return vocab, target_words, target_vecs, ex
