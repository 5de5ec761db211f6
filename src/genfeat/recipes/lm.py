"""Causal language modelling: a GPT-style decoder + softmax head trained on a real corpus.

Framework (specs/framework.md): `OnePhase(L_g)` with l_g = -sum_t log p(x_t | x_<t) (thesis Y Eq. 2.1).
Training reads B contiguous streams in segments of `seq_len` (or shuffled windows); evaluation
reads each split once, in order, segment by segment (no context carried across segments), and
reports per-token perplexity (word/BPE) or bits per character (char/byte).

Presets:
    tiny         seconds; for tests (PTB-shaped fixture data or PTB itself)
    quickstart   PTB word level, ~3 minutes on a 2-core CPU (`make quickstart`)
    ptb_small    PTB word level, a longer CPU run (~30 min on 2 cores)
    wiki_char    gensim's Wikipedia XML ("mini-enwik8"), byte level, bits per character
    prose        GPT-2 BPE on the offline books, manuals and Wikipedia XML: the library's pretrained CPU LM (the
                 interactive generators start from its hf/), about 75 minutes on 2 cores
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from genfeat.data.lm_data import LMDataConfig, prepare_lm_data
from genfeat.data.streams import OrderedSegments, ShuffledWindows
from genfeat.data.tokenizers import GENFEAT_FILE, Tokenizer, load_tokenizer, save_tokenizer
from genfeat.errors import ConfigError
from genfeat.models.gpt import GPTConfig, build_gpt_lm
from genfeat.models.gpt import config as gpt_presets
from genfeat.models.gpt.hf import exports_to_hf, load_pretrained_weights, pretrained_config, save_pretrained
from genfeat.models.lm import CausalLM
from genfeat.models.nll_passes import segment_nll
from genfeat.paradigms import fit_task
from genfeat.tasks.generation import SampleConfig, generate_text
from genfeat.tasks.language_modeling import LanguageModeling, lm_loss, lm_scores
from genfeat.train import distributed as D
from genfeat.train.checkpoint import load_model_weights
from genfeat.train.loop import TrainConfig, check_early_stop_metric
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class LMRunConfig:
    seed: int = 0
    data: LMDataConfig = field(default_factory=LMDataConfig)
    model: GPTConfig = field(default_factory=GPTConfig)
    # a Hugging Face GPT-2 directory (config.json + model.safetensors, e.g. a GPT run's hf/) to start from: the
    # decoder's shape and weights come from it and the other model.* settings are not used; model.head picks the
    # head (thesis C §2.3: a pretrained LM fine-tuned with a new head)
    init: str = ""
    train: TrainConfig = field(default_factory=TrainConfig)
    sample: SampleConfig = field(default_factory=SampleConfig)

    def __post_init__(self) -> None:
        check_sample_prompt(self.data, self.sample)


CHAR_LEVEL = ("char", "byte")  # tokenizers without an end-of-sentence token, evaluated in bits per character


def check_sample_prompt(data: LMDataConfig, sample: SampleConfig) -> None:
    """Before step 1: char and byte tokenizers have no end-of-sentence token to start a sample from, so the
    samples written after training need a prompt."""
    if data.tokenizer in CHAR_LEVEL and sample.n > 0 and not sample.prompt:
        raise ValueError(f"sample.prompt is empty and the {data.tokenizer} tokenizer has no end-of-sentence token "
                         "to start the samples from: give --sample.prompt TEXT (or --sample.n 0)")


# ----------------------------------------------------------------------------------------- presets
def tiny() -> LMRunConfig:
    """Seconds; for tests."""
    return LMRunConfig(
        data=LMDataConfig(seq_len=16, batch_size=4, eval_batch_size=4, eval_tokens=2048),
        model=gpt_presets.tiny(),
        train=TrainConfig(max_steps=6, lr=1e-3, warmup_steps=2, log_every=2, eval_every=3),
        sample=SampleConfig(n=1, max_new_tokens=8),
    )


def quickstart() -> LMRunConfig:
    """PTB, 2-layer GPT, ~3 minutes on a 2-core CPU. Small batches and many steps beat large batches at
    this budget (measured: batch 8 x 3200 steps test ppl 151 vs batch 32 x 600 steps 253, same wall time)."""
    return LMRunConfig(
        data=LMDataConfig(corpus="ptb", tokenizer="word", seq_len=64, batch_size=8),
        model=gpt_presets.quickstart(),
        train=TrainConfig(max_steps=3200, lr=2e-3, warmup_steps=200, weight_decay=0.1, eval_every=800,
                          log_every=20),
    )


def ptb_small() -> LMRunConfig:
    """PTB, 4-layer GPT with dropout, a longer CPU run (early stopping on validation loss)."""
    return LMRunConfig(
        data=LMDataConfig(corpus="ptb", tokenizer="word", seq_len=128, batch_size=32),
        model=GPTConfig(n_layer=4, n_head=4, d_model=256, max_len=128, dropout=0.3),
        train=TrainConfig(max_steps=6000, lr=1e-3, warmup_steps=300, weight_decay=0.1, eval_every=500,
                          patience=3),
    )


def wiki_char() -> LMRunConfig:
    """gensim's Wikipedia XML ("mini-enwik8"), byte level, bits per character."""
    return LMRunConfig(
        data=LMDataConfig(corpus="wiki-xml", tokenizer="byte", seq_len=256, batch_size=16),
        model=GPTConfig(n_layer=4, n_head=4, d_model=256, max_len=256, dropout=0.1),
        train=TrainConfig(max_steps=3000, lr=1e-3, warmup_steps=200, eval_every=500),
        sample=SampleConfig(max_new_tokens=300, prompt="<page>\n    <title>"),
    )


