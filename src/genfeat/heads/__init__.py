"""Output layers. Every head maps a `BackboneOutput` (+ what it declares in `needs`, a `HeadNeeds`) to a
`HeadOutput(scores, is_log_prob)`; `genfeat.losses.nll` consumes either kind.

    base.py            the contract (HeadOutput, HeadNeeds) and shared numerics
    softmax.py         the softmax (± facet layer)                      thesis C Eq. 2.1
    facets.py          identity-initialised facets, multi-input q       Eq. 2.3
    multi_facet.py     MoS / SigSoftmax / MP / MFS / max-pooled mixtures  Eqs. 2.2-2.4
    partitions.py      the static-partition kernel                       (MP)
    dynamic.py         context / reranker / local partitions (C, R, L)  Eqs. 2.5-2.11
    doc.py             DOC (facets from three layers)
    pointer.py         CopyNet, Pointer-Generator, Pointer-Sentinel
    two_stage.py       the two-stage reranker Rs2
    adaptive_softmax.py  Transformer-XL's projected adaptive softmax
    config.py          HeadConfig, the one registry of named heads (HEADS, LABELS), build_head
"""

from genfeat.heads.adaptive_softmax import ProjectedAdaptiveLogSoftmax
from genfeat.heads.base import HeadNeeds, HeadOutput
from genfeat.heads.doc import DOCHead
from genfeat.heads.dynamic import DynamicSpec
from genfeat.heads.multi_facet import MultiFacetSoftmax
from genfeat.heads.softmax import SoftmaxHead
from genfeat.heads.two_stage import TwoStageReranker

__all__ = ["DOCHead", "DynamicSpec", "HeadNeeds", "HeadOutput", "MultiFacetSoftmax",
           "ProjectedAdaptiveLogSoftmax", "SoftmaxHead", "TwoStageReranker"]
