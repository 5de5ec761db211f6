"""A finished `genfeat run interactive` directory as the two generators and their word space (thesis C §4.1's
loop: prompt -> K topics -> chosen topics and typed words -> a continuation), for the app and for programs.

    gen = load_run(RUN_DIR)
    topics = gen.options(prompt_ids)                      # K × M words and the Eq. 4.1 vectors
    for token in gen.stream(prompt_ids, gen.conditions([0, 2], typed_ids)): ...

Shapes: prompt ids (T,); topics: words (K, M) ids, vectors (K, E); conditions (n, E) unit rows.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from genfeat.config import atomic_write_text, from_dict, recorded_run
from genfeat.data.tokenizers import GENFEAT_FILE, Tokenizer, load_tokenizer, save_tokenizer
from genfeat.models.facets import FacetConfig, FacetModel
from genfeat.models.gpt import GPTConfig, GPTDecoder, build_gpt_lm
from genfeat.models.gpt.insertion import Insertions
from genfeat.models.interactive.topics import option_generator, topic_vectors
from genfeat.models.lm import CausalLM
from genfeat.models.sampling import stream
from genfeat.train.checkpoint import WEIGHTS, load_model_weights

WORDS, VECTORS, GENERATOR = "words.json", "vectors.npy", "phases/generator"


@dataclass
class Topics:
    words: Tensor  # (K, M) word ids
    vectors: Tensor  # (K, E) Eq. 4.1, unit rows


@dataclass
class InteractiveGenerator:
    lm: CausalLM  # the conditional generator
    options_model: FacetModel
    words: list[str]
    table: Tensor  # (V, E) unit word vectors
    stop: Tensor  # (V,) bool: never shown in a topic
    pad_id: int
    m: int  # words per topic
    tokenizer: Tokenizer | None = None  # the model tokens' (real prose); None: the tokens are `words` themselves

    @torch.no_grad()
    def options(self, prompt: Sequence[int]) -> Topics:
        centres = self.options_model(torch.as_tensor([list(prompt)]))[0]  # (K, E)
        vectors, words = topic_vectors(centres, self.table, self.m, self.stop)
        return Topics(words, vectors)

    def conditions(self, topics: Topics, chosen: Sequence[int], typed: Sequence[int] = ()) -> Tensor:
        """(n, E): the chosen topics' Eq. 4.1 vectors, then each typed word's own unit vector."""
        rows = [topics.vectors[i] for i in chosen] + [self.table[w] for w in typed]
        return torch.stack(rows) if rows else self.table.new_zeros(0, self.table.size(1))

    def stream(self, prompt: Sequence[int], conditions: Tensor, max_new_tokens: int = 50, top_k: int = 40,
               seed: int = 0) -> Iterator[int]:
        """The continuation's tokens as they are drawn (the vectors inserted before the prompt's last token)."""
        ids = torch.as_tensor([list(prompt)])
        inserts = Insertions.before_last(conditions[None], ids.size(1)) if len(conditions) else None
        gen = torch.Generator().manual_seed(seed)
        for t in stream(self.lm, ids, max_new_tokens, top_k, generator=gen, inserts=inserts):
            yield int(t)


def save_word_space(run_dir: str | Path, words: Sequence[str], pad_id: int, stop: np.ndarray, generator: GPTConfig,
                    table: Tensor, tokenizer: Tokenizer | None = None) -> None:
    """What `load_run` reads beside the weights: words.json (the words topics are shown in, their stop mask, the
    padding id, the generator's GPT config without its condition layers), vectors.npy (the (V, E) unit word
    vectors) and, for real prose, the model tokens' tokenizer."""
    run = Path(run_dir)
    atomic_write_text(run / WORDS, json.dumps({
        "words": list(words), "pad_id": pad_id, "stop": np.asarray(stop).tolist(),
        "generator": dataclasses.asdict(dataclasses.replace(generator, cond_dim=0))}) + "\n")
    np.save(run / VECTORS, table.numpy())
    if tokenizer is not None:
        save_tokenizer(tokenizer, run)


def load_run(run_dir: str | Path) -> InteractiveGenerator:
    """The generators of a finished interactive run, in eval mode on the CPU."""
    run = Path(run_dir)
    saved = recorded_run(run, "interactive", (WEIGHTS, WORDS, VECTORS, f"{GENERATOR}/{WEIGHTS}"))
    cfg = saved["config"]
    meta = json.loads((run / WORDS).read_text())
    table = torch.from_numpy(np.load(run / VECTORS)).float()
    if "generator" in meta:
        gcfg = dataclasses.replace(from_dict(GPTConfig, meta["generator"], "generator."), cond_dim=table.size(1))
    else:
        gcfg = dataclasses.replace(from_dict(GPTConfig, cfg["model"], "model."), vocab_size=meta["pad_id"] + 1,
                                   cond_dim=table.size(1))
    lm = build_gpt_lm(gcfg)
    load_model_weights(lm, run / GENERATOR / WEIGHTS)
    options = option_generator(GPTDecoder(dataclasses.replace(gcfg, cond_dim=0)),
                               from_dict(FacetConfig, cfg["options"], "options."), meta["pad_id"])
    load_model_weights(options, run / WEIGHTS)
    tok = load_tokenizer(run) if (run / GENFEAT_FILE).is_file() else None
    return InteractiveGenerator(lm.eval(), options.eval(), meta["words"], table,
                                torch.as_tensor(meta["stop"]), meta["pad_id"], int(cfg.get("m_words", 5)), tok)
