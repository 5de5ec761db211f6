"""Text generation as a task: top-k sampling from a causal LM continuing a prompt (thesis Y §2.1's samples, top-k
= 40), decoded by the run's tokenizer. `SampleConfig` is the sampling section of the LM recipes' configs;
`generate_text` is what `genfeat generate`, `genfeat.api` and the recipes' report samples call; `text_deltas` turns
a stream of token ids into text pieces as they are drawn (`genfeat generate -n 1` prints them, the interactive app
sends them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import torch

from genfeat.data.tokenizers import Tokenizer
from genfeat.errors import ConfigError
from genfeat.models.lm import CausalLM
from genfeat.models.sampling import sample, stream

CHAR_LEVEL = ("char", "byte")  # tokenizers without an end-of-sentence token (LMs evaluated in bits per character)


@dataclass(frozen=True)
class SampleConfig:
    n: int = 3  # samples printed and written to report.md
    max_new_tokens: int = 40
    top_k: int = 40  # thesis Y §2.1 samples with top-k = 40
    temperature: float = 1.0
    prompt: str = ""  # empty: start from the end-of-sentence token

    def __post_init__(self) -> None:
        if self.n < 0 or self.max_new_tokens < 1 or self.top_k < 1:
            raise ValueError(f"n must be >= 0, max_new_tokens and top_k >= 1 (got {self.n}, {self.max_new_tokens}, "
                             f"{self.top_k})")
        if not math.isfinite(self.temperature) or self.temperature <= 0:
            raise ValueError(f"temperature must be a finite number > 0, got {self.temperature}")



def check_sample_prompt(tokenizer: str, sample: SampleConfig) -> None:
    """Before step 1: char and byte tokenizers have no end-of-sentence token to start a sample from, so the
    samples written after training need a prompt."""
    if tokenizer in CHAR_LEVEL and sample.n > 0 and not sample.prompt:
        raise ValueError(f"sample.prompt is empty and the {tokenizer} tokenizer has no end-of-sentence token "
                         "to start the samples from: give --sample.prompt TEXT (or --sample.n 0)")


def text_deltas(tok: Tokenizer, ids: Iterable[int], stop_at_eos: bool = False) -> Iterator[str]:
    """The text each new token adds to the decoded continuation. A byte-level piece that ends inside a character
    (decoded as U+FFFD) is held back until the character is complete. `stop_at_eos`: end at the end-of-sentence
    token (a word-level sample is one sentence)."""
    got: list[int] = []
    sent = ""
    for i in ids:
        if stop_at_eos and i == tok.eos_id:
            break
        got.append(int(i))
        text = tok.decode(got)
        if text.endswith("\ufffd"):
            continue
        if text.startswith(sent) and len(text) > len(sent):
            yield text[len(sent):]
            sent = text
    if got:
        text = tok.decode(got)
        if len(text) > len(sent) and text.startswith(sent):
            yield text[len(sent):]


def prompt_ids(tok: Tokenizer, prompt: str, prompt_option: str = "sample.prompt") -> list[int]:
    """The prompt's ids; an empty prompt starts from the end-of-sentence token. Errors name `prompt_option`."""
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{prompt_option} is not valid UTF-8 text") from None
    ids = tok.encode(prompt) if prompt else []
    if not ids:
        if tok.eos_id is None:
            what = "is empty" if not prompt.strip() else "encodes to no tokens"
            raise ConfigError(f"{prompt_option} {what}, and this {tok.kind} tokenizer has no end-of-sentence token "
                              f"to start from: give some text with {prompt_option}")
        ids = [tok.eos_id]
    return ids


def stream_text(lm: CausalLM, tok: Tokenizer, sc: SampleConfig, seed: int = 0,
                prompt_option: str = "sample.prompt") -> Iterator[str]:
    """One sample continuing `sc.prompt`, as text pieces while it is drawn (`models.sampling.stream`)."""
    device = next(lm.parameters()).device
    ids = torch.tensor([prompt_ids(tok, sc.prompt, prompt_option)], device=device)
    gen = torch.Generator(device=device).manual_seed(seed)
    tokens = (int(t) for t in stream(lm, ids, sc.max_new_tokens, sc.top_k, sc.temperature, generator=gen))
    yield from text_deltas(tok, tokens, stop_at_eos=tok.kind == "word")


def generate_text(lm: CausalLM, tok: Tokenizer, sc: SampleConfig, n: int | None = None,
                  seed: int = 0, prompt_option: str = "sample.prompt") -> list[str]:
    """`n` samples continuing `sc.prompt`; an empty prompt starts from the end-of-sentence token. Errors name
    `prompt_option`, the way the user gave the prompt."""
    device = next(lm.parameters()).device
    prompt = prompt_ids(tok, sc.prompt, prompt_option)
    n = sc.n if n is None else n
    gen = torch.Generator(device=device).manual_seed(seed)
    ids = torch.tensor([prompt] * n, device=device)
    out = sample(lm, ids, sc.max_new_tokens, sc.top_k, sc.temperature, generator=gen, stop_token=None)
    texts = []
    for row in out.tolist():
        new = row[len(prompt):]
        if tok.kind == "word" and tok.eos_id in new:  # a word-level sample is one sentence
            new = new[: new.index(tok.eos_id)]
        texts.append((sc.prompt + " " if sc.prompt and tok.kind == "word" else sc.prompt) + tok.decode(new))
    return texts
