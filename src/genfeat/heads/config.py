"""Head configuration shared by every causal backbone, and the named heads of thesis C Tables 2.1 and 2.4.

    genfeat run lm --preset quickstart --model.head.kind multi_facet --model.head.num_softmax 3   # MoS(3)

`HEADS` maps the table names to configs (used by presets and benchmarks); `build_head` turns a config into
a module whose output embedding is the backbone's token embedding when `tied` is given.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from torch import nn

from genfeat.errors import ConfigError


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

    def __post_init__(self) -> None:
        if self.kind not in ("softmax", "multi_facet", "pointer"):
            raise ConfigError(f"head.kind must be softmax, multi_facet or pointer, got {self.kind!r}")


def _mf(**kw) -> HeadConfig:
    return HeadConfig(kind="multi_facet", **kw)


MI = {"multi_input": True}
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
}


def named_head(name: str) -> HeadConfig:
    if name not in HEADS:
        raise ConfigError(f"unknown head {name!r}; known: {', '.join(HEADS)}")
    return HEADS[name]


def build_head(cfg: HeadConfig, d_model: int, vocab_size: int, tied: nn.Embedding | None,
               pad_id: int | None = None) -> nn.Module:
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
        kw = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
              if f.name not in ("kind", "facet_proj", "pointer", "stage2_candidates", "stage2_merge")}
        return MultiFacetSoftmax(d_model, vocab_size, tied, pad_id=pad_id, **kw)
    except ValueError as e:
        raise ConfigError(f"head: {e}") from None
