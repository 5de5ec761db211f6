"""XLNet fine-tuning models (thesis Y §2.2.3; spec xlnet.md §2.12): the query stream is dropped and the content
stream is a bidirectional Transformer-XL encoder (no perm mask, no memory, padding masked as keys), under the task
models of `genfeat.nn.task_heads`:

    inputs      `genfeat.data.pair_inputs.pair_inputs`: [A, <sep>, (B, <sep>,) <cls>], left-padded
    summary     the last position's state (<cls>) -> Linear(d, d) -> tanh -> dropout ("last", projection on);
                `pool="mean"`: the mean of the real tokens' states instead (HF's "mean", padding excluded)
    classify    `XLNetClassifier`, choice `XLNetMultipleChoice` (RACE), span QA `XLNetForSquad` (SQuAD 2.0)

Initialisation: the task layers ~ N(0, cfg.init_std), biases 0, as the reference.
"""

from __future__ import annotations

from genfeat.models.xlnet.config import XLNetConfig
from genfeat.models.xlnet.model import XLNet
from genfeat.nn.task_heads import MultipleChoice, SequenceClassifier, SpanExtractor


class XLNetClassifier(SequenceClassifier):
    """Sequence classification (n_labels > 1) or regression (n_labels = 1) on XLNet's <cls> state."""

    def __init__(self, cfg: XLNetConfig, n_labels: int, dropout: float = 0.1, pool: str = "last"):
        super().__init__(XLNet(cfg), cfg.d_model, n_labels, dropout, pool, cfg.init_std)


class XLNetMultipleChoice(MultipleChoice):
    """Inputs (B, C, T): one sequence per option; logits (B, C)."""

    def __init__(self, cfg: XLNetConfig, dropout: float = 0.1):
        super().__init__(XLNetClassifier(cfg, 1, dropout))


class XLNetForSquad(SpanExtractor):
    """SQuAD 2.0 span extraction with answerability on XLNet (`SpanExtractor`)."""

    def __init__(self, cfg: XLNetConfig, start_n_top: int = 5, end_n_top: int = 5, dropout: float = 0.1):
        super().__init__(XLNet(cfg), cfg.d_model, start_n_top, end_n_top, dropout, cfg.layer_norm_eps, cfg.init_std)
