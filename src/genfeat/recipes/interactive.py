"""Interactive, topic-controlled generation (thesis C §4, Algorithm 3, Eq. 4.1; spec interactive-generation.md):
a conditional generator (a GPT decoder that reads inserted topic vectors) and an option generator (prompt -> K
topic centres in word-vector space) in one run directory.

    genfeat run interactive --preset tiny --out runs/interactive-tiny      # the spec §8 synthetic corpus, a minute
    genfeat run lm --preset prose --out runs/lm-prose                      # the pretrained LM (about 75 minutes)
    genfeat run interactive --preset prose --init runs/lm-prose/hf --out runs/interactive-prose

    data        tiny: the spec §8.1 topic-chain corpus (`data.topic_chain`): word-level tokens, its own 32-d
                "GloVe" vectors; the generator reads whole documents, the option generator prompts cut at a
                sentence boundary with the next sentence's content words as targets (`data.o_target`).
                prose: a real corpus (`data.corpus`, BBC News by default: news the pretrained LM never read) in
                GPT-2 BPE aligned with its words (`data.prose_topics`): content words with a GloVe vector
                (`data.vectors`) seen >= `data.min_count` times; the generator reads blocks of `data.seq_len`
                tokens, the option generator prompts of 16 .. 240 tokens ending at a word with the next 50
                content words as targets; the generator starts from `init` (a GPT-2 directory: the `lm` prose
                run's hf/, or a real GPT-2)
    paradigm    phase "generator" (`paradigms.fit_phase`): the GPT decoder with `cond_dim` trained on the next-token
                NLL with leaked future words inserted (`tasks.conditional_lm`: 5 points per sequence, n ~ U{0..10},
                hints from the O = 25 following non-stop words), selected on the hinted validation NLL;
                then the last phase: the option generator (`models.interactive.topics.option_generator`, the facet
                decoder over a copy of the generator's decoder) trained with the NNSC loss (Eq. 3.2, Algorithm 3:
                positives the continuation's non-stop words, negatives another prompt's), selected on the exact
                validation loss
    evaluation  tiny: the spec §8.2 claims G1-G4 on held-out documents (`tasks.topic_options.chain_claims`);
                prose: Table 4.1 on the test split (`tasks.prose_options.option_table`: Sim, Sim Short, Sim Diff
                of ours, K-means / Sample local, K-means / LDA / Sample global)

Run directory: phases/generator/ (the conditional generator's weights and evaluation), model.safetensors (the
option generator, whose encoder is its own copy of the decoder), words.json (the words topics are shown in, their
stop mask, the padding id and the generator's GPT config), vectors.npy (their unit word vectors), tokenizer.json
(prose: the model tokens' tokenizer), metrics.jsonl / summary.json as every run.

Deviations: AdamW for both phases (the reference trains the option generator with SGD at lr 1); GloVe 6B 50d in
place of GloVe 840B 300d (not offline); a regex word pattern in place of spaCy; K = 10 topics over a 4-layer,
d 256 GPT-2-shaped LM pretrained here (the thesis: GPT-2 and distilgpt2), BBC News instead of Wikipedia 2016.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from genfeat.config import atomic_write_text
from genfeat.data.batches import EpochBatches
from genfeat.data.corpora import load_corpus
from genfeat.data.future_words import next_content_words
from genfeat.data.lm_data import LMDataConfig, build_tokenizer
from genfeat.data.prose_topics import build_prose_topics, generator_rows, option_rows
from genfeat.data.stop_words import stop_list
from genfeat.data.tokenizers import GENFEAT_FILE, Tokenizer, load_tokenizer, save_tokenizer
from genfeat.data.topic_chain import SENTENCE, TopicChain, TopicChainConfig
from genfeat.data.word_vectors import named_vectors
from genfeat.errors import ConfigError
from genfeat.losses.nnsc import NNSCObjective
from genfeat.models.facets import FacetConfig
from genfeat.models.gpt import GPTConfig, GPTDecoder, build_gpt_lm
from genfeat.models.gpt.hf import load_pretrained_weights, pretrained_config
from genfeat.models.interactive.topics import option_generator
from genfeat.paradigms import fit_phase, fit_task
from genfeat.paradigms.phases import phase_dir
from genfeat.tasks.conditional_lm import HintedLanguageModeling
from genfeat.tasks.facet_prediction import NeighbourWordFacets
from genfeat.tasks.prose_options import global_centres, option_table, prose_prompts
from genfeat.tasks.topic_options import chain_claims, left_pad
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything

GENERATOR = "generator"  # the phase's name and the conditional generator's folder
WORDS = "words.json"
VECTORS = "vectors.npy"


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


@dataclass(frozen=True)
class HintConfig:
    n_points: int = 5
    max_n: int = 10
    min_rest: int = 20


@dataclass(frozen=True)
class OptionLossConfig:
    lam: float = 0.4  # the thesis's λ (the reference's λ' = 0.2 on a ½-scaled error)
    solver: str = "rmsprop"
    iters: int = 60
    batch_groups: int = 1  # negatives rotate within each of this many groups of a batch (what that many ranks do)


@dataclass(frozen=True)
class InteractiveRunConfig:
    seed: int = 0
    data: InteractiveDataConfig = field(default_factory=InteractiveDataConfig)
    # prose: a Hugging Face GPT-2 directory the generator starts from (the `lm` prose run's hf/, or GPT-2 itself);
    # its shape replaces model.*, its tokenizer (a genfeat run's) or GPT-2's BPE tokenizes the corpus
    init: str = ""
    model: GPTConfig = field(default_factory=lambda: GPTConfig(n_layer=2, n_head=2, d_model=64, max_len=128,
                                                               dropout=0.1))
    options: FacetConfig = field(default_factory=lambda: FacetConfig(d_model=32, d_target=32, k=4, n_dec=2, n_head=2,
                                                                     d_inner=128, dropout=0.1))
    hints: HintConfig = field(default_factory=HintConfig)
    nnsc: OptionLossConfig = field(default_factory=OptionLossConfig)
    m_words: int = 5  # words shown per topic (Appendix C.2)
    generator_train: TrainConfig = field(default_factory=lambda: TrainConfig(
        max_steps=600, lr=2e-3, warmup_steps=50, eval_every=200, log_every=50))
    train: TrainConfig = field(default_factory=lambda: TrainConfig(  # the option generator (the last phase)
        max_steps=300, lr=1e-3, warmup_steps=30, eval_every=100, log_every=50))

    def __post_init__(self) -> None:
        if self.init and self.data.source != "prose":
            raise ConfigError("init (a pretrained GPT-2 directory) is for data.source=prose; the synthetic corpus "
                              "has its own vocabulary")


def tiny() -> InteractiveRunConfig:
    """The spec §8 synthetic corpus: both generators in about a minute on 2 cores."""
    return InteractiveRunConfig()


def prose() -> InteractiveRunConfig:
    """BBC News on the pretrained prose LM (`--init runs/lm-prose/hf`): K = 10 topics of M = 5 words, a 5-layer
    option decoder; 100 generator steps of 16 x 128 tokens and 200 option-generator steps of 16 prompts, about 10
    minutes on 2 cores."""
    return InteractiveRunConfig(
        data=InteractiveDataConfig(source="prose", o_target=50, batch_size=16, eval_prompts=200),
        options=FacetConfig(d_model=128, d_target=50, k=10, n_dec=5, n_head=4, d_inner=512, dropout=0.1),
        generator_train=TrainConfig(max_steps=100, lr=3e-4, warmup_steps=10, eval_every=50, log_every=10),
        train=TrainConfig(max_steps=200, lr=3e-4, warmup_steps=20, eval_every=100, log_every=10))


PRESETS = {"tiny": tiny, "prose": prose}


def _rows(corpus: TopicChain, docs: np.ndarray, o_hint: int) -> dict[str, torch.Tensor]:
    """The generator's rows: whole documents and each position's future words (table rows = word ids)."""
    tokens = corpus.docs[docs]  # (N, L + 1)
    L = tokens.shape[1] - 1
    rows = np.where(corpus.is_stop, -1, np.arange(len(corpus.words)))
    future = np.stack([next_content_words(np.arange(L + 1), rows[t], L, o_hint) for t in tokens])
    return {"input_ids": torch.as_tensor(tokens), "future": torch.as_tensor(future),
            "row_id": torch.as_tensor(docs)}


def _option_rows(corpus: TopicChain, docs: np.ndarray, o_target: int, pad_id: int) -> dict[str, torch.Tensor]:
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
    corpus: Any = None  # synthetic: the TopicChain; prose: the ProseTopics


def synthetic_world(cfg: InteractiveRunConfig) -> World:
    corpus = TopicChain(dataclasses.replace(cfg.data.chain, seed=cfg.data.chain.seed + cfg.seed))
    split = corpus.split()
    pad_id = len(corpus.words)  # the token after the vocabulary
    return World(dataclasses.replace(cfg.model, vocab_size=pad_id + 1), pad_id, torch.as_tensor(corpus.vectors),
                 corpus.words, corpus.is_stop,
                 {s: _rows(corpus, d, cfg.data.o_hint) for s, d in split.items() if s != "test"},
                 {s: _option_rows(corpus, d, cfg.data.o_target, pad_id) for s, d in split.items() if s != "test"},
                 corpus=corpus)


def prose_tokenizer(init: str) -> Tokenizer:
    """A genfeat run's hf/ keeps its tokenizer; any other GPT-2 directory is read with GPT-2's BPE."""
    if init and (Path(init) / GENFEAT_FILE).is_file():
        return load_tokenizer(Path(init))
    return build_tokenizer(LMDataConfig(tokenizer="gpt2"), [])


def prose_world(cfg: InteractiveRunConfig) -> World:
    dc = cfg.data
    if not cfg.init:
        raise ConfigError("data.source=prose starts the generator from a pretrained GPT-2 directory: give --init "
                          "(e.g. the hf/ of `genfeat run lm --preset prose --out runs/lm-prose`)")
    tok = prose_tokenizer(cfg.init)
    if tok.eos_id is None:
        raise ConfigError(f"{cfg.init}: its tokenizer has no end-of-text token to pad prompts with")
    model = pretrained_config(cfg.init)
    if model.vocab_size != tok.vocab_size:
        raise ConfigError(f"{cfg.init} has a vocabulary of {model.vocab_size}, its tokenizer {tok.vocab_size}")
    splits = load_corpus(dc.corpus)
    vector_words, vectors = named_vectors(dc.vectors)
    corpus = build_prose_topics(splits, tok, vector_words, vectors, stop_list(), dc.min_count)
    lo, hi = dc.prompt_tokens
    if hi > model.max_len:
        raise ConfigError(f"data.prompt_tokens reaches {hi} tokens, the model's context is {model.max_len}")
    most = dc.seq_len + cfg.hints.n_points * cfg.hints.max_n
    if most > model.max_len:
        raise ConfigError(f"a block of data.seq_len={dc.seq_len} tokens with up to {cfg.hints.n_points} x "
                          f"{cfg.hints.max_n} hints inserted is {most} positions; the model's context is "
                          f"{model.max_len}")
    gen = {s: generator_rows(corpus.streams[s], dc.seq_len, dc.o_hint, dc.limit or (0 if s == "train" else 64))
           for s in ("train", "valid")}
    opt = {s: option_rows(corpus.streams[s], dc.o_target, lo, hi, dc.stride, tok.eos_id, cfg.seed + i,
                          dc.limit or (0 if s == "train" else 256)) for i, s in enumerate(("train", "valid"))}
    return World(model, tok.eos_id, torch.as_tensor(corpus.table), corpus.words, np.zeros(len(corpus.words), bool),
                 gen, opt, tokenizer=tok, corpus=corpus)


def prose_claims(options, cfg: InteractiveRunConfig, world: World) -> dict[str, float]:
    """Table 4.1 on the test split: {method}_{sim, sim_diff, sim_short, sim_short_diff}."""
    dc, corpus = cfg.data, world.corpus
    test = corpus.streams["test"]
    glob = global_centres(corpus.streams["train"], corpus.table, 1000, 150, dc.seq_len, cfg.seed)
    res = {}
    for name, n_words in zip(("sim", "sim_short"), dc.prompt_words, strict=True):
        prompts = prose_prompts(test, dc.eval_prompts, n_words, dc.o_eval, cfg.seed, dc.prompt_tokens[1])
        table = option_table(options, prompts, world.table, world.pad_id, cfg.options.k, cfg.m_words, glob, cfg.seed)
        for method, d in table.items():
            res[f"{method}_{name}"], res[f"{method}_{name}_diff"] = d["sim"], d["sim_diff"]
    return res


def run(cfg: InteractiveRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    info = D.setup(cfg.train.device)
    seed_everything(cfg.seed)
    world = prose_world(cfg) if cfg.data.source == "prose" else synthetic_world(cfg)
    table = world.table
    if cfg.options.d_target != table.size(1):
        raise ConfigError(f"options.d_target={cfg.options.d_target}, the word vectors have {table.size(1)} dims")

    # phase 1: the conditional generator
    gcfg = dataclasses.replace(world.model, cond_dim=table.size(1))
    lm = build_gpt_lm(gcfg)
    if cfg.init:
        load_pretrained_weights(lm, cfg.init)  # the condition layers keep their initialisation
    lm = lm.to(info.device)
    gen_task = HintedLanguageModeling(world.gen_rows, table, cfg.seed, **dataclasses.asdict(cfg.hints))
    gen_batches = EpochBatches(gen_task.train_rows, cfg.data.batch_size, np.random.default_rng(cfg.seed),
                               info.rank, info.world_size)
    _, gen_scores = fit_phase(GENERATOR, D.wrap(lm, info), gen_task, gen_batches, cfg.generator_train, run_dir,
                              desc="interactive: conditional generator")

    # the last phase: the option generator on a copy of the generator's decoder
    encoder = GPTDecoder(dataclasses.replace(gcfg, cond_dim=0))  # a copy without the condition layers
    encoder.load_state_dict({k: v for k, v in lm.backbone.state_dict().items() if not k.startswith("cond_")})
    options = option_generator(encoder, cfg.options, world.pad_id).to(info.device)
    objective = NNSCObjective(table, cfg.nnsc.lam, cfg.nnsc.solver, cfg.nnsc.iters, cfg.seed,
                              batch_groups=cfg.nnsc.batch_groups)
    orows = world.opt_rows
    valid = [{k: v[a: a + 64] for k, v in orows["valid"].items()} for a in range(0, min(640, len(
        orows["valid"]["input_ids"])), 64)]
    opt_task = NeighbourWordFacets(objective, valid)
    opt_batches = EpochBatches(orows["train"], cfg.data.batch_size, np.random.default_rng(cfg.seed + 1),
                               info.rank, info.world_size)
    res, scores = fit_task(D.wrap(options, info), opt_task, opt_batches, cfg.train, run_dir,
                           resume_from=resume_from, desc="interactive: option generator")
    if info.is_main:
        atomic_write_text(Path(run_dir) / WORDS, json.dumps({
            "words": world.words, "pad_id": world.pad_id, "stop": world.stop.tolist(),
            "generator": dataclasses.asdict(dataclasses.replace(gcfg, cond_dim=0))}) + "\n")
        np.save(Path(run_dir) / VECTORS, table.numpy())
        if world.tokenizer is not None:
            save_tokenizer(world.tokenizer, run_dir)
    if cfg.data.source == "prose":
        claims = prose_claims(options, cfg, world)
        title, details = "on real prose", {"corpus": cfg.data.corpus, "init": cfg.init}
        note = ("test_*: Table 4.1 on the test split (`tasks.prose_options.option_table`): Sim / Sim Diff on prompts "
                f"of {cfg.data.prompt_words[0]} words, Sim Short / its Diff on {cfg.data.prompt_words[1]}, "
                f"O' = {cfg.data.o_eval}.")
    else:
        split = world.corpus.split()
        claims = chain_claims(options, lm, world.corpus, split["test"], table, world.pad_id, cfg.options.k,
                              cfg.m_words, cfg.data.eval_prompts, cfg.data.condition_prompts, cfg.seed)
        title, details = "on the topic-chain corpus", {"docs": {s: len(d) for s, d in split.items()}}
        note = ("test_*: the spec §8.2 claims on held-out documents (`tasks.topic_options.chain_claims`): Sim / Sim "
                "Diff of each option method, the successor coverage (G2) and the shares of s_1 / s_2 content words "
                "with no topic, s_1's or s_2's inserted (G4).")
    scores = (scores | {k.replace("_", "_generator_", 1): v for k, v in gen_scores.items()}
              | {f"test_{k}": v for k, v in claims.items()})
    n_params = sum(p.numel() for p in lm.parameters()) + sum(p.numel() for p in options.parameters())
    return record_fit(run_dir, f"Interactive generation (K={cfg.options.k}) {title}", scores,
                      fit=res, started=t0, params=n_params,
                      details={"k": cfg.options.k, "generator_dir": str(phase_dir(".", GENERATOR)),
                               "vocab": len(world.words), **details},
                      notes=["*_generator_*: the conditional generator's validation NLL with hints drawn from a fixed "
                             "seed (loss) and without any (plain_loss).", note])
