"""Output layers. Every head maps a `BackboneOutput` (+ input ids where it needs them) to a
`HeadOutput(scores, is_log_prob)`; `genfeat.losses.nll` consumes either kind."""

from genfeat.heads.adaptive_softmax import ProjectedAdaptiveLogSoftmax
from genfeat.heads.base import HeadOutput
from genfeat.heads.multi_facet import MultiFacetSoftmax
from genfeat.heads.softmax import SoftmaxHead
from genfeat.heads.two_stage import TwoStageReranker

__all__ = ["HeadOutput", "MultiFacetSoftmax", "ProjectedAdaptiveLogSoftmax", "SoftmaxHead", "TwoStageReranker"]
