from genfeat.models.gpt.config import GPTConfig
from genfeat.models.gpt.model import GPTDecoder, build_gpt_lm

__all__ = ["GPTConfig", "GPTDecoder", "build_gpt_lm"]
