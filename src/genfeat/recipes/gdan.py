"""GDAN, generative domain-adaptive nets (thesis Y §3.2, Algorithm 1, Table 3.4; spec gdan.md): semi-supervised
extractive QA with questions generated for unlabelled (paragraph, answer) pairs.

    genfeat run gdan --preset tiny --out runs/gdan-tiny                 # the spec §5 synthetic world, about a minute
    genfeat run gdan --preset tiny --method sl                          # a Table 3.4 row (`--method`, below)
    genfeat run gdan --preset squad --data.root DIR --data.rate 0.1     # SQuAD files you have (not fetchable offline)
    genfeat run gdan --preset cbt_books --data.rate 0.2                 # the CBT-style books set (`data.cbt_books`)

    data        the synthetic QA world (`data.qa_synthetic`, spec §5.1): |L| = data.synthetic.n_labelled
                human-template questions, |U| (paragraph, answer) pairs from the simulated NER, dev and test
                questions on fresh paragraphs; `data.heldout` further unlabelled pairs held out of training (the
                reward of Q1 and the generator's health figures). Vocabulary: the training text (L, U); the first
                `data.out_vocab` ids (L's question words first) are G's output vocabulary
    task        word-level span QA (`tasks.word_span_qa`): SQuAD EM / F1 of the best span (at most
                model.max_span tokens) on dev (model selection, early stopping) and test
    network     `models.gdan.GDAN`: the gated-attention reader D (K = model.n_hops, BiGRUs between hops), the
                question generator G (GRU encoder with the answer feature, GRU decoder with attention and copying),
                the domain tags d_true / d_gen, the domain classifier of Gen + GAN
    paradigm    methods that use G: phase "generator" first (G by maximum likelihood on L, selected on dev
                NLL, `paradigms.fit_phase`), then D from random weights (`paradigms.fit_task`) with
                `paradigms.generative_adaptation.GenerativeAdaptation`

Methods (`--method`): sl, context, context_domain, gen, gen_gan, gen_dual, gen_domain, gdan (Gen + domain + adv),
passage_only (SL with every question blanked: Kaushik & Lipton's control). `train.max_steps` and
`train.eval_every` count D updates for every method: a method that trains G runs them as max_steps / t_d rounds of
t_d D updates and t_g G updates (spec §5.1: 1,500 D updates; GDAN 300 rounds of 5 + 1).

Summary: dev / test exact and f1; for methods with G: reward_mle / reward_rl (Q1: the mean log P_D,d_true(a | p,
q) of questions sampled by the MLE and the final generator for the held-out pairs, under the final D),
generated_nll_last20 (Q2: -J(U_G, d_gen, D) of the D updates, mean over the last 20 % of training), the
generator's health (unk / repeat / copy rate, length) for both generators, its decoding speed; D's training
throughput (paragraphs per second). questions.jsonl: 20 held-out pairs with the MLE and the final generator's
questions.

SQuAD (`data.source squad`, spec §4.2) and the CBT-style books (`data.source cbt_books`, after `genfeat data fetch
austen kjv bbc-news wordnet`): the protocols of `data.qa_worlds.squad_world` / `cbt_world` (L = data.rate × the
training questions, U = five rule-based or typed answers a passage without a labelled question). On the books D is
trained and read by the attention-sum over the answer word's occurrences (`models.gdan.reader.
answer_log_likelihood`), the task scores accuracy over the 10 candidates, G writes the 21st sentence with its
`xxxxx`. `model.word_vectors` ("glove-6b-50d" or a vector file, with model.d_embed its dimension) starts D's and
G's embeddings from pretrained vectors.

Deviations: the synthetic world stands in for SQuAD and Wikipedia on the CPU; Adam for D and G (the thesis: SGD);
the books set is a CBT-protocol substitute (no children's books, taggers or NER offline: `data.cbt_books`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genfeat.config import atomic_write_text
from genfeat.data.batches import StreamBatches
from genfeat.data.qa import QAVocab, qa_rows
from genfeat.data.qa_synthetic import SyntheticQAConfig
from genfeat.data.qa_worlds import SOURCE_NAMES, QADataConfig, load_world, with_context_questions
from genfeat.errors import ConfigError
from genfeat.models.gdan import GDANModelConfig, build_gdan
from genfeat.paradigms import fit_phase, fit_task
from genfeat.paradigms.generative_adaptation import (
    METHODS,
    GDANMethodConfig,
    GenerativeAdaptation,
    adaptation_batches,
    d_update_budget,
)
from genfeat.tasks.question_generation import QuestionGeneration, compare_generators
from genfeat.tasks.word_span_qa import WordSpanQA
from genfeat.train import distributed as D
from genfeat.train.loop import TrainConfig
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class GDANRunConfig:
    seed: int = 0
    method: str = "gdan"
    data: QADataConfig = field(default_factory=QADataConfig)
    model: GDANModelConfig = field(default_factory=GDANModelConfig)
    adapt: GDANMethodConfig = field(default_factory=GDANMethodConfig)
    generator_train: TrainConfig = field(default_factory=lambda: TrainConfig(
        max_steps=800, lr=1e-3, warmup_steps=1, schedule="constant", weight_decay=0.0, clip_norm=10.0,
        eval_every=100, log_every=50))
    train: TrainConfig = field(default_factory=lambda: TrainConfig(
        max_steps=1500, clip_norm=10.0, eval_every=250, log_every=25))

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")


def synthetic() -> GDANRunConfig:
    """Spec §5.1: the synthetic world with |L| = 50, 1,500 D updates (GDAN: 300 rounds of 5 + 1), G's MLE 800
    steps; G's output vocabulary the 100 first words (L's question words first: other persons are copied)."""
    return GDANRunConfig(data=QADataConfig(out_vocab=100))


def tiny() -> GDANRunConfig:
    """About a minute on 2 cores: the synthetic world with |U| = 1,000, 250 D updates, G's MLE 150 steps."""
    return GDANRunConfig(
        data=QADataConfig(synthetic=SyntheticQAConfig(n_unlabelled=1000, n_dev=200, n_test=300), heldout=100,
                          out_vocab=100),
        generator_train=dataclasses.replace(GDANRunConfig().generator_train, max_steps=150, eval_every=50),
        train=dataclasses.replace(GDANRunConfig().train, max_steps=250, eval_every=50))


