"""Checkpoint interop with Hugging Face `TransfoXLLMHeadModel` (transformers <= 4.35; the model was
deprecated and then removed in transformers v5, so genfeat reads and writes its state dicts directly and
needs no transformers install).

    lm = from_pretrained("path/to/hf-dir")      # config.json + model.safetensors (or pytorch_model.bin)
    save_pretrained(lm, "out/")                 # what TransfoXLLMHeadModel.from_pretrained reads

    cfg = config_from_hf(hf_config_dict)        # the state-dict level, for in-memory HF models
    lm = build_txl_lm(cfg); lm.load_state_dict(from_hf_state_dict(hf_state_dict, cfg))
    hf_state_dict = to_hf_state_dict(lm.state_dict(), cfg)

`save_pretrained` stores tied weights once, as HF does (the output embeddings when `tie_word_embeddings`, the
projections that `tie_projs` shares, the per-layer u / v copies when `untie_r=False`); `from_pretrained`
re-ties them (`hf_tied_keys`).

Parameter names already follow the reference code, so the mapping is a prefix change
(`transformer.` <-> `backbone.`, `crit.` <-> `head.`), per-layer `u`/`v` moving out of `dec_attn`
(`untie_r`), and the plain tied softmax (no clusters) reading `crit.out_layers.0`.

Behavioural difference to keep in mind (spec §8): HF starts from `mem_len` rows of zero memory, genfeat
(like the authors' code) from an empty memory; pass `hf_initial_mems(...)` to reproduce HF numbers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from genfeat.models.hf_files import read_hf_dir, write_hf_dir
from genfeat.models.lm import CausalLM
from genfeat.models.transformer_xl.config import TXLConfig
from genfeat.models.transformer_xl.model import build_txl_lm


def config_from_hf(hf: dict[str, Any]) -> TXLConfig:
    if hf.get("attn_type", 0) != 0:
        raise ValueError(f"only attn_type=0 (relative, thesis) is supported, got {hf['attn_type']}")
    if hf.get("sample_softmax", -1) > 0:
        raise ValueError("sampled softmax checkpoints are not supported")
    cutoffs = tuple(hf.get("cutoffs", ()))
    n_tok = hf.get("vocab_size") or hf["n_token"]
    cutoffs = tuple(c for c in cutoffs if c < n_tok)
    if "tie_projs" in hf:  # what TransfoXLConfig stores (derived from proj_share_all_but_first)
        tie_projs = tuple(bool(t) for t in hf["tie_projs"])[: len(cutoffs) + 1]
    else:
        tie_projs = (False,) + (hf.get("proj_share_all_but_first", True),) * len(cutoffs)
    if not hf.get("adaptive", True):
        raise ValueError("adaptive=False checkpoints are not supported")
    return TXLConfig(
        vocab_size=n_tok, n_layer=hf["n_layer"], d_model=hf["d_model"], n_head=hf["n_head"], d_head=hf["d_head"],
        d_inner=hf["d_inner"], d_embed=hf.get("d_embed", hf["d_model"]), dropout=hf.get("dropout", 0.1),
        dropatt=hf.get("dropatt", 0.0), tgt_len=hf.get("tgt_len", 128), mem_len=hf.get("mem_len", 0),
        clamp_len=hf.get("clamp_len", -1), same_length=hf.get("same_length", False),
        untie_r=hf.get("untie_r", True), pre_lnorm=hf.get("pre_lnorm", False), cutoffs=cutoffs,
        div_val=hf.get("div_val", 1), tie_weight=hf.get("tie_word_embeddings", True), tie_projs=tie_projs,
        init_std=hf.get("init_std", 0.02), proj_init_std=hf.get("proj_init_std", 0.01),
    )


def config_to_hf(cfg: TXLConfig) -> dict[str, Any]:
    return {
        "model_type": "transfo-xl", "architectures": ["TransfoXLLMHeadModel"], "vocab_size": cfg.vocab_size,
        "cutoffs": list(cfg.cutoffs), "d_model": cfg.d_model, "d_embed": cfg.embed_dim, "n_head": cfg.n_head,
        "d_head": cfg.d_head, "d_inner": cfg.d_inner, "div_val": cfg.div_val, "pre_lnorm": cfg.pre_lnorm,
        "n_layer": cfg.n_layer, "tgt_len": cfg.tgt_len, "mem_len": cfg.mem_len, "clamp_len": cfg.clamp_len,
        "same_length": cfg.same_length,
        "proj_share_all_but_first": bool(cfg.tie_projs[1:]) and all(cfg.tie_projs[1:]),
        "tie_projs": [bool(t) for t in cfg.tie_projs] + [False] * (len(cfg.cutoffs) + 1 - len(cfg.tie_projs)),
        "attn_type": 0,
        "sample_softmax": -1, "adaptive": True, "dropout": cfg.dropout, "dropatt": cfg.dropatt,
        "untie_r": cfg.untie_r, "init_std": cfg.init_std, "proj_init_std": cfg.proj_init_std,
        "layer_norm_epsilon": 1e-5, "tie_word_embeddings": cfg.tie_weight,
    }


def hf_tied_keys(cfg: TXLConfig) -> dict[str, str]:
    """{HF key that HF ties to another: that key}, exactly the keys `save_pretrained` leaves out
    (TransfoXLLMHeadModel.tie_weights)."""
    tied: dict[str, str] = {}
    n_out = len(cfg.cutoffs) + 1 if cfg.div_val > 1 else 1
    if cfg.tie_weight:
        for i in range(n_out):
            tied[f"crit.out_layers.{i}.weight"] = f"transformer.word_emb.emb_layers.{i}.weight"
    for i, tie in enumerate(cfg.tie_projs):
        if tie and cfg.div_val == 1 and cfg.d_model != cfg.embed_dim:
            tied[f"crit.out_projs.{i}"] = "transformer.word_emb.emb_projs.0"
        elif tie and cfg.div_val > 1:
            tied[f"crit.out_projs.{i}"] = f"transformer.word_emb.emb_projs.{i}"
    if not cfg.untie_r:
        for n in range(cfg.n_layer):
            for name in ("r_w_bias", "r_r_bias"):
                tied[f"transformer.layers.{n}.dec_attn.{name}"] = f"transformer.{name}"
    return tied


def from_pretrained(directory: str | Path) -> CausalLM:
    """A Transformer-XL LM from an HF `TransfoXLLMHeadModel` directory (config.json + model.safetensors or
    pytorch_model.bin), tied weights re-tied; loaded strictly."""
    hf_cfg, sd = read_hf_dir(directory, ("transfo-xl",))
    cfg = config_from_hf(hf_cfg)
    lm = build_txl_lm(cfg)
    lm.load_state_dict(from_hf_state_dict(sd, cfg))
    return lm


def save_pretrained(lm: CausalLM, directory: str | Path) -> None:
    """Write `lm` as HF writes a TransfoXLLMHeadModel: config.json + model.safetensors with HF's key names,
    each tied weight stored once."""
    cfg = lm.backbone.cfg
    sd = to_hf_state_dict(lm.state_dict(), cfg)
    for key in hf_tied_keys(cfg):
        sd.pop(key, None)
    write_hf_dir(directory, config_to_hf(cfg), sd)


def _plain_head(cfg: TXLConfig) -> bool:
    """build_txl_lm uses a plain (tied) softmax head when there are no clusters and no projection."""
    return not cfg.cutoffs and cfg.div_val == 1 and cfg.embed_dim == cfg.d_model


def _inv_freq(d_model: int) -> Tensor:
    return 1.0 / (10000 ** (torch.arange(0.0, d_model, 2.0) / d_model))


_LAYER_BIAS = re.compile(r"^transformer\.layers\.(\d+)\.dec_attn\.(r_w_bias|r_r_bias)$")


def from_hf_state_dict(sd: dict[str, Tensor], cfg: TXLConfig) -> dict[str, Tensor]:
    """An HF TransfoXLLMHeadModel state dict -> `build_txl_lm(cfg)`'s. The keys HF ties and leaves out of a saved
    file (`hf_tied_keys`) are re-tied from the tensors they share, so a state dict read straight from
    `model.safetensors` loads as one from `TransfoXLLMHeadModel.state_dict()` does."""
    sd = dict(sd)
    for key, src in hf_tied_keys(cfg).items():
        if key not in sd and src in sd:
            sd[key] = sd[src]
    out = {}
    for k, v in sd.items():
        if k == "transformer.pos_emb.inv_freq":  # a fixed buffer; genfeat computes the sinusoid on the fly
            if not torch.allclose(v.float(), _inv_freq(cfg.d_model)):
                raise ValueError("pos_emb.inv_freq is not the standard sinusoid frequency table")
            continue
        if not cfg.untie_r and _LAYER_BIAS.match(k):  # HF also lists the shared u, v under every layer
            if not torch.equal(v, sd[f"transformer.{_LAYER_BIAS.match(k).group(2)}"]):
                raise ValueError(f"{k} differs from the shared bias although untie_r=False")
            continue
        if k.startswith("transformer."):
            k = "backbone." + k[len("transformer.") :]
            k = re.sub(r"^backbone\.layers\.(\d+)\.dec_attn\.(r_w_bias|r_r_bias)$", r"backbone.layers.\1.\2", k)
        elif k.startswith("crit."):
            k = "head." + k[len("crit.") :]
            if _plain_head(cfg):
                k = k.replace("head.out_layers.0.", "head.")
        else:
            raise KeyError(f"unexpected key {k!r} in a TransfoXLLMHeadModel state dict")
        out[k] = v
    return out


def to_hf_state_dict(sd: dict[str, Tensor], cfg: TXLConfig) -> dict[str, Tensor]:
    out = {}
    for k, v in sd.items():
        if k.startswith("backbone."):
            k = re.sub(r"^backbone\.layers\.(\d+)\.(r_w_bias|r_r_bias)$", r"backbone.layers.\1.dec_attn.\2", k)
            k = "transformer." + k[len("backbone.") :]
        elif k.startswith("head."):
            if _plain_head(cfg) and k in ("head.weight", "head.bias"):
                k = k.replace("head.", "head.out_layers.0.")
            k = "crit." + k[len("head.") :]
        out[k] = v
    out["transformer.pos_emb.inv_freq"] = _inv_freq(cfg.d_model)
    if not cfg.untie_r:
        for n in range(cfg.n_layer):
            for name in ("r_w_bias", "r_r_bias"):
                out[f"transformer.layers.{n}.dec_attn.{name}"] = out[f"transformer.{name}"]
    return out


def hf_initial_mems(cfg: TXLConfig, batch_size: int, device: torch.device | None = None,
                    dtype: torch.dtype | None = None) -> tuple[Tensor, ...]:
    """HF's starting memory: mem_len rows of zeros per layer (genfeat's layout (B, M, d))."""
    return tuple(torch.zeros(batch_size, cfg.mem_len, cfg.d_model, device=device, dtype=dtype)
                 for _ in range(cfg.n_layer))
