"""A GDAN network for a QA vocabulary (thesis Y §3.2.4; spec gdan.md §3.2): the reader D, the question generator G
when the method trains one, the domain tags and the GAN baseline's domain classifier, and embeddings started from
pretrained word vectors.

    build_gdan(GDANModelConfig(...), vocab, out_vocab, generator=True, tags=True, domain=False) -> GDAN

G's output vocabulary is the first `out_vocab` words of `vocab` (capped at its size; the rest are copied) and it
never writes <pad>, <bos> or a domain tag. With `word_vectors` set, every word with a vector starts D's and G's
embeddings there; the others, and <pad>, keep their random start.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from genfeat.data.qa import BOS, D_GEN, D_TRUE, PAD, QAVocab
from genfeat.data.word_vectors import named_vectors, vocab_table
from genfeat.errors import ConfigError
from genfeat.models.gdan.generator import GeneratorConfig, QuestionGenerator
from genfeat.models.gdan.model import GDAN
from genfeat.models.gdan.reader import GatedAttentionReader, ReaderConfig


@dataclass(frozen=True)
class GDANModelConfig:
    d_embed: int = 32
    reader_hidden: int = 32  # per direction
    n_hops: int = 2
    dropout: float = 0.2
    inter_layer_rnn: bool = True
    generator_hidden: int = 64
    max_question: int = 12  # T'
    max_span: int = 15
    word_vectors: str = ""  # "glove-6b-50d" or a GloVe / word2vec text file: D's and G's embeddings start there


def build_gdan(m: GDANModelConfig, vocab: QAVocab, out_vocab: int, generator: bool, tags: bool,
               domain: bool) -> GDAN:
    reader = GatedAttentionReader(ReaderConfig(len(vocab), m.d_embed, m.reader_hidden, m.n_hops, m.dropout,
                                               m.inter_layer_rnn))
    gen = None
    if generator:
        never = tuple(vocab[w] for w in (PAD, BOS, D_TRUE, D_GEN))
        gen = QuestionGenerator(GeneratorConfig(len(vocab), min(out_vocab, len(vocab)), m.d_embed,
                                                m.generator_hidden, max_len=m.max_question, never=never))
    model = GDAN(reader, gen, (vocab[D_TRUE], vocab[D_GEN]) if tags else None, domain=domain)
    if m.word_vectors:
        words, vectors = named_vectors(m.word_vectors, set(vocab.words))
        if vectors.shape[1] != m.d_embed:
            raise ConfigError(f"model.word_vectors {m.word_vectors!r} has {vectors.shape[1]} dimensions; set "
                              f"--model.d_embed {vectors.shape[1]}")
        table, found = vocab_table(list(vocab.words), words, vectors)
        found[vocab[PAD]] = False
        with torch.no_grad():  # words without a vector keep their random start
            for embed in (reader.embed, *((gen.embed,) if gen else ())):
                embed.weight[torch.from_numpy(found)] = torch.from_numpy(table[found])
    return model
