"""Interactive, topic-controlled generation (thesis C §4, Algorithm 3, Eq. 4.1; spec interactive-generation.md):
a conditional generator (a GPT decoder that reads inserted topic vectors) and an option generator (prompt -> K
topic centres in word-vector space) in one run directory.

    genfeat run interactive --preset tiny --out runs/interactive-tiny      # the spec §8 synthetic corpus, a minute
    genfeat run lm --preset prose --out runs/lm-prose                      # the pretrained LM (about 75 minutes)
    genfeat run interactive --preset prose --init runs/lm-prose/hf --out runs/interactive-prose

    data        `tasks.topic_worlds` (data.source):
                tiny: the spec §8.1 topic-chain corpus (`data.topic_chain`): word-level tokens, its own 32-d
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
    evaluation  `tasks.topic_worlds.held_out_claims`: tiny, the spec §8.2 claims G1-G4 on held-out documents
                (`tasks.topic_options.chain_claims`); prose, Table 4.1 on the test split
                (`tasks.prose_options.option_table`: Sim, Sim Short, Sim Diff of ours, K-means / Sample local,
                K-means / LDA / Sample global)

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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genfeat.data.batches import EpochBatches
from genfeat.errors import ConfigError
from genfeat.losses.nnsc import NNSCConfig
from genfeat.models.facets import FacetConfig
from genfeat.models.gpt import GPTConfig, GPTDecoder, build_gpt_lm
from genfeat.models.gpt.hf import load_pretrained_weights
from genfeat.models.interactive.inference import save_word_space
from genfeat.models.interactive.topics import option_generator
from genfeat.paradigms import fit_phase, fit_task
from genfeat.paradigms.phases import phase_dir
from genfeat.tasks.conditional_lm import HintConfig, HintedLanguageModeling
from genfeat.tasks.facet_prediction import NeighbourWordFacets
from genfeat.tasks.topic_worlds import InteractiveDataConfig, held_out_claims, prose_world, synthetic_world
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything

PHASE = "generator"  # the conditional generator's phase and folder (phases/generator/, what `load_run` reads)


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
    nnsc: NNSCConfig = field(default_factory=NNSCConfig)  # the thesis's λ 0.4 (the reference's 0.2 on a ½ error)
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


def run(cfg: InteractiveRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    info = D.setup(cfg.train.device)
    seed_everything(cfg.seed)
    dc = cfg.data
    if dc.source == "prose":
        world = prose_world(dc, cfg.init, cfg.hints.n_points * cfg.hints.max_n, cfg.seed)
    else:
        world = synthetic_world(dc, cfg.model, cfg.seed)
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
    gen_batches = EpochBatches(gen_task.train_rows, dc.batch_size, np.random.default_rng(cfg.seed),
                               info.rank, info.world_size)
    _, gen_scores = fit_phase(PHASE, D.wrap(lm, info), gen_task, gen_batches, cfg.generator_train, run_dir,
                              desc="interactive: conditional generator")

    # the last phase: the option generator on a copy of the generator's decoder
    encoder = GPTDecoder(dataclasses.replace(gcfg, cond_dim=0))  # a copy without the condition layers
    encoder.load_state_dict({k: v for k, v in lm.backbone.state_dict().items() if not k.startswith("cond_")})
    options = option_generator(encoder, cfg.options, world.pad_id).to(info.device)
    orows = world.opt_rows
    valid = [{k: v[a: a + 64] for k, v in orows["valid"].items()} for a in range(0, min(640, len(
        orows["valid"]["input_ids"])), 64)]
    opt_task = NeighbourWordFacets(cfg.nnsc.objective(table, cfg.seed), valid)
    opt_batches = EpochBatches(orows["train"], dc.batch_size, np.random.default_rng(cfg.seed + 1),
                               info.rank, info.world_size)
    res, scores = fit_task(D.wrap(options, info), opt_task, opt_batches, cfg.train, run_dir,
                           resume_from=resume_from, desc="interactive: option generator")
    if info.is_main:
        save_word_space(run_dir, world.words, world.pad_id, world.stop, gcfg, table, world.tokenizer)

    claims = held_out_claims(world, dc, options, lm, cfg.options.k, cfg.m_words, cfg.seed)
    scores = (scores | {k.replace("_", "_generator_", 1): v for k, v in gen_scores.items()}
              | {f"test_{k}": v for k, v in claims.scores.items()})
    n_params = sum(p.numel() for p in lm.parameters()) + sum(p.numel() for p in options.parameters())
    return record_fit(run_dir, f"Interactive generation (K={cfg.options.k}) {claims.title}", scores,
                      fit=res, started=t0, params=n_params,
                      details={"k": cfg.options.k, "generator_dir": str(phase_dir(".", PHASE)),
                               "vocab": len(world.words), **claims.details, **({"init": cfg.init} if cfg.init else {})},
                      notes=["*_generator_*: the conditional generator's validation NLL with hints drawn from a fixed "
                             "seed (loss) and without any (plain_loss).", claims.note])
