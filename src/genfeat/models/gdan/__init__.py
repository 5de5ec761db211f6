"""GDAN, generative domain-adaptive nets for semi-supervised QA (thesis Y §3.2): the gated-attention reader D
(`reader.py`), the question generator G with attention and copying (`generator.py`) and their container
(`model.py`)."""

from genfeat.models.gdan.generator import GeneratorConfig, QuestionGenerator
from genfeat.models.gdan.model import GDAN
from genfeat.models.gdan.reader import GatedAttentionReader, ReaderConfig

__all__ = ["GDAN", "GatedAttentionReader", "GeneratorConfig", "QuestionGenerator", "ReaderConfig"]
