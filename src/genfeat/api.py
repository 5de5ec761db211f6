"""The Python API: what the command line does, from Python: run a recipe, use a trained language model, and put
a genfeat output head on a Hugging Face model.

    import genfeat
    from genfeat.data.sources import fetch

    fetch("ptb")                                               # = genfeat data fetch ptb
    summary = genfeat.run_recipe("lm", preset="tiny", run_dir="runs/lm-tiny")   # = genfeat run lm --preset tiny
    lm, tok = genfeat.load("runs/lm-tiny")                     # any `lm` / `transformer_xl` run, any head
    genfeat.generate(lm, tok, "the company said", n=3)         # -> three continuations (strings)
    genfeat.score(lm, tok, "the company said it would buy")   # -> {"tokens": 7, "nll": 5.1, "ppl": 164.0}

    import torch
    from transformers import AutoModel
    from genfeat.losses.nll import nll
    body = AutoModel.from_pretrained("gpt2")                   # any model returning last_hidden_state
    lm = genfeat.attach_head(body, genfeat.named_head("mfs"), vocab_size=50257)   # MFS on GPT-2's states
    ids = torch.randint(0, 50257, (2, 33))                     # token ids (B, T + 1)
    out, _ = lm(ids[:, :-1], targets=ids[:, 1:])              # targets[:, t] is the token after ids[:, t]
    nll(out, ids[:, 1:]).backward()                            # trains it

`attach_head` wraps the model in `HFBackbone` (hidden states in genfeat's `BackboneOutput`, every layer's when a
head reads several) and composes `CausalLM(backbone, head)`, as genfeat's own decoders are composed. Heads that
tie their output embedding to the input one get the model's input embedding.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from genfeat.errors import ConfigError
from genfeat.heads.config import HeadConfig, build_head, named_head
from genfeat.losses.nll import nll
from genfeat.models.lm import CausalLM
from genfeat.nn.outputs import BackboneOffers, BackboneOutput
from genfeat.runner import run_recipe

__all__ = ["HFBackbone", "attach_head", "generate", "load", "load_with_config", "named_head", "run_recipe", "score"]


def load(run_dir: str | Path, device: str = "cpu") -> tuple[CausalLM, Any]:
    """(model in eval mode with the run's kept weights, tokenizer) of a language-model run directory."""
    model, tok, _ = load_with_config(run_dir, device)
    return model, tok


def load_with_config(run_dir: str | Path, device: str = "cpu") -> tuple[CausalLM, Any, Any]:
    """`load`, and the run's config (the recipe's config dataclass). Sets torch's CPU thread count as every
    genfeat command does (`train/threads.py`: GENFEAT_THREADS or OMP_NUM_THREADS, else the CPUs nothing else
    keeps busy)."""
    from genfeat.config import from_dict, load_yaml
    from genfeat.registry import get_recipe
    from genfeat.train import distributed as D
    from genfeat.train.threads import configure_threads

    configure_threads()

    run_dir = Path(run_dir)
    if not (run_dir / "config.yaml").is_file():
        raise ConfigError(f"{run_dir} is not a genfeat run directory (no config.yaml)")
    saved = load_yaml(run_dir / "config.yaml")
    recipe, _ = get_recipe(saved["recipe"])
    if recipe.load_for_generation is None:
        raise ConfigError(f"{run_dir} is a {recipe.name!r} run, not a language model")
    cfg = from_dict(recipe.config_cls, saved["config"])
    model, tok = recipe.load_for_generation(run_dir, cfg, D.resolve_device(device))
    return model.eval(), tok, cfg


@torch.no_grad()
def generate(model: CausalLM, tokenizer: Any, prompt: str = "", n: int = 1, max_new_tokens: int = 40,
             top_k: int = 40, temperature: float = 1.0, seed: int = 0) -> list[str]:
    """`n` top-k samples continuing `prompt` (empty: from the end-of-sentence token)."""
    from genfeat.tasks.generation import SampleConfig, generate_text

    sc = SampleConfig(n=n, max_new_tokens=max_new_tokens, top_k=top_k, temperature=temperature, prompt=prompt)
    return generate_text(model, tokenizer, sc, seed=seed, prompt_option="prompt")


@torch.no_grad()
def score(model: CausalLM, tokenizer: Any, text: str) -> dict[str, float]:
    """Negative log-likelihood of `text` under the model, each token given the ones before it (the first token
    is context only; a context longer than the model's is cut to its last positions)."""
    ids = tokenizer.encode(text)
    if len(ids) < 2:
        raise ConfigError(f"the text encodes to {len(ids)} token(s); scoring needs at least 2")
    if model.max_len is not None:
        ids = ids[-(model.max_len + 1):]
    device = next(model.parameters()).device
    x = torch.tensor([ids], device=device)  # (1, T)
    out, _ = model(x[:, :-1], targets=x[:, 1:])
    total = float(nll(out, x[:, 1:], reduction="sum"))
    n = len(ids) - 1
    return {"tokens": n, "nll": total / n, "ppl": math.exp(total / n)}


class HFBackbone(nn.Module):
    """A Hugging Face transformer (anything whose forward takes input_ids and returns last_hidden_state, e.g.
    `AutoModel`) as a genfeat backbone: `BackboneOutput(hidden (B, T, d), all_hidden (embeddings + every layer)
    when output_all_hidden)`; also the encoder of a task model (`genfeat.nn.task_heads.SequenceClassifier(
    HFBackbone(bert), d, n_labels, pool="first")`)."""

    offers = BackboneOffers()  # hidden states only: no memory or cache that genfeat carries

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.d_model = model.config.hidden_size

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None,
                output_all_hidden: bool = False) -> BackboneOutput:
        extra = {k: v for k, v in (("token_type_ids", token_type_ids), ("attention_mask", attention_mask))
                 if v is not None}  # what an encoder's task model passes (`genfeat.tasks`)
        out = self.model(input_ids=input_ids, output_hidden_states=output_all_hidden, **extra)
        return BackboneOutput(hidden=out.last_hidden_state,
                              all_hidden=tuple(out.hidden_states) if output_all_hidden else None)


def attach_head(model: nn.Module, head: HeadConfig | nn.Module, vocab_size: int | None = None,
                tie: bool = True) -> CausalLM:
    """A genfeat head (a `HeadConfig`, e.g. `named_head("mfs")`, or a built head module) on a Hugging Face
    model's hidden states: `CausalLM(HFBackbone(model), head)`. `vocab_size` defaults to the model's; with `tie`
    the head's output embedding is the model's input embedding (when the vocabularies agree)."""
    backbone = HFBackbone(model)
    if isinstance(head, HeadConfig):
        vocab_size = vocab_size or model.config.vocab_size
        tied = model.get_input_embeddings() if tie else None
        if tied is not None and tied.num_embeddings != vocab_size:
            raise ConfigError(f"tie=True needs the model's vocabulary ({tied.num_embeddings}) to be vocab_size "
                              f"({vocab_size}); pass tie=False for a separate output embedding")
        head = build_head(head, backbone.d_model, vocab_size, tied)
    return CausalLM(backbone, head, max_len=getattr(model.config, "max_position_embeddings", None))
