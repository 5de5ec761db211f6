"""Causal language modelling: a GPT-style decoder + softmax head trained on a real corpus.

    data -> task    a corpus and tokenizer (`data.lm_data`); `tasks.language_modeling.LanguageModeling`: training
                    reads B contiguous streams in segments of `seq_len` (or shuffled windows), evaluation reads each
                    split once, in order, segment by segment (no context carried across segments) and reports
                    per-token perplexity (word / BPE) or bits per character (char / byte)
    network         `models.gpt` (GPT-2's shape, any output head; `init` starts it from an HF GPT-2 directory)
    paradigm        `paradigms.causal_lm` (thesis Y Eq. 2.1, l_g = -sum_t log p(x_t | x_<t), one phase), shared with
                    the Transformer-XL recipe

Presets:
    tiny         seconds; for tests (PTB-shaped fixture data or PTB itself)
    quickstart   PTB word level, ~3 minutes on a 2-core CPU (`make quickstart`)
    ptb_small    PTB word level, a longer CPU run (~30 min on 2 cores)
    wiki_char    gensim's Wikipedia XML ("mini-enwik8"), byte level, bits per character
    prose        GPT-2 BPE on the offline books, manuals and Wikipedia XML: the library's pretrained CPU LM (the
                 interactive generators start from its hf/), about 75 minutes on 2 cores
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from genfeat.data.lm_data import LMDataConfig
from genfeat.errors import ConfigError
from genfeat.models.gpt import GPTConfig, build_gpt_lm
from genfeat.models.gpt import config as gpt_presets
from genfeat.models.gpt.hf import pretrained_config
from genfeat.models.nll_passes import segment_nll
from genfeat.paradigms import causal_lm
from genfeat.paradigms.causal_lm import Arch
from genfeat.tasks.generation import SampleConfig, check_sample_prompt
from genfeat.tasks.language_modeling import lm_loss
from genfeat.train.loop import TrainConfig


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
        check_sample_prompt(self.data.tokenizer, self.sample)


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


# ----------------------------------------------------------------------------------------- network
def _gpt_check(cfg: LMRunConfig) -> None:
    max_len = pretrained_config(cfg.init).max_len if cfg.init else cfg.model.max_len
    if cfg.data.seq_len > max_len:
        raise ConfigError(f"data.seq_len={cfg.data.seq_len} exceeds the model's max_len={max_len}"
                          + (f" ({cfg.init})" if cfg.init else ""))


GPT = Arch(
    "gpt", build_gpt_lm, lambda: lm_loss,
    lambda m, tokens, cfg, split: segment_nll(m, tokens, cfg.data.eval_batch_size, cfg.data.seq_len, split),
    _gpt_check, hf_export=True,
)


run = partial(causal_lm.train_causal_lm, arch=GPT)
load_for_generation = partial(causal_lm.load_for_generation, arch=GPT)
