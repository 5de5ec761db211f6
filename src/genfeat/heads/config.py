"""Head configuration shared by every backbone (the LMs and the recommenders), and the one registry of named
heads: the rows of thesis C Tables 2.1, 2.4 and 2.7.

    genfeat run lm --preset quickstart --model.head mos3                       # a named head
    genfeat run seqrec --preset sasrec_ml100k --model.head c+mi                # the same names on every backbone
    genfeat run lm --preset quickstart --model.head mfs --model.head.num_softmax 4   # a named head, one field changed

`HEADS` maps the names to configs and `LABELS` to the tables' row names (results pages); `head_name` finds a
config's name back. `build_head` turns a config into a module whose output embedding is the backbone's token
embedding when `tied` is given (not with `input_dim`, a narrower head input: `heads.bottleneck`).

    genfeat run lm --preset quickstart --model.head mos3 --model.head.input_dim 32   # the head reads 32 dims
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from torch import nn

from genfeat.config import require_at_least
from genfeat.errors import ConfigError
from genfeat.heads.dynamic import MERGES
from genfeat.heads.multi_facet import MIXTURES
from genfeat.heads.pointer import MODES as POINTER_MODES


@dataclass(frozen=True)
class HeadConfig:
    kind: str = "softmax"  # softmax | multi_facet | pointer
    facet_proj: bool = False  # softmax: the thesis's extra identity-initialised facet layer L^f_1
    bias: bool = False
    num_softmax: int = 1  # K
    num_partitions: int = 1  # J (interleaved, first softmax)
    multi_input: bool = False  # Mi, Eq. 2.3
    window: int = 3
    depth: int = 3
    sigsoftmax: bool = False
    doc: bool = False
    context: bool = False  # C
    local: bool = False  # L
    reranker_sizes: tuple[int, ...] = ()  # R rings
    merge: str = "assign"  # assign (the equations; "replace") | add (the thesis-era reference code)
    mixture: str = "mos"  # K > 1: mos (Eq. 2.2) | max_logits (one softmax of max_k z_k, the recommenders' §2.5)
    context_includes_current: bool = True
    pointer: str = "pointer_sentinel"  # copynet | pointer_generator | pointer_sentinel (kind=pointer)
    stage2_candidates: int = 0  # > 0: the two-stage reranker Rs2 on top (GPT decoder only), n candidates
    stage2_merge: str = "add"
    input_dim: int = 0  # > 0: the head reads the states through a linear map to this width (its own, untied
    #   output embedding; `heads.bottleneck`); 0: the backbone's width

    def __post_init__(self) -> None:
        if self.kind not in ("softmax", "multi_facet", "pointer"):
            raise ConfigError(f"head.kind must be softmax, multi_facet or pointer, got {self.kind!r}")
        # every field for every kind, also those a kind does not read: a typo is an error, not ignored
        choices = {"merge": MERGES, "mixture": MIXTURES, "pointer": POINTER_MODES, "stage2_merge": MERGES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"head.{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        require_at_least(self, 1, "num_softmax", "num_partitions", "window", "depth", prefix="head.")
        require_at_least(self, 0, "stage2_candidates", prefix="head.")
        if any(r < 1 for r in self.reranker_sizes):
            raise ConfigError(f"head.reranker_sizes must be >= 1, got {self.reranker_sizes}")
        if self.input_dim < 0:
            raise ConfigError(f"head.input_dim must be >= 0 (0: the backbone's width), got {self.input_dim}")
        if self.input_dim and self.stage2_candidates:
            raise ConfigError("head.input_dim does not combine with the two-stage reranker (it reads the backbone's "
                              "own embeddings)")

    @classmethod
    def from_name(cls, name: str) -> HeadConfig:
        """A config field of this type accepts a name from `HEADS` (`--model.head mfs`)."""
        return named_head(name)


def _mf(**kw) -> HeadConfig:
    return HeadConfig(kind="multi_facet", **kw)


MI = {"multi_input": True}
_MAX3 = {"num_softmax": 3, "mixture": "max_logits"}  # the recommenders' Multi-Softmax: max-pooled logits, §2.5
_CLR3 = {"context": True, "local": True, "reranker_sizes": (20, 100, 500)}  # Table 2.7's rings
HEADS: dict[str, HeadConfig] = {
    "softmax": HeadConfig(), "softmax_facet": HeadConfig(facet_proj=True),
    "sigsoftmax": _mf(sigsoftmax=True), "softmax+mi": _mf(**MI), "softmax+mp": _mf(num_partitions=4),
    "mos3": _mf(num_softmax=3), "mos4": _mf(num_softmax=4), "doc": _mf(doc=True),
    "mfs-mp": _mf(num_softmax=3, **MI), "mfs-mi": _mf(num_softmax=3, num_partitions=4),
    "mfs": _mf(num_softmax=3, num_partitions=4, **MI),
    "c+mi": _mf(context=True, **MI), "l+mi": _mf(local=True, **MI), "cl+mi": _mf(context=True, local=True, **MI),
    "r100+mi": _mf(reranker_sizes=(100,), **MI), "r20,100,500+mi": _mf(reranker_sizes=(20, 100, 500), **MI),
    "clr20": _mf(context=True, local=True, reranker_sizes=(20,)),
    "clr20+mi": _mf(context=True, local=True, reranker_sizes=(20,), **MI),
    "clr20,100+mi": _mf(context=True, local=True, reranker_sizes=(20, 100), **MI),
    "mos+clr100+mi": _mf(num_softmax=3, context=True, local=True, reranker_sizes=(100,), **MI),
    "copynet": HeadConfig(kind="pointer", pointer="copynet"),
    "pointer_generator": HeadConfig(kind="pointer", pointer="pointer_generator"),
    "pointer_sentinel": HeadConfig(kind="pointer", pointer="pointer_sentinel"),
    "pointer_sentinel+mi": HeadConfig(kind="pointer", pointer="pointer_sentinel", multi_input=True),
    "c": _mf(context=True), "softmax+rs2:20": HeadConfig(facet_proj=True, stage2_candidates=20),
    "clr20+rs2:20+mi": _mf(context=True, local=True, reranker_sizes=(20,), stage2_candidates=20, **MI),
    "rs2:100+mi": _mf(stage2_candidates=100, **MI),
    "mos3-max": _mf(**_MAX3), "clr20,100,500": _mf(**_CLR3), "clr20,100,500+mi": _mf(**_CLR3, **MI),
    "mos3-max+clr20,100,500": _mf(**_MAX3, **_CLR3), "mos3-max+clr20,100,500+mi": _mf(**_MAX3, **_CLR3, **MI),
}

LABELS: dict[str, str] = {
    "softmax": "Softmax (tied)", "softmax_facet": "Softmax + facet layer", "sigsoftmax": "SigSoftmax",
    "softmax+mi": "Softmax + Mi", "softmax+mp": "Softmax + MP", "mos3": "MoS (K=3)", "mos4": "MoS (K=4)",
    "doc": "DOC (K=3)", "mfs-mp": "MFS w/o MP", "mfs-mi": "MFS w/o Mi", "mfs": "MFS",
    "c": "Softmax + C", "c+mi": "Softmax + C + Mi", "l+mi": "Softmax + L + Mi", "cl+mi": "Softmax + CL + Mi",
    "r100+mi": "Softmax + R:100 + Mi", "r20,100,500+mi": "Softmax + R:20,100,500 + Mi", "clr20": "Softmax + CLR:20",
    "clr20+mi": "Softmax + CLR:20 + Mi", "clr20,100+mi": "Softmax + CLR:20,100 + Mi",
    "mos+clr100+mi": "MoS + CLR:100 + Mi", "copynet": "CopyNet", "pointer_generator": "Pointer Generator",
    "pointer_sentinel": "Pointer Sentinel", "pointer_sentinel+mi": "Pointer Sentinel + Mi",
    "softmax+rs2:20": "Softmax + Rs2:20", "clr20+rs2:20+mi": "Softmax + CLR:20 + Rs2:20 + Mi",
    "rs2:100+mi": "Softmax + Rs2:100 + Mi",
    "mos3-max": "Multi-Softmax (K=3, max-pooled)", "clr20,100,500": "Softmax + CLR",
    "clr20,100,500+mi": "Softmax + CLR + Mi", "mos3-max+clr20,100,500": "Multi-Softmax + CLR",
    "mos3-max+clr20,100,500+mi": "Multi-Softmax + CLR + Mi",
}


def named_head(name: str) -> HeadConfig:
    if name not in HEADS:
        raise ConfigError(f"unknown head {name!r}; known: {', '.join(HEADS)}")
    return HEADS[name]


def head_name(cfg: HeadConfig) -> str | None:
    """The registry name of a config (None for a custom one)."""
    return next((name for name, c in HEADS.items() if c == cfg), None)


def build_head(cfg: HeadConfig, d_model: int, vocab_size: int, tied: nn.Embedding | None,
               pad_id: int | None = None) -> nn.Module:
    if cfg.input_dim:
        from genfeat.heads.bottleneck import HeadInputBottleneck

        if cfg.input_dim > d_model:  # a wider map keeps the rank at d_model: the width asked for is not what reads
            raise ConfigError(f"head.input_dim {cfg.input_dim} is wider than the backbone's {d_model}: it narrows "
                              f"the head's input (at most {d_model}; 0: the backbone's width)")

        inner = build_head(dataclasses.replace(cfg, input_dim=0), cfg.input_dim, vocab_size, None, pad_id)
        return HeadInputBottleneck(inner, d_model, cfg.input_dim)
    from genfeat.heads.doc import DOCHead
    from genfeat.heads.dynamic import DynamicSpec
    from genfeat.heads.multi_facet import MultiFacetSoftmax
    from genfeat.heads.pointer import PointerHead
    from genfeat.heads.softmax import SoftmaxHead

    if cfg.kind == "softmax":
        return SoftmaxHead(d_model, vocab_size, tied, bias=cfg.bias, facet_proj=cfg.facet_proj)
    try:
        if cfg.kind == "pointer":
            return PointerHead(d_model, vocab_size, tied, mode=cfg.pointer, multi_input=cfg.multi_input,
                               window=cfg.window, depth=cfg.depth,
                               context_includes_current=cfg.context_includes_current, pad_id=pad_id, bias=cfg.bias)
        if cfg.doc:
            if cfg.multi_input or cfg.num_partitions > 1 or cfg.sigsoftmax or cfg.context or cfg.local \
                    or cfg.reranker_sizes:
                raise ValueError("DOC takes one layer per facet; it does not combine with Mi, partitions, "
                                 "SigSoftmax or dynamic partitions")
            return DOCHead(d_model, vocab_size, tied, bias=cfg.bias)
        dynamic = DynamicSpec(context=cfg.context, local=cfg.local, reranker_sizes=cfg.reranker_sizes,
                              merge=cfg.merge, includes_current=cfg.context_includes_current, pad_id=pad_id)
        return MultiFacetSoftmax(d_model, vocab_size, tied, num_softmax=cfg.num_softmax,
                                 num_partitions=cfg.num_partitions, multi_input=cfg.multi_input, window=cfg.window,
                                 depth=cfg.depth, sigsoftmax=cfg.sigsoftmax, bias=cfg.bias, mixture=cfg.mixture,
                                 dynamic=dynamic)
    except ValueError as e:
        raise ConfigError(f"head: {e}") from None