PROSE_CORPUS = "austen+kjv+shakespeare+python-doc+linux-doc+wiki-xml"  # BBC News stays held out (fine-tuning)


def prose() -> LMRunConfig:
    """A GPT-2-shaped decoder (GPT-2 BPE, 50,257 tokens; tanh GELU, learned positions, tied softmax) small enough
    to pretrain on a 2-core CPU: 4 layers, d 256, context 256, 1,500 steps of 16 x 128 tokens (3.1M tokens, about
    0.2 epochs; the tied 50,257-way softmax is most of the cost). Validation and test read their first 65,536
    tokens. BBC News is left out so that the fine-tuning benchmarks and the interactive generators see news it
    never read."""
    return LMRunConfig(
        data=LMDataConfig(corpus=PROSE_CORPUS, tokenizer="gpt2", seq_len=128, batch_size=16, eval_batch_size=16,
                          iterator="shuffled", eval_tokens=65536),
        model=GPTConfig(n_layer=4, n_head=4, d_model=256, max_len=256, dropout=0.1, activation="gelu_tanh"),
        train=TrainConfig(max_steps=1500, lr=1e-3, warmup_steps=100, weight_decay=0.1, betas=(0.9, 0.95),
                          eval_every=250, log_every=25),
        sample=SampleConfig(n=3, max_new_tokens=40, prompt="The"),
    )


PRESETS = {"tiny": tiny, "quickstart": quickstart, "ptb_small": ptb_small, "wiki_char": wiki_char, "prose": prose}


# ----------------------------------------------------------------------------------------- pieces
def resolve(cfg: Any, tok: Tokenizer) -> Any:
    """Take the vocabulary size from the tokenizer (model.vocab_size = 0) or check that it matches; with `init`,
    take the model's shape from the pretrained directory's config.json."""
    if getattr(cfg, "init", ""):  # model.* other than model.head (a preset's shape, say) is not used
        model = pretrained_config(cfg.init, cfg.model.head)
        if model.vocab_size != tok.vocab_size:
            raise ConfigError(f"init={cfg.init} has a vocabulary of {model.vocab_size} but the {cfg.data.tokenizer} "
                              f"tokenizer has {tok.vocab_size}")
        if (Path(cfg.init) / GENFEAT_FILE).is_file():  # a genfeat run's hf/: its tokenizer must number tokens alike
            pre = load_tokenizer(Path(cfg.init))
            if any(pre.decode([i]) != tok.decode([i]) for i in range(tok.vocab_size)):
                raise ConfigError(f"init={cfg.init} numbers its tokens differently from this run's "
                                  f"{cfg.data.tokenizer} tokenizer (built from {cfg.data.corpus}); fine-tune with the "
                                  "tokenizer it was trained with")
        return dataclasses.replace(cfg, model=model)
    if cfg.model.vocab_size not in (0, tok.vocab_size):
        raise ConfigError(f"model.vocab_size={cfg.model.vocab_size} but the {cfg.data.tokenizer} tokenizer "
                          f"has {tok.vocab_size}; leave it 0 to take the tokenizer's")
    return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, vocab_size=tok.vocab_size))


@dataclass(frozen=True)
class Arch:
    """How a causal-LM recipe builds, trains and evaluates its model (GPT here, Transformer-XL in
    recipes/transformer_xl.py); everything else (data, loop, report) is shared."""

    name: str
    build: Callable[[Any], CausalLM]  # model config -> CausalLM
    make_loss: Callable[[], Callable]  # a fresh, possibly stateful, training loss
    nll_pass: Callable[[torch.nn.Module, np.ndarray, Any, str], tuple[float, int]]  # model, tokens, cfg, split
    check: Callable[[Any], None]  # raise ConfigError on inconsistent settings


def _gpt_check(cfg: LMRunConfig) -> None:
    max_len = pretrained_config(cfg.init).max_len if cfg.init else cfg.model.max_len
    if cfg.data.seq_len > max_len:
        raise ConfigError(f"data.seq_len={cfg.data.seq_len} exceeds the model's max_len={max_len}"
                          + (f" ({cfg.init})" if cfg.init else ""))


GPT = Arch(
    "gpt", build_gpt_lm, lambda: lm_loss,
    lambda m, tokens, cfg, split: segment_nll(m, tokens, cfg.data.eval_batch_size, cfg.data.seq_len, split),
    _gpt_check,
)


