"""The Python API: load / generate / score a run, and a genfeat head on a Hugging Face model."""

from __future__ import annotations

import math
import re
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


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def _docstring_example(module_doc: str) -> str:
    """The indented example at the top of a module docstring (from its first `import` line to the blank line that
    ends the second paragraph of code)."""
    lines = module_doc.split("\n")
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("import "))
    code = []
    for line in lines[start:]:
        if line and not line.startswith("    "):
            break
        code.append(line[4:])
    return "\n".join(code)


@pytest.fixture
def example_dir(run_dir, offline_ptb, tmp_path, monkeypatch):
    """A working directory with what the examples name: PTB fetched (offline; the README's quickstart fetches
    it), `runs/quickstart` (a tiny lm run), `gpt2-dir` (a small HF
    GPT-2 directory written by transformers), and `AutoModel.from_pretrained("gpt2")` answered offline by a small
    randomly initialised GPT-2 of the real vocabulary size (no hub downloads here)."""
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Model

    from genfeat.data.sources import fetch

    fetch("ptb")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "quickstart").symlink_to(run_dir)
    small = dict(n_positions=64, n_embd=16, n_layer=2, n_head=2)
    GPT2LMHeadModel(GPT2Config(vocab_size=100, **small)).save_pretrained(tmp_path / "gpt2-dir")

    def offline(name, *args, **kw):
        assert name == "gpt2", name
        torch.manual_seed(0)
        return GPT2Model(GPT2Config(vocab_size=50257, **small))

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", offline)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_readme_and_api_examples_run_as_written(example_dir):
    """The README's Python block and `genfeat.api`'s docstring example, executed exactly as written."""
    from pathlib import Path

    import genfeat.api

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    blocks = _python_blocks(readme)
    assert blocks, "the README has no Python example"
    for code in [*blocks, _docstring_example(genfeat.api.__doc__)]:
        exec(compile(code, "<example>", "exec"), {})
    assert (example_dir / "out-dir" / "model.safetensors").is_file()


def test_misaligned_targets_are_one_clear_error():
    """Scores for T positions against T - 1 targets: one ValueError naming both shapes, from the model (targets
    checked against the input) and from nll (scores checked against the targets), for a plain softmax head and
    MFS (which scores the targets itself)."""
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    x = torch.randint(0, 50, (2, 9))
    for head in ("softmax", "mfs"):
        body = GPT2Model(GPT2Config(vocab_size=50, n_positions=32, n_embd=32, n_layer=2, n_head=2))
        lm = genfeat.attach_head(body, genfeat.named_head(head))
        with pytest.raises(ValueError, match=r"\(2, 8\).*\(2, 9\)"):
            lm(x, targets=x[:, 1:])
        out, _ = lm(x)  # (2, 9, V) scores
        with pytest.raises(ValueError, match=r"\(2, 9, 50\).*\(2, 8\)"):
            nll(out, x[:, 1:])
        out, _ = lm(x[:, :-1], targets=x[:, 1:])
        assert torch.isfinite(nll(out, x[:, 1:]))
        if out.target_log_probs is not None:
            with pytest.raises(ValueError, match=r"target log-probabilities.*\(2, 8\).*\(2, 7\)"):
                nll(out, x[:, 2:])
