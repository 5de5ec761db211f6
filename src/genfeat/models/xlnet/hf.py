"""Checkpoint interop with Hugging Face `XLNetModel` / `XLNetLMHeadModel` (transformers 5.x, the `[hf]` extra for
the parity tests; the conversion itself needs no transformers install: it maps state dicts and config dicts).

    cfg = config_from_hf(hf_model.config.to_dict())
    lm = XLNetLM(cfg); lm.load_state_dict(from_hf_state_dict(hf_model.state_dict(), cfg))
    hf_model.load_state_dict(to_hf_state_dict(lm.state_dict(), cfg))          # and back

Mapping: HF stores q, k, v, r, o as (d_model, H, d_h) tensors used in einsums; genfeat as Linear weights
(q/k/v/r: (H·d_h, d) = reshape + transpose; o: (d, H·d_h) = reshape). HF keeps the relative biases per layer
(`rel_attn.r_w_bias` etc.), genfeat at model level, (N, H, d_h) with `untie_r` or (1, H, d_h) shared (exported
by repeating it per layer). `mask_emb` (1, 1, d) <-> (d,); `lm_loss` <-> the tied softmax head's bias.
HF's `ff_activation="gelu"` is the exact (erf) GELU, the reference's is the tanh approximation
(`gelu_new` in HF); both map.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch import Tensor

from genfeat.models.xlnet.config import XLNetConfig

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


def from_hf_state_dict(sd: dict[str, Tensor], cfg: XLNetConfig) -> dict[str, Tensor]:
    """HF `XLNetLMHeadModel` (or `XLNetModel`) state dict -> `XLNetLM` (or `XLNet`) state dict."""
    lm = any(k.startswith("transformer.") for k in sd)
    pre = "transformer." if lm else ""
    d, H, dh = cfg.d_model, cfg.n_head, cfg.d_head
    out: dict[str, Tensor] = {}
    biases: dict[str, list[tuple[int, Tensor]]] = {"r_w_bias": [], "r_r_bias": [], "r_s_bias": []}
    for key, t in sd.items():
        name = key[len(pre):] if key.startswith(pre) else key
        if m := re.fullmatch(r"layer\.(\d+)\.rel_attn\.(\w+)", name):
            i, p = int(m[1]), m[2]
            if p in _PROJ:
                out[f"{pre}layer.{i}.rel_attn.{p}.weight"] = t.reshape(d, H * dh).t().contiguous()
            elif p == "o":
                out[f"{pre}layer.{i}.rel_attn.o.weight"] = t.reshape(d, H * dh).contiguous()
            elif p in biases:
                biases[p].append((i, t))
            else:
                out[f"{pre}{name}"] = t
        elif name == "mask_emb":
            out[f"{pre}mask_emb"] = t.reshape(d)
        elif name == "lm_loss.weight":
            continue  # tied to the word embedding
        elif name == "lm_loss.bias":
            out["head.bias"] = t
        else:
            out[f"{pre}{name}"] = t
    for p, rows in biases.items():  # per layer in HF -> (N, H, d_h)
        out[f"{pre}{p}"] = torch.stack([t for _, t in sorted(rows, key=lambda r: r[0])])
    if lm:
        out["head.weight"] = out["transformer.word_embedding.weight"]
    return out


def to_hf_state_dict(sd: dict[str, Tensor], cfg: XLNetConfig) -> dict[str, Tensor]:
    """`XLNetLM` (or `XLNet`) state dict -> HF `XLNetLMHeadModel` (or `XLNetModel`) state dict."""
    lm = "head.bias" in sd
    pre = "transformer." if lm else ""
    d, H, dh = cfg.d_model, cfg.n_head, cfg.d_head
    out: dict[str, Tensor] = {}
    for key, t in sd.items():
        name = key[len(pre):] if key.startswith(pre) else key
        if m := re.fullmatch(r"layer\.(\d+)\.rel_attn\.(\w)\.weight", name):
            i, p = int(m[1]), m[2]
            w = t.t() if p in _PROJ else t
            out[f"{pre}layer.{i}.rel_attn.{p}"] = w.reshape(d, H, dh).contiguous()
        elif name in ("r_w_bias", "r_r_bias", "r_s_bias"):
            for i in range(cfg.n_layer):
                out[f"{pre}layer.{i}.rel_attn.{name}"] = t[i if cfg.untie_r else 0].clone()
        elif name == "mask_emb":
            out[f"{pre}mask_emb"] = t.reshape(1, 1, d)
        elif key == "head.bias":
            out["lm_loss.bias"] = t
        elif key == "head.weight":
            out["lm_loss.weight"] = t
        else:
            out[f"{pre}{name}"] = t
    return out
