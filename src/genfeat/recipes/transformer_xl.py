"""Transformer-XL language modelling (thesis Y §2.1) and the vanilla-Transformer baseline.

Training reads B contiguous streams in segments of `model.tgt_len`, carrying each layer's memory from
one step to the next (detached; spec §2.10); the memory is part of the checkpoint, so a resume is
exact. Evaluation reads each split in order with its own segment length, memory length, `same_length`
and `clamp_len` (`eval.*`; a memory several times longer than in training is the thesis setting,
§2.1.3), starting from an empty memory.

The vanilla baseline (thesis §2.1.2, after Al-Rfou et al.) is the same network with absolute sinusoid
positions and no memory (`model.pos_enc=absolute model.mem_len=0`, preset `ptb_vanilla`), evaluated on
non-overlapping segments or with a sliding window (`eval.stride`: 1 = one prediction per window, the
thesis protocol).

Presets: tiny (tests); ptb / ptb_vanilla (real PTB on CPU, equal parameter counts); wiki_char (gensim
Wikipedia XML, byte level, "mini-enwik8"); and the paper configurations wt103_base, wt103_large,
enwik8_base, enwik8_large, text8, lm1b_base (need WikiText-103 / enwik8 / text8 / One Billion Word on disk:
`--data.corpus dir:PATH | enwik8:FILE | text8:FILE | lm1b:DIR`, and GPUs).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import torch

from genfeat.data.lm_data import LMDataConfig
from genfeat.errors import ConfigError
from genfeat.models.transformer_xl import TXLConfig, build_txl_lm
from genfeat.models.transformer_xl import config as txl_presets
from genfeat.models.transformer_xl.evaluation import TXLEvalConfig, eval_nll
from genfeat.paradigms import causal_lm
from genfeat.paradigms.causal_lm import Arch
from genfeat.tasks.generation import SampleConfig, check_sample_prompt
from genfeat.tasks.language_modeling import MemoryLMLoss
from genfeat.train.loop import TrainConfig


@dataclass(frozen=True)
class TXLRunConfig:
    seed: int = 0
    data: LMDataConfig = field(default_factory=LMDataConfig)
    model: TXLConfig = field(default_factory=TXLConfig)
    train: TrainConfig = field(default_factory=lambda: TrainConfig(lr=2.5e-4, clip_norm=0.25))
    eval: TXLEvalConfig = field(default_factory=TXLEvalConfig)
    sample: SampleConfig = field(default_factory=SampleConfig)

    def __post_init__(self) -> None:
        check_sample_prompt(self.data.tokenizer, self.sample)


def txl_nll(model: torch.nn.Module, tokens: np.ndarray, cfg: TXLRunConfig, split: str) -> tuple[float, int]:
    """Summed NLL and target count of `tokens` under the run's evaluation setting (`eval.*`)."""
    return eval_nll(model, tokens, split, cfg.eval, cfg.model.tgt_len, cfg.model.mem_len, cfg.data.eval_batch_size)


def _check(cfg: TXLRunConfig) -> None:
    if cfg.data.seq_len != cfg.model.tgt_len:
        raise ConfigError(f"data.seq_len={cfg.data.seq_len} must equal model.tgt_len={cfg.model.tgt_len} "
                          "(the training segment length)")
    if cfg.data.iterator != "ordered" and cfg.model.mem_len > 0:
        raise ConfigError("Transformer-XL memory needs data.iterator=ordered (contiguous streams)")


TXL = Arch("transformer_xl", build_txl_lm, MemoryLMLoss, txl_nll, _check)
run = partial(causal_lm.train_causal_lm, arch=TXL)
load_for_generation = partial(causal_lm.load_for_generation, arch=TXL)


# ----------------------------------------------------------------------------------------- presets
def _ptb(model: TXLConfig, train: TrainConfig, **kw) -> TXLRunConfig:
    return TXLRunConfig(data=LMDataConfig(corpus="ptb", tokenizer="word", seq_len=model.tgt_len, batch_size=16),
                        model=model, train=train, **kw)


def tiny() -> TXLRunConfig:
    """Seconds; for tests."""
    m = txl_presets.tiny()
    return TXLRunConfig(data=LMDataConfig(seq_len=m.tgt_len, batch_size=4, eval_batch_size=4, eval_tokens=2048),
                        model=m,
                        train=TrainConfig(max_steps=6, lr=1e-3, warmup_steps=2, log_every=2, eval_every=3,
                                          clip_norm=0.25),
                        eval=TXLEvalConfig(mem_len=16), sample=SampleConfig(n=1, max_new_tokens=8))


_PTB_TRAIN = TrainConfig(max_steps=3000, lr=1e-3, warmup_steps=200, clip_norm=0.25, eval_every=500, log_every=20,
                         weight_decay=0.0)


def ptb() -> TXLRunConfig:
    """Real PTB on CPU (spec §6.2 scale): N=4, d=128, L=M=64; evaluated with memory 128 (2x training)."""
    return _ptb(txl_presets.small(), _PTB_TRAIN, eval=TXLEvalConfig(mem_len=128))


