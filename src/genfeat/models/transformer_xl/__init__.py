from genfeat.models.transformer_xl.config import TXLConfig
from genfeat.models.transformer_xl.model import TransformerXL, build_txl_lm

__all__ = ["TXLConfig", "TransformerXL", "build_txl_lm"]
