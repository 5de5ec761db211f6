"""BERT encoder (`model.py`), its config and HF checkpoint interop (`hf.py`): the backbone of Multi-CLS BERT
(thesis C §5.2) and an encoder for every task of `genfeat.tasks`."""

from genfeat.models.bert.config import BertConfig
from genfeat.models.bert.hf import bert_dir, from_pretrained, save_pretrained
from genfeat.models.bert.model import BertModel, mean_pool

__all__ = ["BertConfig", "BertModel", "bert_dir", "from_pretrained", "mean_pool", "save_pretrained"]
