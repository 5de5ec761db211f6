import pytest
import torch

from genfeat.models.gpt import GPTConfig, build_gpt_lm
from genfeat.models.sampling import sample
from genfeat.train.checkpoint import load_model_weights, save_weights

CFG = GPTConfig(vocab_size=50, n_layer=2, n_head=2, d_model=32, max_len=24, dropout=0.1)


def test_shapes_backward_and_tied_head():
    torch.manual_seed(0)
    lm = build_gpt_lm(CFG)
    out, bb = lm(torch.randint(0, 50, (3, 20)))
    assert out.scores.shape == (3, 20, 50) and not out.is_log_prob and bb.hidden.shape == (3, 20, 32)
    out.scores.sum().backward()
    assert all(p.grad is not None for p in lm.parameters())
    assert lm.head.weight is lm.backbone.tok_emb.weight
    untied = build_gpt_lm(GPTConfig(**{**CFG.__dict__, "tie_embeddings": False}))
    assert untied.head.weight is not untied.backbone.tok_emb.weight
    assert len(lm.backbone(torch.zeros(1, 4, dtype=torch.long), output_all_hidden=True).all_hidden) == 3


def test_no_attention_to_future_tokens():
    torch.manual_seed(0)
    lm = build_gpt_lm(CFG).eval()
    x = torch.randint(0, 50, (2, 16))
    y = x.clone()
    y[:, 9:] = torch.randint(0, 50, (2, 7))  # perturb positions >= 9
    a, _ = lm(x)
    b, _ = lm(y)
    torch.testing.assert_close(a.scores[:, :9], b.scores[:, :9], rtol=0, atol=1e-6)
    assert not torch.allclose(a.scores[:, 9:], b.scores[:, 9:])


def test_deterministic_and_dropout_only_in_training():
    torch.manual_seed(1)
    lm = build_gpt_lm(CFG)
    x = torch.randint(0, 50, (2, 10))
    lm.eval()
    torch.testing.assert_close(lm(x)[0].scores, lm(x)[0].scores, rtol=0, atol=0)
    lm.train()
    assert not torch.allclose(lm(x)[0].scores, lm(x)[0].scores)


def test_save_load_round_trip(tmp_path):
    torch.manual_seed(2)
    a, b = build_gpt_lm(CFG).eval(), build_gpt_lm(CFG).eval()
    save_weights(a.state_dict(), tmp_path / "m.safetensors")
    load_model_weights(b, tmp_path / "m.safetensors")
    x = torch.randint(0, 50, (2, 10))
    torch.testing.assert_close(a(x)[0].scores, b(x)[0].scores, rtol=0, atol=0)
    assert b.head.weight is b.backbone.tok_emb.weight  # still tied after loading


def test_too_long_input_and_bad_config():
    lm = build_gpt_lm(CFG)
    with pytest.raises(ValueError, match="exceeds max_len"):
        lm(torch.zeros(1, 25, dtype=torch.long))
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(d_model=30, n_head=4)


def test_top_k_sampling():
    torch.manual_seed(0)
    lm = build_gpt_lm(CFG)
    prompt = torch.zeros(4, 3, dtype=torch.long)
    g = torch.Generator().manual_seed(0)
    out = sample(lm, prompt, max_new_tokens=30, top_k=1, generator=g)  # > max_len: context is cropped
    assert out.shape == (4, 33) and torch.equal(out[:, :3], prompt)
    assert (out[0] == out[1]).all()  # top-1 is greedy: identical rows
    again = sample(lm, prompt, 30, top_k=5, generator=torch.Generator().manual_seed(7))
    assert torch.equal(again, sample(lm, prompt, 30, top_k=5, generator=torch.Generator().manual_seed(7)))
    assert lm.training  # mode restored


def test_softmax_head_facet_starts_as_plain_softmax():
    from genfeat.heads import SoftmaxHead
    from genfeat.nn.outputs import BackboneOutput

    torch.manual_seed(0)
    emb = torch.nn.Embedding(50, 32)
    h = BackboneOutput(hidden=torch.randn(2, 5, 32))
    plain, facet = SoftmaxHead(32, 50, emb), SoftmaxHead(32, 50, emb, facet_proj=True)
    torch.testing.assert_close(plain(h).scores, facet(h).scores)  # L^f_1 = I at init
    torch.testing.assert_close(plain(h).scores, h.hidden @ emb.weight.T)
    facet(h).scores.sum().backward()
    assert facet.facet.weight.grad is not None and emb.weight.grad is not None
