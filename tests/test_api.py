"""The Python API: load / generate / score a run, and a genfeat head on a Hugging Face model."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch

import genfeat
from genfeat.cli import main
from genfeat.errors import ConfigError
from genfeat.losses.nll import nll


@pytest.fixture(scope="module")
def run_dir(ptb_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "tiny"
    assert main(["run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}", "--out", str(out)]) == 0
    return out


def test_load_generate_score(run_dir):
    lm, tok = genfeat.load(run_dir)
    assert not lm.training
    texts = genfeat.generate(lm, tok, "the company", n=2, max_new_tokens=5, seed=1)
    assert len(texts) == 2 and texts == genfeat.generate(lm, tok, "the company", n=2, max_new_tokens=5, seed=1)
    text = "the company said it would"
    s = genfeat.score(lm, tok, text)
    ids = torch.tensor([tok.encode(text)])
    with torch.no_grad():  # the same number by hand: the full scores, no targets path
        out, _ = lm(ids[:, :-1])
        expected = nll(out, ids[:, 1:]).item()
    assert s["tokens"] == ids.size(1) - 1 and math.isclose(s["nll"], expected, rel_tol=1e-5)
    assert math.isclose(s["ppl"], math.exp(expected), rel_tol=1e-5)
    with pytest.raises(ConfigError, match="at least 2"):
        genfeat.score(lm, tok, "the")


def test_load_refuses_what_is_not_a_language_model_run(tmp_path):
    with pytest.raises(ConfigError, match="not a genfeat run"):
        genfeat.load(tmp_path)


def test_a_genfeat_head_on_a_hugging_face_model():
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    body = GPT2Model(GPT2Config(vocab_size=50, n_positions=32, n_embd=32, n_layer=2, n_head=2))
    lm = genfeat.attach_head(body, genfeat.named_head("mfs"))
    assert lm.head.weight is body.wte.weight  # tied to the model's input embedding
    x = torch.randint(0, 50, (2, 9))
    out, hidden = lm(x[:, :-1], targets=x[:, 1:])
    assert hidden.all_hidden is not None and len(hidden.all_hidden) == 3  # MFS's multi-input reads every layer
    loss = nll(out, x[:, 1:])
    loss.backward()
    assert math.isfinite(loss.item()) and body.h[0].attn.c_attn.weight.grad is not None  # trains end to end
    with pytest.raises(ConfigError, match="tie=False"):
        genfeat.attach_head(body, genfeat.named_head("softmax"), vocab_size=60)
    assert genfeat.attach_head(body, genfeat.named_head("softmax"), vocab_size=60, tie=False) is not None


def test_import_genfeat_does_not_import_torch():
    code = "import sys, genfeat; genfeat.__version__; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
