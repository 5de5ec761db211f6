"""Checkpoint interop with Hugging Face GPT-2 directories (`config.json` + `model.safetensors`, as
`GPT2LMHeadModel.save_pretrained` writes them; no transformers install needed):

    lm = from_pretrained("gpt2-dir")                        # CausalLM: GPT decoder + tied softmax (or `head`)
    lm = from_pretrained("gpt2-dir", head=named_head("mos3"))   # any genfeat head on the pretrained decoder
    save_pretrained(lm, "out-dir")                          # a softmax-headed model, as GPT2LMHeadModel

Mapping (HF `transformer.` prefix optional): `wte`, `wpe` <-> `backbone.tok_emb`, `backbone.pos_emb`;
`h.i.ln_1`, `h.i.ln_2`, `ln_f` <-> `blocks.i.ln1`, `blocks.i.ln2`, `ln_f`; HF's `Conv1D` layers store (in, out)
weights, so `h.i.attn.c_attn`, `h.i.attn.c_proj`, `h.i.mlp.c_fc`, `h.i.mlp.c_proj` are the transposes of
`blocks.i.attn.qkv` (rows [q; k; v], as HF splits c_attn), `attn.proj`, `ff.net.0`, `ff.net.2`. The LM head is
tied to `wte` (HF ties it; `lm_head.weight`, when a file has it, must equal `wte`). `activation_function`
"gelu_new" / "gelu_pytorch_tanh" is the tanh GELU, "gelu" the exact one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from genfeat.errors import CheckpointError
from genfeat.heads.config import HeadConfig
from genfeat.models.gpt.config import GPTConfig
from genfeat.models.gpt.model import build_gpt_lm
from genfeat.models.hf_files import read_hf_config, read_hf_dir, write_hf_dir
from genfeat.models.lm import CausalLM

_ACT = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu"}
_CONV = {"attn.c_attn": "attn.qkv", "attn.c_proj": "attn.proj", "mlp.c_fc": "ff.net.0", "mlp.c_proj": "ff.net.2"}
_NORM = {"ln_1": "ln1", "ln_2": "ln2"}


def config_from_hf(hf: dict[str, Any], head: HeadConfig | None = None) -> GPTConfig:
    act = hf.get("activation_function", "gelu_new")
    if act not in _ACT:
        raise CheckpointError(f"unsupported activation_function {act!r} (supported: {', '.join(_ACT)})")
    if hf.get("scale_attn_by_inverse_layer_idx") or hf.get("reorder_and_upcast_attn"):
        raise CheckpointError("scale_attn_by_inverse_layer_idx / reorder_and_upcast_attn are not supported")
    return GPTConfig(vocab_size=hf["vocab_size"], n_layer=hf["n_layer"], n_head=hf["n_head"], d_model=hf["n_embd"],
                     d_ff=hf.get("n_inner") or 0, max_len=hf["n_positions"], dropout=hf.get("resid_pdrop", 0.1),
                     tie_embeddings=True, bias=True, head=head or HeadConfig(), activation=_ACT[act],
                     ln_eps=hf.get("layer_norm_epsilon", 1e-5))


def config_to_hf(cfg: GPTConfig) -> dict[str, Any]:
    return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": cfg.vocab_size,
            "n_layer": cfg.n_layer, "n_head": cfg.n_head, "n_embd": cfg.d_model, "n_inner": cfg.d_ff or None,
            "n_positions": cfg.max_len, "resid_pdrop": cfg.dropout, "embd_pdrop": cfg.dropout,
            "attn_pdrop": cfg.dropout, "layer_norm_epsilon": cfg.ln_eps,
            "activation_function": "gelu_new" if cfg.activation == "gelu_tanh" else "gelu",
            "tie_word_embeddings": True}


def from_hf_state_dict(sd: dict[str, Tensor]) -> dict[str, Tensor]:
    """GPT2Model / GPT2LMHeadModel weights -> the GPT decoder's (`backbone.` names); attention-mask buffers of
    older files are skipped."""
    sd = {k.removeprefix("transformer."): v for k, v in sd.items()}
    out: dict[str, Tensor] = {}
    for k, v in sd.items():
        if k in ("wte.weight", "wpe.weight"):
            out[f"backbone.{'tok_emb' if k[1] == 't' else 'pos_emb'}.weight"] = v
        elif m := re.fullmatch(r"ln_f\.(weight|bias)", k):
            out[f"backbone.ln_f.{m[1]}"] = v
        elif m := re.fullmatch(r"h\.(\d+)\.(ln_1|ln_2)\.(weight|bias)", k):
            out[f"backbone.blocks.{m[1]}.{_NORM[m[2]]}.{m[3]}"] = v
        elif m := re.fullmatch(r"h\.(\d+)\.(attn\.c_attn|attn\.c_proj|mlp\.c_fc|mlp\.c_proj)\.(weight|bias)", k):
            out[f"backbone.blocks.{m[1]}.{_CONV[m[2]]}.{m[3]}"] = v.t().contiguous() if m[3] == "weight" else v
        elif k == "lm_head.weight":
            if "wte.weight" in sd and not torch.equal(v, sd["wte.weight"]):
                raise CheckpointError("lm_head.weight differs from wte.weight: an untied GPT-2 head is not supported")
        elif not re.fullmatch(r"h\.\d+\.attn\.(masked_)?bias", k):
            raise CheckpointError(f"not a GPT-2 weight: {k}")
    return out


def to_hf_state_dict(sd: dict[str, Tensor]) -> dict[str, Tensor]:
    """The GPT decoder's weights (a softmax-headed `CausalLM`) -> GPT2LMHeadModel's (the tied head left out)."""
    inv_conv, inv_norm = {v: k for k, v in _CONV.items()}, {v: k for k, v in _NORM.items()}
    out: dict[str, Tensor] = {}
    for k, v in sd.items():
        if k.startswith("head."):
            continue
        if k == "backbone.tok_emb.weight":
            out["transformer.wte.weight"] = v
        elif k == "backbone.pos_emb.weight":
            out["transformer.wpe.weight"] = v
        elif m := re.fullmatch(r"backbone\.ln_f\.(weight|bias)", k):
            out[f"transformer.ln_f.{m[1]}"] = v
        elif m := re.fullmatch(r"backbone\.blocks\.(\d+)\.(ln1|ln2)\.(weight|bias)", k):
            out[f"transformer.h.{m[1]}.{inv_norm[m[2]]}.{m[3]}"] = v
        elif m := re.fullmatch(r"backbone\.blocks\.(\d+)\.(attn\.qkv|attn\.proj|ff\.net\.0|ff\.net\.2)\.(weight|bias)",
                               k):
            out[f"transformer.h.{m[1]}.{inv_conv[m[2]]}.{m[3]}"] = v.t().contiguous() if m[3] == "weight" else v
        else:
            raise KeyError(f"no GPT-2 name for {k}")
    return out


def pretrained_config(directory: str | Path, head: HeadConfig | None = None) -> GPTConfig:
    """The GPT config of an HF GPT-2 directory (its config.json), with `head` as the output layer."""
    return config_from_hf(read_hf_config(directory, ("gpt2",)), head)


def load_pretrained_weights(lm: CausalLM, directory: str | Path) -> None:
    """Copy an HF GPT-2 directory's decoder weights into `lm` (built with `pretrained_config`); the head keeps
    its own initialisation except where it ties to the embeddings, and so do the condition layers of a decoder
    built with `cond_dim` (thesis C §4.2.2: GPT-2 has none)."""
    _, sd = read_hf_dir(directory, ("gpt2",))
    missing, unexpected = lm.load_state_dict(from_hf_state_dict(sd), strict=False)
    if unexpected or [k for k in missing if k.startswith("backbone.") and not k.startswith("backbone.cond_")]:
        raise CheckpointError(f"{directory}: weights do not match the config (missing {missing[:3]}, unexpected "
                              f"{unexpected[:3]})")


def from_pretrained(directory: str | Path, head: HeadConfig | None = None) -> CausalLM:
    """A `CausalLM` with the decoder of an HF GPT-2 directory (eval mode). `head`: any genfeat head
    (`genfeat.named_head`); the softmax (default) is the checkpoint's tied LM head; another head keeps its
    fresh initialisation except where it ties to the embeddings."""
    lm = build_gpt_lm(pretrained_config(directory, head))
    load_pretrained_weights(lm, directory)
    return lm.eval()


def exports_to_hf(cfg: GPTConfig) -> bool:
    """GPT2LMHeadModel has biases everywhere and a softmax tied to the input embedding: only such a GPT exports."""
    return cfg.head == HeadConfig() and cfg.tie_embeddings and cfg.bias


def save_pretrained(lm: CausalLM, directory: str | Path, eos_id: int | None = None) -> None:
    """config.json + model.safetensors that transformers' `GPT2LMHeadModel.from_pretrained` loads (softmax head).
    `eos_id`: the vocabulary's end-of-sequence id, written as bos / eos / pad token id (GPT-2's own convention),
    so HF `generate` starts, stops and pads inside this vocabulary (else it takes GPT-2's 50256)."""
    cfg: GPTConfig = lm.backbone.cfg
    if not exports_to_hf(cfg):
        raise ValueError("only a GPT with biases and a tied softmax head exports as GPT2LMHeadModel")
    ids = {} if eos_id is None else {"bos_token_id": eos_id, "eos_token_id": eos_id, "pad_token_id": eos_id}
    write_hf_dir(directory, config_to_hf(cfg) | ids, to_hf_state_dict(lm.state_dict()))
