"""What interactive generation trains and is judged on (thesis C §4; spec interactive-generation.md): a `World` holds
the conditional generator's rows, the option generator's prompts and the word space topics are shown in, for
either of two sources, and `held_out_claims` scores the two trained generators on that source's held-out split.

    synthetic   the spec §8.1 topic-chain corpus (`data.topic_chain`): word-level tokens, its own "GloVe" vectors;
                the generator reads whole documents, the option generator prompts cut at a sentence boundary with
                the next sentence's content words as targets (`o_target`); claims G1-G4 of spec §8.2
                (`tasks.topic_options.chain_claims`)
    prose       a real corpus (`corpus`) in the pretrained LM's tokens aligned with its words (`data.prose_topics`):
                content words with a word vector (`vectors`) seen >= `min_count` times; generator blocks of
                `seq_len` tokens, option prompts of `prompt_tokens` tokens ending at a word with the next `o_target`
                content words as targets; Table 4.1 on the test split (`tasks.prose_options.option_table`)

Shapes: generator rows input_ids (N, L + 1), future (N, L + 1, o_hint); option rows input_ids (P, T) left-padded,
targets / target_mask (P, o_target); table (V, E) unit rows.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from genfeat.data.corpora import load_corpus
from genfeat.data.future_words import next_content_words
from genfeat.data.lm_data import LMDataConfig, build_tokenizer
from genfeat.data.prose_topics import ProseTopics, build_prose_topics, generator_rows, option_rows
from genfeat.data.stop_words import stop_list
from genfeat.data.tokenizers import GENFEAT_FILE, Tokenizer, load_tokenizer
from genfeat.data.topic_chain import SENTENCE, TopicChain, TopicChainConfig
from genfeat.data.word_vectors import named_vectors
from genfeat.errors import ConfigError
from genfeat.models.gpt import GPTConfig
from genfeat.models.gpt.hf import pretrained_config
from genfeat.tasks.prose_options import global_centres, option_table, prose_prompts
from genfeat.tasks.topic_options import chain_claims, left_pad


@dataclass(frozen=True)
class InteractiveDataConfig:
    source: str = "synthetic"  # synthetic (the spec §8.1 topic-chain corpus) | prose (`corpus`)
    chain: TopicChainConfig = field(default_factory=TopicChainConfig)
    corpus: str = "bbc-news"  # prose: any `data.corpora` name
    vectors: str = "glove-6b-50d"  # prose: or a GloVe / word2vec text file
    min_count: int = 5  # prose: a content word occurs this often in the training split
    seq_len: int = 128  # prose: the generator's blocks
    prompt_tokens: tuple[int, int] = (16, 240)  # prose: the option generator's training prompts, in tokens
    stride: int = 64  # prose: a training prompt about every this many tokens
    limit: int = 0  # prose: > 0 keeps the first blocks / prompts of each split (tests)
    o_hint: int = 25  # hint words per insertion point (§4.3)
    o_target: int = 4  # option-generator targets per prompt: synthetic, the next sentence's content words
    o_eval: int = 25  # prose: O' of Eq. 4.2
    prompt_words: tuple[int, int] = (180, 35)  # prose: Table 4.1's Sim and Sim Short prompts, in words
    batch_size: int = 32
    eval_prompts: int = 300  # G1-G3 (spec §8.2); prose: Table 4.1's prompts of each length
    condition_prompts: int = 200  # G4

    def __post_init__(self) -> None:
        if self.source not in ("synthetic", "prose"):
            raise ConfigError(f"data.source must be synthetic or prose, got {self.source!r}")
        if min(self.o_hint, self.o_target, self.o_eval, self.batch_size, self.eval_prompts, self.condition_prompts,
               self.min_count, self.seq_len, self.stride, *self.prompt_tokens, *self.prompt_words) < 1:
            raise ConfigError("data.o_hint, o_target, o_eval, batch_size, eval_prompts, condition_prompts, "
                              "min_count, seq_len, stride, prompt_tokens and prompt_words must be >= 1")
        if self.prompt_tokens[0] > self.prompt_tokens[1]:
            raise ConfigError(f"data.prompt_tokens={self.prompt_tokens}: the shortest is longer than the longest")


@dataclass
class World:
    """What both phases read: the generator's config and rows, the option generator's rows, the word table."""

    model: GPTConfig  # the generator's decoder before its condition layers
    pad_id: int  # left padding of prompts (masked)
    table: torch.Tensor  # (V, E) unit rows
    words: list[str]
    stop: np.ndarray  # (V,) bool: never shown in a topic
    gen_rows: dict[str, dict[str, torch.Tensor]]  # train, valid
    opt_rows: dict[str, dict[str, torch.Tensor]]  # train, valid
    tokenizer: Tokenizer | None = None  # prose
    corpus: TopicChain | ProseTopics | None = None


@dataclass(frozen=True)
class Claims:
    """`held_out_claims`' answer: the scores (test_* in the summary), the source's title, details and note."""

    scores: dict[str, float]
    title: str
    details: dict[str, Any]
    note: str


def _chain_rows(corpus: TopicChain, docs: np.ndarray, o_hint: int) -> dict[str, torch.Tensor]:
    """The generator's rows: whole documents and each position's future words (table rows = word ids)."""
    tokens = corpus.docs[docs]  # (N, L + 1)
    L = tokens.shape[1] - 1
    rows = np.where(corpus.is_stop, -1, np.arange(len(corpus.words)))
    future = np.stack([next_content_words(np.arange(L + 1), rows[t], L, o_hint) for t in tokens])
    return {"input_ids": torch.as_tensor(tokens), "future": torch.as_tensor(future),
            "row_id": torch.as_tensor(docs)}


def _chain_prompts(corpus: TopicChain, docs: np.ndarray, o_target: int, pad_id: int) -> dict[str, torch.Tensor]:
    """Prompts cut after every sentence but the last, left-padded; targets the next content words."""
    S = corpus.cfg.sentences
    prompts, targets = [], []
    for d in docs:
        toks = corpus.docs[d]
        for s in range(1, S):
            rest = toks[s * SENTENCE:]
            prompts.append(toks[: s * SENTENCE])
            targets.append(rest[~corpus.is_stop[rest]][:o_target])
    ids, _ = left_pad(prompts, pad_id)
    tgt = torch.zeros(len(targets), o_target, dtype=torch.long)
    for i, t in enumerate(targets):
        tgt[i, : len(t)] = torch.as_tensor(t)
    mask = torch.arange(o_target)[None] < torch.as_tensor([len(t) for t in targets])[:, None]
    return {"input_ids": ids, "targets": tgt, "target_mask": mask}


def synthetic_world(dc: InteractiveDataConfig, model: GPTConfig, seed: int) -> World:
    """The topic-chain corpus of run seed `seed`; the generator `model` gets its vocabulary and a padding token."""
    corpus = TopicChain(dataclasses.replace(dc.chain, seed=dc.chain.seed + seed))
    split = corpus.split()
    pad_id = len(corpus.words)  # the token after the vocabulary
    return World(dataclasses.replace(model, vocab_size=pad_id + 1), pad_id, torch.as_tensor(corpus.vectors),
                 corpus.words, corpus.is_stop,
                 {s: _chain_rows(corpus, d, dc.o_hint) for s, d in split.items() if s != "test"},
                 {s: _chain_prompts(corpus, d, dc.o_target, pad_id) for s, d in split.items() if s != "test"},
                 corpus=corpus)


def prose_tokenizer(init: str) -> Tokenizer:
    """A genfeat run's hf/ keeps its tokenizer; any other GPT-2 directory is read with GPT-2's BPE."""
    if init and (Path(init) / GENFEAT_FILE).is_file():
        return load_tokenizer(Path(init))
    return build_tokenizer(LMDataConfig(tokenizer="gpt2"), [])


def prose_world(dc: InteractiveDataConfig, init: str, max_inserted: int, seed: int) -> World:
    """`dc.corpus` in the tokens of the GPT-2 directory `init`; `max_inserted`: the most hint vectors one generator
    block gets (its blocks must still fit the model's context)."""
    if not init:
        raise ConfigError("data.source=prose starts the generator from a pretrained GPT-2 directory: give --init "
                          "(e.g. the hf/ of `genfeat run lm --preset prose --out runs/lm-prose`)")
    tok = prose_tokenizer(init)
    if tok.eos_id is None:
        raise ConfigError(f"{init}: its tokenizer has no end-of-text token to pad prompts with")
    model = pretrained_config(init)
    if model.vocab_size != tok.vocab_size:
        raise ConfigError(f"{init} has a vocabulary of {model.vocab_size}, its tokenizer {tok.vocab_size}")
    vector_words, vectors = named_vectors(dc.vectors)
    corpus = build_prose_topics(load_corpus(dc.corpus), tok, vector_words, vectors, stop_list(), dc.min_count)
    lo, hi = dc.prompt_tokens
    if hi > model.max_len:
        raise ConfigError(f"data.prompt_tokens reaches {hi} tokens, the model's context is {model.max_len}")
    if dc.seq_len + max_inserted > model.max_len:
        raise ConfigError(f"a block of data.seq_len={dc.seq_len} tokens with up to {max_inserted} hints inserted "
                          f"is {dc.seq_len + max_inserted} positions; the model's context is {model.max_len}")
    gen = {s: generator_rows(corpus.streams[s], dc.seq_len, dc.o_hint, dc.limit or (0 if s == "train" else 64))
           for s in ("train", "valid")}
    opt = {s: option_rows(corpus.streams[s], dc.o_target, lo, hi, dc.stride, tok.eos_id, seed + i,
                          dc.limit or (0 if s == "train" else 256)) for i, s in enumerate(("train", "valid"))}
    return World(model, tok.eos_id, torch.as_tensor(corpus.table), corpus.words, np.zeros(len(corpus.words), bool),
                 gen, opt, tokenizer=tok, corpus=corpus)


def held_out_claims(world: World, dc: InteractiveDataConfig, options: nn.Module, lm: nn.Module, k: int, m_words: int,
                    seed: int) -> Claims:
    """The trained option generator `options` (K = `k` topics of `m_words` words) and conditional generator `lm`
    on the world's held-out split: the spec §8.2 claims (synthetic) or Table 4.1 (prose)."""
    if dc.source == "prose":
        corpus = world.corpus
        glob = global_centres(corpus.streams["train"], corpus.table, 1000, 150, dc.seq_len, seed)
        scores = {}
        for name, n_words in zip(("sim", "sim_short"), dc.prompt_words, strict=True):
            prompts = prose_prompts(corpus.streams["test"], dc.eval_prompts, n_words, dc.o_eval, seed,
                                    dc.prompt_tokens[1])
            for method, d in option_table(options, prompts, world.table, world.pad_id, k, m_words, glob,
                                          seed).items():
                scores[f"{method}_{name}"], scores[f"{method}_{name}_diff"] = d["sim"], d["sim_diff"]
        return Claims(scores, "on real prose", {"corpus": dc.corpus},
                      "test_*: Table 4.1 on the test split (`tasks.prose_options.option_table`): Sim / Sim Diff on "
                      f"prompts of {dc.prompt_words[0]} words, Sim Short / its Diff on {dc.prompt_words[1]}, "
                      f"O' = {dc.o_eval}.")
    split = world.corpus.split()
    scores = chain_claims(options, lm, world.corpus, split["test"], world.table, world.pad_id, k, m_words,
                          dc.eval_prompts, dc.condition_prompts, seed)
    return Claims(scores, "on the topic-chain corpus", {"docs": {s: len(d) for s, d in split.items()}},
                  "test_*: the spec §8.2 claims on held-out documents (`tasks.topic_options.chain_claims`): Sim / "
                  "Sim Diff of each option method, the successor coverage (G2) and the shares of s_1 / s_2 content "
                  "words with no topic, s_1's or s_2's inserted (G4).")
