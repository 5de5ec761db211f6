"""Causal language modelling as a paradigm (thesis Y Eq. 2.1; specs/framework.md: `OnePhase(L_g)` with l_g =
-sum_t log p(x_t | x_<t)): what the GPT recipe (`recipes/lm.py`) and the Transformer-XL recipe share; an `Arch`
says how each builds, trains and evaluates its network.

    train_causal_lm(cfg, run_dir, resume_from, arch=Arch(...)) -> summary
        the corpus and tokenizer (`data.lm_data`), the model (from `init`'s HF directory when given), one phase of
        `fit_task` on `tasks.language_modeling.LanguageModeling` (training reads B contiguous streams or shuffled
        windows of `data.seq_len`; evaluation reads each split once, in order), the best weights as an HF
        directory (GPT), samples (`tasks.generation`) and the record
    load_for_generation(run_dir, cfg, device, arch) -> (CausalLM, Tokenizer)
    resolve(cfg, tok)   the vocabulary size from the tokenizer, or the shape from `init`'s config.json

`cfg` is a recipe's run config with seed, data (`LMDataConfig`), model, train, sample and (GPT) init.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from genfeat.data.lm_data import prepare_lm_data
from genfeat.data.streams import OrderedSegments, ShuffledWindows
from genfeat.data.tokenizers import GENFEAT_FILE, Tokenizer, load_tokenizer, save_tokenizer
from genfeat.errors import ConfigError
from genfeat.models.gpt.hf import exports_to_hf, load_pretrained_weights, pretrained_config, save_pretrained
from genfeat.models.lm import CausalLM
from genfeat.paradigms.one_phase import fit_task
from genfeat.tasks.generation import CHAR_LEVEL, generate_text
from genfeat.tasks.language_modeling import LanguageModeling, lm_scores
from genfeat.train import distributed as D
from genfeat.train.checkpoint import load_model_weights
from genfeat.train.loop import check_early_stop_metric
from genfeat.train.record import record_fit
from genfeat.train.seed import seed_everything


@dataclass(frozen=True)
class Arch:
    """How a causal-LM recipe builds, trains and evaluates its model (GPT in recipes/lm.py, Transformer-XL in
    recipes/transformer_xl.py); everything else (data, loop, report) is this paradigm's."""

    name: str
    build: Callable[[Any], CausalLM]  # model config -> CausalLM
    make_loss: Callable[[], Callable]  # a fresh, possibly stateful, training loss
    nll_pass: Callable[[torch.nn.Module, np.ndarray, Any, str], tuple[float, int]]  # model, tokens, cfg, split
    check: Callable[[Any], None]  # raise ConfigError on inconsistent settings
    hf_export: bool = False  # write the best weights as a Hugging Face directory (run_dir/hf) when the head allows


def resolve(cfg: Any, tok: Tokenizer) -> Any:
    """Take the vocabulary size from the tokenizer (model.vocab_size = 0) or check that it matches; with `init`,
    take the model's shape from the pretrained directory's config.json."""
    if getattr(cfg, "init", ""):  # model.* other than model.head (a preset's shape, say) is not used
        model = pretrained_config(cfg.init, cfg.model.head)
        if model.vocab_size != tok.vocab_size:
            raise ConfigError(f"init={cfg.init} has a vocabulary of {model.vocab_size} but the {cfg.data.tokenizer} "
                              f"tokenizer has {tok.vocab_size}")
        if (Path(cfg.init) / GENFEAT_FILE).is_file():  # a genfeat run's hf/: its tokenizer must number tokens alike
            pre = load_tokenizer(Path(cfg.init))
            if any(pre.decode([i]) != tok.decode([i]) for i in range(tok.vocab_size)):
                raise ConfigError(f"init={cfg.init} numbers its tokens differently from this run's "
                                  f"{cfg.data.tokenizer} tokenizer (built from {cfg.data.corpus}); fine-tune with the "
                                  "tokenizer it was trained with")
        return dataclasses.replace(cfg, model=model)
    if cfg.model.vocab_size not in (0, tok.vocab_size):
        raise ConfigError(f"model.vocab_size={cfg.model.vocab_size} but the {cfg.data.tokenizer} tokenizer "
                          f"has {tok.vocab_size}; leave it 0 to take the tokenizer's")
    return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, vocab_size=tok.vocab_size))


def load_for_generation(run_dir: Path, cfg: Any, device: torch.device, arch: Arch) -> tuple[CausalLM, Tokenizer]:
    """A finished run's LM (eval mode, on `device`) and its tokenizer."""
    tok = load_tokenizer(run_dir)
    cfg = resolve(cfg, tok)
    lm = arch.build(cfg.model).to(device)
    load_model_weights(lm, run_dir / "model.safetensors")
    return lm.eval(), tok


