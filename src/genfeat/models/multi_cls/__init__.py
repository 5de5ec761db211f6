"""Multi-CLS BERT (thesis C §5.2): K facet CLS tokens on a BERT encoder (`model.py`) and its continued-pretraining
objective (`pretrain.py`)."""

from genfeat.models.multi_cls.model import (
    FacetPooler,
    MultiCLSClassifier,
    MultiCLSConfig,
    MultiCLSEncoder,
    check_facet_tokens,
    default_insert_after,
)
from genfeat.models.multi_cls.pretrain import (
    FacetHeads,
    MTLPretrainer,
    MultiCLSPretrainer,
    mcqt_loss,
    multi_facet_logits,
)

__all__ = ["FacetHeads", "FacetPooler", "MTLPretrainer", "MultiCLSClassifier", "MultiCLSConfig", "MultiCLSEncoder",
           "MultiCLSPretrainer", "check_facet_tokens", "default_insert_after", "mcqt_loss", "multi_facet_logits"]