def load_for_generation(run_dir: Path, cfg: Any, device: torch.device, arch: Arch = GPT
                        ) -> tuple[CausalLM, Tokenizer]:
    tok = load_tokenizer(run_dir)
    cfg = resolve(cfg, tok)
    lm = arch.build(cfg.model).to(device)
    load_model_weights(lm, run_dir / "model.safetensors")
    return lm.eval(), tok


# ----------------------------------------------------------------------------------------- run
def run(cfg: Any, run_dir: Path, resume_from: Path | None = None, arch: Arch = GPT) -> dict[str, Any]:
    arch.check(cfg)  # fail fast, before any data is loaded
    per_char = cfg.data.tokenizer in CHAR_LEVEL
    check_early_stop_metric(cfg.train, (f"valid_{k}" for k in lm_scores(1.0, 1, per_char)))
    info = D.setup(cfg.train.device)
    t0 = time.perf_counter()
    seed_everything(cfg.seed)
    if info.is_main:  # rank 0 builds the token cache; the others then read it
        tok, streams = prepare_lm_data(cfg.data)
    D.barrier()
    if not info.is_main:
        tok, streams = prepare_lm_data(cfg.data)
    cfg = resolve(cfg, tok)
    if cfg.data.eval_tokens:
        streams = {**streams, **{k: streams[k][: cfg.data.eval_tokens] for k in ("valid", "test")}}
    if info.is_main:
        save_tokenizer(tok, run_dir)

    lm = arch.build(cfg.model)
    if getattr(cfg, "init", ""):
        load_pretrained_weights(lm, cfg.init)
    lm = lm.to(info.device)
    n_params = sum(p.numel() for p in lm.parameters())
    model = D.wrap(lm, info, cfg.train.distributed)
    seed_everything(cfg.seed + info.rank)  # distinct dropout streams per rank
    dc = cfg.data
    if dc.iterator == "ordered":
        train_iter = OrderedSegments(streams["train"], dc.batch_size, dc.seq_len, info.rank, info.world_size)
    else:
        train_iter = ShuffledWindows(streams["train"], dc.batch_size, dc.seq_len, cfg.seed, info.rank,
                                     info.world_size)
    if info.is_main:
        if getattr(cfg, "init", ""):
            print(f"decoder from {cfg.init}: {cfg.model.n_layer} layers × d={cfg.model.d_model}")
        print(f"genfeat {arch.name}: {n_params / 1e6:.2f}M parameters, vocab {tok.vocab_size}, "
              f"{len(streams['train']):,} training tokens, device {info.device}, world size {info.world_size}")
    loss = arch.make_loss()  # the loss object itself goes to fit: a stateful one (Transformer-XL's memory) is
    task = LanguageModeling(streams, lambda m, tokens, split: arch.nll_pass(m, tokens, cfg, split), per_char,
                            loss=loss, metric=cfg.train.early_stop_metric.removeprefix("valid_"))
    result, final = fit_task(model, task, train_iter, cfg.train, run_dir, method=loss,  # checkpointed through
                             resume_from=resume_from, desc=arch.name)  # its state_dict; the best validation weights
    if info.is_main and arch is GPT and exports_to_hf(cfg.model):
        # the same weights as a Hugging Face directory: GPT2LMHeadModel / AutoTokenizer.from_pretrained(hf/),
        # or `init=RUN/hf` to fine-tune them with another head
        save_pretrained(lm, run_dir / "hf", eos_id=tok.eos_id)
        save_tokenizer(tok, run_dir / "hf")
    details = {"arch": arch.name, "vocab_size": tok.vocab_size, "train_tokens": result.count,
               "train_tokens_per_s": round(result.count_per_s, 1), "train_wall_s": round(result.wall_time, 1),
               "train_step_s": round(result.train_time, 1), "stopped_early": result.stopped_early}
    samples = generate_text(lm, tok, cfg.sample, seed=cfg.seed) if info.is_main else []
    m, d = cfg.model, cfg.data
    notes = [f"Corpus `{d.corpus}` ({d.tokenizer} tokens), {arch.name} {m.n_layer} layers × d={m.d_model}, "
             f"{m.n_head} heads; batches of {d.batch_size}×{d.seq_len} tokens, {details['train_tokens_per_s']:,.0f} "
             "tokens/s. Metrics of the best-validation weights.",
             f"## Samples (top-k = {cfg.sample.top_k}, temperature {cfg.sample.temperature})",
             "\n".join(f"{i + 1}. {s}" for i, s in enumerate(samples))]
    summary = record_fit(run_dir, "Language model run", final, fit=result, started=t0, params=n_params,
                         details=details | {"samples": samples}, notes=notes)
    if info.is_main:
        metric = "bpc" if per_char else "ppl"
        print(f"valid {metric} {final['valid_' + metric]:.3f}   test {metric} {final['test_' + metric]:.3f}   "
              f"({result.step} steps: {summary['train_tokens_per_s']:,.0f} tok/s over {summary['train_step_s']} s "
              f"in steps, {summary['train_wall_s']} s of training in all)")
        for s in summary["samples"]:
            print("  sample:", s.replace("\n", " | "))
        print(f"run directory: {run_dir}")
    return summary


