"""Checkpoint interop with Hugging Face XLNet (transformers 4.x / 5.x; the conversion itself needs no transformers
install: it maps state dicts and config dicts).

    model = from_pretrained("xlnet-dir")     # the class HF's config.json names under "architectures":
    save_pretrained(model, "out-dir")        # XLNetModel, XLNetLMHeadModel, XLNetForSequenceClassification,
                                             # XLNetForMultipleChoice, XLNetForQuestionAnswering

    cfg = config_from_hf(hf_model.config.to_dict())                         # the state-dict level
    lm = XLNetLM(cfg); lm.load_state_dict(from_hf_state_dict(hf_model.state_dict(), cfg))
    hf_model.load_state_dict(to_hf_state_dict(lm.state_dict(), cfg))          # and back

Mapping: HF stores q, k, v, r, o as (d_model, H, d_h) tensors used in einsums; genfeat as Linear weights
(q/k/v/r: (H·d_h, d) = reshape + transpose; o: (d, H·d_h) = reshape). HF keeps the relative biases per layer
(`rel_attn.r_w_bias` etc.), genfeat at model level, (N, H, d_h) with `untie_r` or (1, H, d_h) shared (exported
by repeating it per layer). `mask_emb` (1, 1, d) <-> (d,); `lm_loss` <-> the tied softmax head's bias (HF's
`save_pretrained` leaves the tied `lm_loss.weight` out). Task heads (`_TASK_KEYS`): the sequence summary and
`logits_proj` keep their names (under `clf.` for multiple choice); the SQuAD head's `start_logits.dense`,
`end_logits.{dense_0, LayerNorm, dense_1}`, `answer_class.{dense_0, dense_1}` map to `XLNetForSquad`'s layers.
HF's `ff_activation="gelu"` is the exact (erf) GELU, the reference's is the tanh approximation
(`gelu_new` in HF); both map.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from genfeat.models.hf_files import read_hf_dir, write_hf_dir
from genfeat.models.xlnet.config import XLNetConfig
from genfeat.models.xlnet.heads import XLNetClassifier, XLNetForSquad, XLNetMultipleChoice
from genfeat.models.xlnet.model import XLNet, XLNetLM

_ACT_FROM_HF = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
_ACT_TO_HF = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu"}
_PROJ = ("q", "k", "v", "r")


def config_from_hf(hf: dict[str, Any]) -> XLNetConfig:
    act = hf.get("ff_activation", "gelu")
    if act not in _ACT_FROM_HF:
        raise ValueError(f"unsupported ff_activation {act!r} (supported: {', '.join(_ACT_FROM_HF)})")
    n_head, d_model = hf["n_head"], hf["d_model"]
    return XLNetConfig(
        vocab_size=hf["vocab_size"], n_layer=hf["n_layer"], d_model=d_model, n_head=n_head,
        d_head=hf.get("d_head", d_model // n_head), d_inner=hf["d_inner"], ff_activation=_ACT_FROM_HF[act],
        dropout=hf.get("dropout", 0.1), dropatt=hf.get("dropout", 0.1), untie_r=True,  # HF: per-layer biases
        attn_type=hf.get("attn_type", "bi"), bi_data=hf.get("bi_data", False), clamp_len=hf.get("clamp_len", -1),
        same_length=hf.get("same_length", False), mem_len=hf.get("mem_len") or 0, reuse_len=hf.get("reuse_len") or 0,
        layer_norm_eps=hf.get("layer_norm_eps", 1e-12), init_std=hf.get("initializer_range", 0.02))


def config_to_hf(cfg: XLNetConfig) -> dict[str, Any]:
    """Keyword arguments for `transformers.XLNetConfig` (HF derives d_head = d_model / n_head)."""
    if cfg.d_head * cfg.n_head != cfg.d_model:
        raise ValueError(f"HF XLNet needs d_head * n_head == d_model, got {cfg.d_head} * {cfg.n_head} != "
                         f"{cfg.d_model}")
    return dict(vocab_size=cfg.vocab_size, d_model=cfg.d_model, n_layer=cfg.n_layer, n_head=cfg.n_head,
                d_inner=cfg.d_inner, ff_activation=_ACT_TO_HF[cfg.ff_activation], untie_r=True,
                attn_type=cfg.attn_type, initializer_range=cfg.init_std, layer_norm_eps=cfg.layer_norm_eps,
                dropout=cfg.dropout, mem_len=cfg.mem_len or None, reuse_len=cfg.reuse_len or None,
                bi_data=cfg.bi_data, clamp_len=cfg.clamp_len, same_length=cfg.same_length)


# HF architecture -> (genfeat class, where the backbone sits in genfeat, {HF head key: genfeat key})
_SUMMARY = {"sequence_summary.summary.weight": "sequence_summary.summary.weight",
            "sequence_summary.summary.bias": "sequence_summary.summary.bias",
            "logits_proj.weight": "logits_proj.weight", "logits_proj.bias": "logits_proj.bias"}
_TASK_KEYS: dict[str, tuple[type[nn.Module], str, dict[str, str]]] = {
    "XLNetModel": (XLNet, "", {}),
    "XLNetLMHeadModel": (XLNetLM, "transformer.", {"lm_loss.bias": "head.bias"}),
    "XLNetForSequenceClassification": (XLNetClassifier, "transformer.", _SUMMARY),
    "XLNetForMultipleChoice": (XLNetMultipleChoice, "clf.transformer.", {k: "clf." + v for k, v in _SUMMARY.items()}),
    "XLNetForQuestionAnswering": (XLNetForSquad, "transformer.", {
        "start_logits.dense.weight": "start_logits.weight", "start_logits.dense.bias": "start_logits.bias",
        "end_logits.dense_0.weight": "end_dense.weight", "end_logits.dense_0.bias": "end_dense.bias",
        "end_logits.LayerNorm.weight": "end_norm.weight", "end_logits.LayerNorm.bias": "end_norm.bias",
        "end_logits.dense_1.weight": "end_logits.weight", "end_logits.dense_1.bias": "end_logits.bias",
        "answer_class.dense_0.weight": "answer_dense.weight", "answer_class.dense_0.bias": "answer_dense.bias",
        "answer_class.dense_1.weight": "answer_logit.weight"}),
}


def architecture_of(model: nn.Module) -> str:
    for arch, (cls, _, _) in _TASK_KEYS.items():
        if type(model) is cls:
            return arch
    raise TypeError(f"no HF XLNet architecture for {type(model).__name__}")


def _infer_architecture(sd: dict[str, Tensor]) -> str:
    if "lm_loss.bias" in sd:
        return "XLNetLMHeadModel"
    if "start_logits.dense.weight" in sd:
        return "XLNetForQuestionAnswering"
    if "logits_proj.weight" in sd:  # multiple choice has the same keys: pass architecture= for it
        return "XLNetForSequenceClassification"
    return "XLNetModel"


def _backbone_from_hf(sd: dict[str, Tensor], cfg: XLNetConfig) -> dict[str, Tensor]:
    """HF `XLNetModel` keys -> genfeat `XLNet` keys."""
    d, H, dh = cfg.d_model, cfg.n_head, cfg.d_head
    out: dict[str, Tensor] = {}
    biases: dict[str, list[tuple[int, Tensor]]] = {"r_w_bias": [], "r_r_bias": [], "r_s_bias": []}
    for name, t in sd.items():
        if m := re.fullmatch(r"layer\.(\d+)\.rel_attn\.(\w+)", name):
            i, p = int(m[1]), m[2]
            if p in _PROJ:
                out[f"layer.{i}.rel_attn.{p}.weight"] = t.reshape(d, H * dh).t().contiguous()
            elif p == "o":
                out[f"layer.{i}.rel_attn.o.weight"] = t.reshape(d, H * dh).contiguous()
            elif p in biases:
                biases[p].append((i, t))
            else:
                out[name] = t
        elif name == "mask_emb":
            out["mask_emb"] = t.reshape(d)
        else:
            out[name] = t
    for p, rows in biases.items():  # per layer in HF -> (N, H, d_h)
        out[p] = torch.stack([t for _, t in sorted(rows, key=lambda r: r[0])])
    return out


def _backbone_to_hf(sd: dict[str, Tensor], cfg: XLNetConfig) -> dict[str, Tensor]:
    """genfeat `XLNet` keys -> HF `XLNetModel` keys."""
    d, H, dh = cfg.d_model, cfg.n_head, cfg.d_head
    out: dict[str, Tensor] = {}
    for name, t in sd.items():
        if m := re.fullmatch(r"layer\.(\d+)\.rel_attn\.(\w)\.weight", name):
            i, p = int(m[1]), m[2]
            w = t.t() if p in _PROJ else t
            out[f"layer.{i}.rel_attn.{p}"] = w.reshape(d, H, dh).contiguous()
        elif name in ("r_w_bias", "r_r_bias", "r_s_bias"):
            for i in range(cfg.n_layer):
                out[f"layer.{i}.rel_attn.{name}"] = t[i if cfg.untie_r else 0].clone()
        elif name == "mask_emb":
            out["mask_emb"] = t.reshape(1, 1, d)
        else:
            out[name] = t
    return out


def from_hf_state_dict(sd: dict[str, Tensor], cfg: XLNetConfig, architecture: str | None = None) -> dict[str, Tensor]:
    """HF XLNet state dict -> the state dict of the matching genfeat module (`_TASK_KEYS`); the architecture is
    inferred from the keys unless given (it must be for multiple choice)."""
    arch = architecture or _infer_architecture(sd)
    _, prefix, head_keys = _TASK_KEYS[arch]
    hf_prefix = "transformer." if arch != "XLNetModel" else ""
    body, out = {}, {}
    for key, t in sd.items():
        if key in head_keys:
            out[head_keys[key]] = t
        elif key == "lm_loss.weight":
            continue  # tied to the word embedding
        elif key.startswith(hf_prefix):
            body[key[len(hf_prefix):]] = t
        else:
            raise KeyError(f"unexpected key {key!r} in an HF {arch} state dict")
    out |= {prefix + k: v for k, v in _backbone_from_hf(body, cfg).items()}
    if arch == "XLNetLMHeadModel":
        out["head.weight"] = out["transformer.word_embedding.weight"]
    return out


def to_hf_state_dict(sd: dict[str, Tensor], cfg: XLNetConfig, architecture: str | None = None) -> dict[str, Tensor]:
    """A genfeat XLNet module's state dict -> HF's (`architecture` inferred from the keys unless given); the LM's
    tied `lm_loss.weight` is included, as in HF's in-memory state dict."""
    if architecture is None:
        architecture = next((a for key, a in (("head.bias", "XLNetLMHeadModel"),
                                              ("start_logits.weight", "XLNetForQuestionAnswering"),
                                              ("clf.logits_proj.weight", "XLNetForMultipleChoice"),
                                              ("logits_proj.weight", "XLNetForSequenceClassification")) if key in sd),
                            "XLNetModel")
    _, prefix, head_keys = _TASK_KEYS[architecture]
    to_hf = {v: k for k, v in head_keys.items()}
    hf_prefix = "transformer." if architecture != "XLNetModel" else ""
    body, out = {}, {}
    for key, t in sd.items():
        if key in to_hf:
            out[to_hf[key]] = t
        elif key == "head.weight":
            out["lm_loss.weight"] = t
        elif key.startswith(prefix):
            body[key[len(prefix):]] = t
        else:
            raise KeyError(f"unexpected key {key!r} for HF {architecture}")
    out |= {hf_prefix + k: v for k, v in _backbone_to_hf(body, cfg).items()}
    return out


