"""GPT-2 checkpoints in and out (`models/gpt/hf.py`): a randomly initialised transformers GPT2LMHeadModel saved
with `save_pretrained` loads into genfeat's GPT decoder with the same logits, and genfeat's export loads back into
transformers with the same logits (where transformers is installed: the reference, not genfeat)."""

from __future__ import annotations

import pytest
import torch

from genfeat.errors import CheckpointError
from genfeat.models.gpt.hf import config_from_hf, from_pretrained, save_pretrained

transformers = pytest.importorskip("transformers")


def _reference(tmp_path, **kw):
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=97, n_positions=32, n_embd=32, n_layer=2, n_head=4, **kw)
    ref = transformers.GPT2LMHeadModel(cfg).eval()
    ref.save_pretrained(tmp_path / "ref")
    return ref


@pytest.mark.parametrize("act", ["gelu_new", "gelu"])
def test_gpt2_logits_match_transformers_both_ways(tmp_path, act):
    ref = _reference(tmp_path, activation_function=act)
    x = torch.randint(0, 97, (3, 17))
    lm = from_pretrained(tmp_path / "ref")
    with torch.no_grad():
        want = ref(x).logits
        got = lm(x)[0].scores
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    save_pretrained(lm, tmp_path / "ours")
    back = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "ours").eval()
    with torch.no_grad():
        torch.testing.assert_close(back(x).logits, want, atol=1e-5, rtol=1e-5)


def test_another_head_on_the_pretrained_decoder_and_errors(tmp_path):
    from genfeat import named_head

    ref = _reference(tmp_path)
    lm = from_pretrained(tmp_path / "ref", head=named_head("mos3"))
    torch.testing.assert_close(lm.backbone.tok_emb.weight, ref.transformer.wte.weight)
    x = torch.randint(0, 97, (2, 9))
    logp = lm(x)[0].log_probs()
    torch.testing.assert_close(logp.exp().sum(-1), torch.ones(2, 9), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="tied softmax head"):
        save_pretrained(lm, tmp_path / "mos")
    with pytest.raises(CheckpointError, match="activation_function"):
        config_from_hf({"vocab_size": 5, "n_layer": 1, "n_head": 1, "n_embd": 4, "n_positions": 8,
                        "activation_function": "swish"})
    with pytest.raises(CheckpointError, match="model_type"):
        (tmp_path / "bert").mkdir()
        (tmp_path / "bert" / "config.json").write_text('{"model_type": "bert"}')
        from_pretrained(tmp_path / "bert")


@pytest.mark.parametrize("head", ["softmax_facet", "softmax+mi", "mos3", "mfs", "c+mi", "clr20+mi", "mos3-max",
                                  "softmax+rs2:20"])
def test_thesis_heads_start_as_the_pretrained_softmax(tmp_path, head):
    """Thesis C §2.4's setting: a new head on a pretrained LM starts as that LM (identity facets, 1e-10·I
    partitions), so fine-tuning moves away from the checkpoint's distribution instead of a random one."""
    from genfeat import named_head

    _reference(tmp_path)
    x = torch.randint(0, 97, (2, 9))
    with torch.no_grad():
        base = from_pretrained(tmp_path / "ref")(x)[0].log_probs()
        got = from_pretrained(tmp_path / "ref", head=named_head(head))(x)[0].log_probs()
    torch.testing.assert_close(got, base, atol=1e-4, rtol=0)
