"""Inference with a trained facet model (thesis C §3.2): load a finished `genfeat run facets` directory, embed
sentences as K unit-norm facets, and list each facet's nearest target words (thesis C Table 3.1; `genfeat
facet-words`). The scorers built on these facets (similarity, summarisation, phrases) are `analysis.facets` and
`analysis.facet_scores`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch

from genfeat.config import from_dict, recorded_run
from genfeat.data.facet_targets import FacetDataConfig, load_targets
from genfeat.data.facets import EOS, tokenize
from genfeat.models.facets.config import FacetConfig
from genfeat.models.facets.model import FacetModel
from genfeat.train.checkpoint import WEIGHTS, load_model_weights


def load_run(run_dir: str | Path) -> tuple[FacetModel, list[str], list[str], torch.Tensor]:
    """(model in eval mode, input vocabulary, target words, their unit vectors) of a `genfeat run facets` run."""
    run = Path(run_dir)
    saved = recorded_run(run, "facets", (WEIGHTS, "vocab.txt", "target_words.txt"))["config"]
    mcfg, dcfg = from_dict(FacetConfig, saved["model"], "model."), from_dict(FacetDataConfig, saved["data"], "data.")
    vocab = (run / "vocab.txt").read_text().splitlines()
    words = (run / "target_words.txt").read_text().splitlines()
    model = FacetModel(dataclasses.replace(mcfg, vocab_size=len(vocab), max_len=dcfg.max_len))
    load_model_weights(model, run / WEIGHTS)
    got, vecs = load_targets(dcfg, set(words), mcfg.d_target)
    order = {w: i for i, w in enumerate(got)}
    table = torch.nn.functional.normalize(torch.from_numpy(vecs[[order[w] for w in words]]).float(), dim=1)
    return model.eval(), vocab, words, table


@torch.no_grad()
def facet_neighbours(model: FacetModel, vocab: list[str], words: list[str], table: torch.Tensor, sentence: str,
                     top: int = 5) -> list[list[tuple[str, float]]]:
    """Each facet's `top` nearest target words by cosine (thesis C Table 3.1)."""
    ids = {w: i for i, w in enumerate(vocab)}
    toks = [ids.get(t, 1) for t in tokenize(sentence)][: model.cfg.max_len - 1] + [ids[EOS]]
    f = torch.nn.functional.normalize(model(torch.tensor([toks]))[0], dim=-1)  # (K, E)
    sims = f @ table.T  # (K, V_t)
    best = sims.topk(min(top, sims.size(1)), -1)
    return [[(words[int(i)], float(v)) for v, i in zip(vs, ix, strict=True)] for vs, ix in zip(*best, strict=True)]


@torch.no_grad()
def sentence_facets(model: FacetModel, vocab: list[str], sentences: list[str], batch: int = 256) -> list[np.ndarray]:
    """Each sentence's unit-norm facets (K, |E|), in batches of left-padded ids (the model ignores the padding;
    `tests/facets/test_facet_model.py`); a sentence is cut to the model's max_len - 1 tokens and ends with EOS."""
    ids = {w: i for i, w in enumerate(vocab)}
    seqs = [[ids.get(t, 1) for t in tokenize(s)][: model.cfg.max_len - 1] + [ids[EOS]] for s in sentences]
    out: list[np.ndarray] = []
    for a in range(0, len(seqs), batch):
        chunk = seqs[a: a + batch]
        x = torch.full((len(chunk), max(map(len, chunk))), model.cfg.pad_id, dtype=torch.long)
        for i, s in enumerate(chunk):
            x[i, x.size(1) - len(s):] = torch.tensor(s)
        out += list(torch.nn.functional.normalize(model(x), dim=-1).numpy())
    return out