def train_causal_lm(cfg: Any, run_dir: Path, resume_from: Path | None = None, *, arch: Arch) -> dict[str, Any]:
    """One phase of `fit_task` on `LanguageModeling`, then the HF export (GPT), the samples and the record."""
    arch.check(cfg)  # fail fast, before any data is loaded
    per_char = cfg.data.tokenizer in CHAR_LEVEL
    check_early_stop_metric(cfg.train, (f"valid_{k}" for k in lm_scores(1.0, 1, per_char)))
    info = D.setup(cfg.train.device)
    t0 = time.perf_counter()
    seed_everything(cfg.seed)
    if info.is_main:  # rank 0 builds the token cache; the others then read it
        tok, streams = prepare_lm_data(cfg.data)
    D.barrier()
    if not info.is_main:
        tok, streams = prepare_lm_data(cfg.data)
    cfg = resolve(cfg, tok)
    if cfg.data.eval_tokens:
        streams = {**streams, **{k: streams[k][: cfg.data.eval_tokens] for k in ("valid", "test")}}
    if info.is_main:
        save_tokenizer(tok, run_dir)

    lm = arch.build(cfg.model)
    if getattr(cfg, "init", ""):
        load_pretrained_weights(lm, cfg.init)
    lm = lm.to(info.device)
    n_params = sum(p.numel() for p in lm.parameters())
    model = D.wrap(lm, info, cfg.train.distributed)
    seed_everything(cfg.seed + info.rank)  # distinct dropout streams per rank
    dc = cfg.data
    if dc.iterator == "ordered":
        train_iter = OrderedSegments(streams["train"], dc.batch_size, dc.seq_len, info.rank, info.world_size)
    else:
        train_iter = ShuffledWindows(streams["train"], dc.batch_size, dc.seq_len, cfg.seed, info.rank,
                                     info.world_size)
    if info.is_main:
        if getattr(cfg, "init", ""):
            print(f"decoder from {cfg.init}: {cfg.model.n_layer} layers × d={cfg.model.d_model}")
        print(f"genfeat {arch.name}: {n_params / 1e6:.2f}M parameters, vocab {tok.vocab_size}, "
              f"{len(streams['train']):,} training tokens, device {info.device}, world size {info.world_size}")
    loss = arch.make_loss()  # the loss object itself goes to fit: a stateful one (Transformer-XL's memory) is
    task = LanguageModeling(streams, lambda m, tokens, split: arch.nll_pass(m, tokens, cfg, split), per_char,
                            loss=loss, metric=cfg.train.early_stop_metric.removeprefix("valid_"))
    result, final = fit_task(model, task, train_iter, cfg.train, run_dir, method=loss,  # checkpointed through
                             resume_from=resume_from, desc=arch.name)  # its state_dict; the best validation weights
    if info.is_main and arch.hf_export and exports_to_hf(cfg.model):
        # the same weights as a Hugging Face directory: GPT2LMHeadModel / AutoTokenizer.from_pretrained(hf/),
        # or `init=RUN/hf` to fine-tune them with another head
        save_pretrained(lm, run_dir / "hf", eos_id=tok.eos_id)
        save_tokenizer(tok, run_dir / "hf")
    details = {"arch": arch.name, "vocab_size": tok.vocab_size, "train_tokens": result.count,
               "train_tokens_per_s": round(result.count_per_s, 1), "train_wall_s": round(result.wall_time, 1),
               "train_step_s": round(result.train_time, 1), "stopped_early": result.stopped_early}
    samples = generate_text(lm, tok, cfg.sample, seed=cfg.seed) if info.is_main else []
    m, d = cfg.model, cfg.data
    notes = [f"Corpus `{d.corpus}` ({d.tokenizer} tokens), {arch.name} {m.n_layer} layers × d={m.d_model}, "
             f"{m.n_head} heads; batches of {d.batch_size}×{d.seq_len} tokens, {details['train_tokens_per_s']:,.0f} "
             "tokens/s. Metrics of the best-validation weights.",
             f"## Samples (top-k = {cfg.sample.top_k}, temperature {cfg.sample.temperature})",
             "\n".join(f"{i + 1}. {s}" for i, s in enumerate(samples))]
    summary = record_fit(run_dir, "Language model run", final, fit=result, started=t0, params=n_params,
                         details=details | {"samples": samples}, notes=notes)
    if info.is_main:
        metric = "bpc" if per_char else "ppl"
        print(f"valid {metric} {final['valid_' + metric]:.3f}   test {metric} {final['test_' + metric]:.3f}   "
              f"({result.step} steps: {summary['train_tokens_per_s']:,.0f} tok/s over {summary['train_step_s']} s "
              f"in steps, {summary['train_wall_s']} s of training in all)")
        for s in summary["samples"]:
            print("  sample:", s.replace("\n", " | "))
        print(f"run directory: {run_dir}")
    return summary