def squad() -> GDANRunConfig:
    """SQuAD files at --data.root (thesis Y §3.2.5): 10 % of the training articles as test, labelling rate 0.1 of
    the original training questions from the rest, the official dev file for selection; U = five rule-based answers
    a paragraph from the pool's paragraphs without a labelled question; the spec §3.2 library sizes."""
    return GDANRunConfig(
        data=QADataConfig(source="squad", heldout=500),
        model=GDANModelConfig(d_embed=100, reader_hidden=128, n_hops=3, generator_hidden=256, max_question=30),
        train=dataclasses.replace(GDANRunConfig().train, max_steps=20000, eval_every=1000))


def cbt_books() -> GDANRunConfig:
    """The CBT-style cloze set from the offline books and news (`data.cbt_books`) at labelling rate 0.1 (878 of
    its 8,788 training questions): 20-sentence passages of about 600 tokens, so a CPU-sized D (embeddings 64,
    BiGRU 32, K = 2), batches of 16 + 16, 500 D updates (GDAN: 100 rounds of 5 + 1); G's MLE 300 steps, its
    output vocabulary the 5,000 first words (the rest copied), questions up to 40 tokens; Context W = 5 (the
    thesis's)."""
    return GDANRunConfig(
        data=QADataConfig(source="cbt_books", rate=0.1, heldout=200, context_window=5, out_vocab=5000,
                          batch_size=16),
        model=GDANModelConfig(d_embed=64, reader_hidden=32, n_hops=2, generator_hidden=64, max_question=40),
        generator_train=dataclasses.replace(GDANRunConfig().generator_train, max_steps=300, eval_every=100),
        train=dataclasses.replace(GDANRunConfig().train, max_steps=500, eval_every=125))