def from_pretrained(directory: str | Path) -> nn.Module:
    """The genfeat module for an HF XLNet directory (config.json + model.safetensors or pytorch_model.bin): the
    class its `architectures` names (`_TASK_KEYS`), loaded strictly. The sequence summary must be HF's default
    (`summary_type="last"`, projection, tanh)."""
    hf, sd = read_hf_dir(directory, ("xlnet",))
    arch = (hf.get("architectures") or [_infer_architecture(sd)])[0]
    if arch not in _TASK_KEYS:
        raise ValueError(f"{directory}: unsupported architecture {arch!r} (supported: {', '.join(_TASK_KEYS)})")
    cfg = config_from_hf(hf)
    cls = _TASK_KEYS[arch][0]
    drop = hf.get("summary_last_dropout", 0.1)
    if arch in ("XLNetForSequenceClassification", "XLNetForMultipleChoice"):
        summary = (hf.get("summary_type", "last"), hf.get("summary_use_proj", True), hf.get("summary_activation"))
        if summary != ("last", True, "tanh"):
            raise ValueError(f"{directory}: sequence summary {summary} is not supported (genfeat's is the last token "
                             "-> Linear -> tanh, XLNet's default)")
    if arch == "XLNetForSequenceClassification":
        model = cls(cfg, len(hf.get("id2label") or {}) or hf.get("num_labels", 2), dropout=drop)
    elif arch == "XLNetForMultipleChoice":
        model = cls(cfg, dropout=drop)
    elif arch == "XLNetForQuestionAnswering":
        model = cls(cfg, hf.get("start_n_top", 5), hf.get("end_n_top", 5), dropout=cfg.dropout)
    else:
        model = cls(cfg)
    model.load_state_dict(from_hf_state_dict(sd, cfg, arch))
    return model