def ptb_vanilla() -> TXLRunConfig:
    """Vanilla baseline for `ptb`: absolute sinusoid positions, no memory; d_inner raised by 64 so the
    parameter count equals TXL's exactly (TXL's extra W_{k,R} per layer and u, v = 4·(128·128) + 2·128 =
    4·(2·128·64 + 64)); evaluated on non-overlapping segments (eval.stride=1 for the sliding window)."""
    base = txl_presets.small()
    m = dataclasses.replace(base, pos_enc="absolute", mem_len=0, d_inner=base.d_inner + 64)
    return _ptb(m, _PTB_TRAIN)


def wiki_char() -> TXLRunConfig:
    """gensim's 6 MB Wikipedia XML at byte level ("mini-enwik8"), bits per character."""
    m = dataclasses.replace(txl_presets.small(), tgt_len=128, mem_len=128)
    return TXLRunConfig(data=LMDataConfig(corpus="wiki-xml", tokenizer="byte", seq_len=128, batch_size=16),
                        model=m, train=dataclasses.replace(_PTB_TRAIN, max_steps=4000),
                        eval=TXLEvalConfig(mem_len=512), sample=SampleConfig(max_new_tokens=300, prompt="<page>"))


def _paper(model: TXLConfig, batch: int, steps: int, warmup: int, lr: float, eval_cfg: TXLEvalConfig,
           corpus: str, tokenizer: str = "word") -> TXLRunConfig:
    """Reference configurations (spec §3.2); the data must be on disk (override --data.corpus)."""
    return TXLRunConfig(
        data=LMDataConfig(corpus=corpus, tokenizer=tokenizer, seq_len=model.tgt_len, batch_size=batch,
                          eval_batch_size=10),
        model=dataclasses.replace(model, vocab_size=0),
        train=TrainConfig(max_steps=steps, lr=lr, warmup_steps=warmup, clip_norm=0.25, min_lr_ratio=0.0,
                          eval_every=4000, weight_decay=0.0),
        eval=eval_cfg,
        # byte / char models have no end-of-sentence token: their samples continue a prompt
        sample=SampleConfig(max_new_tokens=300, prompt="<page>") if tokenizer in ("byte", "char") else SampleConfig(),
    )


def wt103_base() -> TXLRunConfig:
    """Table 2.1 "Transformer-XL Standard" (151M, 24.0 test ppl); reference run_wt103_base.sh."""
    return _paper(txl_presets.wt103_base(), 60, 200_000, 0, 2.5e-4, TXLEvalConfig(64, 640, True, 400),
                  "dir:data/wikitext-103")


def wt103_large() -> TXLRunConfig:
    """Table 2.1 "Transformer-XL Large" (257M, 18.3 test ppl); reference run_wt103_large.sh."""
    return _paper(txl_presets.wt103_large(), 128, 4_000_000, 16_000, 2.5e-4, TXLEvalConfig(128, 1600, True, 1000),
                  "dir:data/wikitext-103")


def enwik8_base() -> TXLRunConfig:
    """Table 2.2 "Transformer-XL 12L" (41M, 1.06 bpc); reference run_enwik8_base.sh."""
    return _paper(txl_presets.enwik8_base(), 22, 400_000, 0, 2.5e-4, TXLEvalConfig(80, 2100, True, 820),
                  "enwik8:data/enwik8", "byte")


def enwik8_large() -> TXLRunConfig:
    """Table 2.2 "Transformer-XL 24L" (277M, 0.99 bpc); reference run_enwik8_large.sh."""
    return _paper(txl_presets.enwik8_large(), 64, 400_000, 4_000, 2.5e-4, TXLEvalConfig(128, 3800, True, 1000),
                  "enwik8:data/enwik8", "byte")


def text8() -> TXLRunConfig:
    """Table 2.3 "Transformer-XL 24L" (277M, 1.08 bpc): the enwik8 large model, untuned (thesis line 471)."""
    base = enwik8_large()
    return dataclasses.replace(base, data=dataclasses.replace(base.data, corpus="text8:data/text8", tokenizer="char"),
                               sample=SampleConfig(max_new_tokens=300, prompt="the "))  # text8: a-z and space


def lm1b_base() -> TXLRunConfig:
    """Table 2.4 "Transformer-XL Base" (0.46B, 23.5 test ppl); reference run_lm1b_base.sh."""
    return _paper(txl_presets.lm1b_base(), 224, 500_000, 20_000, 2.5e-4, TXLEvalConfig(32, 128, True, -1),
                  "lm1b:data/lm1b")


PRESETS = {"tiny": tiny, "ptb": ptb, "ptb_vanilla": ptb_vanilla, "wiki_char": wiki_char, "wt103_base": wt103_base,
           "wt103_large": wt103_large, "enwik8_base": enwik8_base, "enwik8_large": enwik8_large, "text8": text8,
           "lm1b_base": lm1b_base}
