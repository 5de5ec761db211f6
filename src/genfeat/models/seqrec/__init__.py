"""Sequential recommendation (thesis C §2.5): SASRec / GRU4Rec with every output head, and RepeatNet."""

from genfeat.models.seqrec.config import SeqRecConfig
from genfeat.models.seqrec.gru4rec import GRU4RecEncoder
from genfeat.models.seqrec.model import RepeatNetModel, SeqRecModel, build_seqrec
from genfeat.models.seqrec.repeatnet import RepeatNet
from genfeat.models.seqrec.sasrec import SASRecEncoder

__all__ = ["GRU4RecEncoder", "RepeatNet", "RepeatNetModel", "SASRecEncoder", "SeqRecConfig",
           "SeqRecModel", "build_seqrec"]