def save_pretrained(model: nn.Module, directory: str | Path) -> None:
    """Write `model` as HF's `save_pretrained` writes the matching XLNet class: config.json (with `architectures`
    and the head's settings) + model.safetensors without the tied `lm_loss.weight`."""
    arch = architecture_of(model)
    backbone = model if arch == "XLNetModel" else (
        model.clf.transformer if arch == "XLNetForMultipleChoice" else model.transformer)
    cfg = backbone.cfg
    hf = {**config_to_hf(cfg), "model_type": "xlnet", "architectures": [arch]}
    if arch == "XLNetForSequenceClassification":
        n = model.logits_proj.out_features
        hf |= {"id2label": {str(i): f"LABEL_{i}" for i in range(n)}, "label2id": {f"LABEL_{i}": i for i in range(n)}}
    if arch in ("XLNetForSequenceClassification", "XLNetForMultipleChoice"):
        clf = model.clf if arch == "XLNetForMultipleChoice" else model
        if clf.sequence_summary.pool != "last":
            raise ValueError("HF's XLNet summary averages padding too: only pool='last' exports")
        hf |= {"summary_type": "last", "summary_use_proj": True, "summary_activation": "tanh",
               "summary_last_dropout": clf.sequence_summary.drop.p}
    if arch == "XLNetForQuestionAnswering":
        hf |= {"start_n_top": model.start_n_top, "end_n_top": model.end_n_top}
    sd = to_hf_state_dict(model.state_dict(), cfg, arch)
    sd.pop("lm_loss.weight", None)
    write_hf_dir(directory, hf, sd)
