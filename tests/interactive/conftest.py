"""Small trained interactive runs shared by the app's tests (API and browser): the synthetic corpus's, and real
prose's on a tiny BPE LM."""

from __future__ import annotations

import random

import numpy as np
import pytest
from tests.recipe_data import COMMON, TOPICS

from genfeat.cli import main


@pytest.fixture(scope="session")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("interactive-small") / "run"
    assert main(["run", "interactive", "--preset", "tiny", "--out", str(out), "--generator_train.max_steps", "60",
                 "--train.max_steps", "40", "--data.chain.n_docs", "400", "--data.eval_prompts", "10",
                 "--data.condition_prompts", "10"]) == 0
    return out


@pytest.fixture(scope="session")
def prose_run(tmp_path_factory):
    """A tiny BPE LM on fixture prose, then the prose recipe from its hf/."""
    root = tmp_path_factory.mktemp("prose")
    rng = random.Random(0)
    corpus = root / "corpus"
    corpus.mkdir()
    for split, n in (("train", 400), ("valid", 80), ("test", 80)):
        lines = []
        for _ in range(n):
            topic = rng.choice(list(TOPICS.values())).split()
            lines.append(" ".join(rng.choice(topic + COMMON) for _ in range(14)).capitalize() + ".")
        (corpus / f"{split}.txt").write_text("\n".join(lines) + "\n")
    vectors = root / "vectors.txt"
    words = sorted({w for ws in TOPICS.values() for w in ws.split()} | set(COMMON))
    vr = np.random.default_rng(0)
    vectors.write_text("".join(f"{w} " + " ".join(f"{v:.4f}" for v in vr.standard_normal(8)) + "\n" for w in words))
    mp = pytest.MonkeyPatch()
    mp.setenv("GENFEAT_DATA", str(root / "data"))
    try:
        lm = root / "lm"
        assert main(["run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{corpus}", "--data.tokenizer", "bpe",
                     "--data.vocab_size", "400", "--model.max_len", "64", "--out", str(lm)]) == 0
        out = root / "interactive"
        assert main(["run", "interactive", "--preset", "prose", "--init", str(lm / "hf"),
                     "--data.corpus", f"dir:{corpus}", "--data.vectors", str(vectors), "--data.min_count", "2",
                     "--data.seq_len", "32", "--hints.max_n", "2", "--data.prompt_tokens", "[8, 48]",
                     "--data.stride", "16",
                     "--data.o_target", "8", "--data.o_eval", "6", "--data.prompt_words", "[20, 6]",
                     "--data.eval_prompts", "8", "--data.batch_size", "8", "--options.d_target", "8",
                     "--options.d_model", "16", "--options.k", "3", "--options.n_dec", "1", "--options.d_inner",
                     "32", "--options.n_head", "2", "--generator_train.max_steps", "4", "--train.max_steps", "4",
                     "--out", str(out)]) == 0
    finally:
        mp.undo()
    return out
