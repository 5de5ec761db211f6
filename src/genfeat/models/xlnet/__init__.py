"""XLNet: permutation language modeling with two-stream attention (thesis Y §2.2)."""

from genfeat.models.xlnet.config import XLNetConfig
from genfeat.models.xlnet.model import XLNet, XLNetLM, XLNetOutput

__all__ = ["XLNet", "XLNetConfig", "XLNetLM", "XLNetOutput"]
