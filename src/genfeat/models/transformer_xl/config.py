"""Transformer-XL configuration and presets (thesis Y §2.1; reference configurations in spec §3.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from genfeat.heads.config import HeadConfig


@dataclass(frozen=True)
class TXLConfig:
    vocab_size: int = 0  # 0: from the tokenizer
    n_layer: int = 4
    d_model: int = 128
    n_head: int = 4
    d_head: int = 32
    d_inner: int = 512
    d_embed: int = 0  # 0: d_model
    dropout: float = 0.1
    dropatt: float = 0.0
    tgt_len: int = 64  # L, segment length
    mem_len: int = 64  # M; 0 = no recurrence (ablation)
    ext_len: int = 0  # extended context (reference option); 0 in all published configs
    clamp_len: int = -1  # distances > clamp_len use R_clamp_len; <= 0: off
    same_length: bool = False  # every query attends to the same number of keys (evaluation)
    untie_r: bool = False  # per-layer u, v (TF scripts, HF) instead of shared (thesis, PyTorch ref)
    pre_lnorm: bool = False
    pos_enc: Literal["relative", "absolute"] = "relative"  # absolute: Vaswani sinusoid on the input (ablation)
    cutoffs: tuple[int, ...] = ()  # adaptive input / softmax clusters
    div_val: int = 1
    tie_weight: bool = True
    tie_projs: tuple[bool, ...] = ()
    init_std: float = 0.02
    proj_init_std: float = 0.01
    head: HeadConfig | None = None  # None: the reference head (softmax with bias, or adaptive softmax)

    def __post_init__(self):
        if min(self.n_layer, self.d_model, self.n_head, self.d_head, self.d_inner, self.tgt_len) < 1:
            raise ValueError("n_layer, d_model, n_head, d_head, d_inner and tgt_len must be positive")
        if self.mem_len < 0 or self.ext_len < 0:
            raise ValueError("mem_len and ext_len must be >= 0")
        if self.d_model % 2:
            raise ValueError("d_model must be even (sinusoid table)")
        if self.div_val < 1:
            raise ValueError("div_val must be >= 1")
        if self.head is not None and self.head.stage2_candidates:
            raise ValueError("the two-stage reranker (head.stage2_candidates) runs on the GPT decoder only")
        if self.head is not None and (self.cutoffs or self.div_val > 1 or self.embed_dim != self.d_model):
            raise ValueError("a head from genfeat.heads needs a plain (not adaptive) embedding of width d_model")

    @property
    def embed_dim(self) -> int:
        return self.d_embed or self.d_model


def tiny() -> TXLConfig:
    return TXLConfig(n_layer=2, d_model=32, n_head=2, d_head=16, d_inner=64, tgt_len=8, mem_len=8)


def small() -> TXLConfig:
    """CPU scale (spec §6.2): N=4, d=128, H=4, d_h=32, d_ff=512, L=M=64."""
    return TXLConfig()


def wt103_base() -> TXLConfig:
    """WikiText-103 standard, 151M (thesis Y Table 2.1: 24.0 test ppl); reference run_wt103_base.sh."""
    return TXLConfig(vocab_size=267735, n_layer=16, d_model=410, n_head=10, d_head=41, d_inner=2100, dropout=0.1,
                     dropatt=0.0, tgt_len=150, mem_len=150, cutoffs=(20000, 40000, 200000), div_val=1,
                     tie_projs=(False, True, True, True))


def wt103_large() -> TXLConfig:
    """WikiText-103 large (Table 2.1: 18.3 test ppl); reference run_wt103_large.sh. The thesis lists 257M
    parameters; these hyperparameters (as in the reference script and HF's converted checkpoint) count 285M."""
    return TXLConfig(vocab_size=267735, n_layer=18, d_model=1024, n_head=16, d_head=64, d_inner=4096, dropout=0.2,
                     dropatt=0.2, tgt_len=384, mem_len=384, cutoffs=(20000, 40000, 200000), div_val=4,
                     tie_projs=(False, True, True, True))


def enwik8_base() -> TXLConfig:
    """enwik8 12L, 41M (Table 2.2: 1.06 bpc); reference run_enwik8_base.sh."""
    return TXLConfig(vocab_size=204, n_layer=12, d_model=512, n_head=8, d_head=64, d_inner=2048, dropout=0.1,
                     dropatt=0.0, tgt_len=512, mem_len=512)


def enwik8_large() -> TXLConfig:
    """enwik8 24L, 277M (Table 2.2: 0.99 bpc); text8 reuses it (Table 2.3: 1.08)."""
    return TXLConfig(vocab_size=204, n_layer=24, d_model=1024, n_head=8, d_head=128, d_inner=3072, dropout=0.15,
                     dropatt=0.15, tgt_len=768, mem_len=768)


def lm1b_base() -> TXLConfig:
    """One Billion Word base, 0.46B (Table 2.4: 23.5); reference run_lm1b_base.sh. Input and output embeddings
    untied (0.47B counted; tied it would be 0.36B)."""
    return TXLConfig(vocab_size=793470, n_layer=18, d_model=1024, n_head=8, d_head=128, d_inner=4096, dropout=0.0,
                     dropatt=0.0, tgt_len=32, mem_len=32, cutoffs=(60000, 100000, 640000), div_val=4, tie_weight=False)
