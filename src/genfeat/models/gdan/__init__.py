"""GDAN, generative domain-adaptive nets for semi-supervised QA (thesis Y §3.2): the gated-attention reader D
(`reader.py`), the question generator G with attention and copying (`generator.py`) and their container
(`model.py`), built for a vocabulary by `build.py`."""

from genfeat.models.gdan.build import GDANModelConfig, build_gdan
from genfeat.models.gdan.generator import GeneratorConfig, QuestionGenerator
from genfeat.models.gdan.model import GDAN
from genfeat.models.gdan.reader import GatedAttentionReader, ReaderConfig

__all__ = [
    "GDAN", "GDANModelConfig", "GatedAttentionReader", "GeneratorConfig", "QuestionGenerator", "ReaderConfig",
    "build_gdan",
]