PRESETS = {"cbt_books": cbt_books, "squad": squad, "synthetic": synthetic, "tiny": tiny}


def run(cfg: GDANRunConfig, run_dir: Path, resume_from: Path | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    info = D.setup(cfg.train.device)
    if info.world_size > 1:
        raise ConfigError("gdan trains in one process (its generator samples on the fly); run it without torchrun")
    seed_everything(cfg.seed)
    method, ac, dc = METHODS[cfg.method], cfg.adapt, cfg.data
    data = load_world(dc, cfg.seed, blank_questions=cfg.method == "passage_only")
    data_sha256 = data.pop("sha256", None)
    if method.pseudo == "context":
        data["unlabelled"] = with_context_questions(data["unlabelled"], dc.context_window)
    vocab = QAVocab.build(data["labelled"] + data["unlabelled"], questions_first=True)
    model = build_gdan(cfg.model, vocab, dc.out_vocab, generator=method.uses_generator, tags=method.tags,
                       domain=method.reward == "domain")
    run_dir = Path(run_dir)
    g_eval = {}
    if method.uses_generator:
        qg = QuestionGeneration({"dev": data["dev"]}, vocab, data["labelled"])
        batches = StreamBatches(qg.train_rows, dc.batch_size, np.random.default_rng([cfg.seed, 1]))
        _, g_eval = fit_phase("generator", model.generator, qg, batches, cfg.generator_train, run_dir,
                              desc="gdan G (MLE)")
        mle_state = {k: v.clone() for k, v in model.generator.state_dict().items()}
    seed_everything(cfg.seed)  # D's phase draws the same streams whether G's phase ran now, before, or not at all
    rng = np.random.default_rng([cfg.seed, 2])

    rounds, tc = d_update_budget(cfg.train, method, ac.t_d)
    step = GenerativeAdaptation(model, method, lr_d=ac.lr_d, lr_g=ac.lr_g, t_d=rounds,
                                t_g=ac.t_g, max_steps=tc.max_steps, seed=cfg.seed, greedy=ac.greedy)
    task = WordSpanQA({"dev": data["dev"], "test": data["test"]}, vocab, max_span=cfg.model.max_span)
    batches = adaptation_batches(method, qa_rows(data["labelled"], vocab), qa_rows(data["unlabelled"], vocab),
                                 dc.batch_size, rng)
    res, scores = fit_task(model, task, batches, tc, run_dir, method=step, resume_from=resume_from,
                           desc=f"gdan {cfg.method}")
    details: dict[str, Any] = {
        "method": cfg.method, "labelled": len(data["labelled"]), "unlabelled": len(data["unlabelled"]),
        "vocab": len(vocab), "d_updates": res.step * rounds, **({"data_sha256": data_sha256} if data_sha256 else {}),
        "d_paragraphs_per_s": res.count / max(res.train_time, 1e-9) if res.train_time else None}
    if method.uses_generator:
        shown, questions = compare_generators(model, mle_state, data["heldout"], vocab, cfg.seed)
        details |= shown | {"generator_dev_nll": g_eval.get("dev_nll"), "generated_nll_last20": step.tail_generated_nll}
        atomic_write_text(run_dir / "questions.jsonl", "".join(json.dumps(q) + "\n" for q in questions))
    n_params = sum(p.numel() for p in model.parameters())
    return record_fit(run_dir, f"GDAN {cfg.method} on {SOURCE_NAMES[dc.source]} "
                      f"(|L| = {len(data['labelled'])})",
                      scores, fit=res, started=t0, params=n_params, details=details,
                      notes=["dev_* / test_*: SQuAD exact match and F1 (×100) of the best span under the d_true tag "
                             "(the cloze format: accuracy over the candidates, ×100).",
                             "reward_mle / reward_final: mean log P_D,d_true(a | p, q) of one question sampled per "
                             "held-out pair by the MLE generator / the final one, under the selected D (Q1).",
                             "generated_nll_last20: D's NLL on generated questions (d_gen), mean over the last 20 % "
                             "of training (Q2, Fig. 3.8)."])
