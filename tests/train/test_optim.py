"""train/optim.py: the fused Adam(W) (the same steps as the default implementation, and the fallback where the kernel
does not apply); fine-tuning parameter groups: layer-wise learning-rate decay and the reference's weight-decay
exclusion (LayerNorm, biases), checked on a real XLNet classifier and through one AdamW step."""

import pytest
import torch

from genfeat.losses.classification import classification_loss
from genfeat.models.xlnet.config import tiny
from genfeat.models.xlnet.heads import XLNetClassifier
from genfeat.paradigms.finetune import FinetuneConfig
from genfeat.recipes.xlnet_squad import PRESETS as SQUAD_PRESETS
from genfeat.train.optim import adam, finetune_optimizer, finetune_param_groups


@pytest.mark.parametrize("decoupled", [True, False])
def test_fused_adam_takes_the_default_implementations_steps(decoupled):
    torch.manual_seed(0)
    nets = [torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 3)) for _ in range(2)]
    nets[1].load_state_dict(nets[0].state_dict())
    kw = {"lr": 1e-2, "betas": (0.8, 0.99), "weight_decay": 0.1}
    fused = adam([{"params": nets[0][0].parameters()}, {"params": nets[0][2].parameters(), "lr": 3e-2}],
                 decoupled=decoupled, **kw)
    plain = (torch.optim.AdamW if decoupled else torch.optim.Adam)(
        [{"params": nets[1][0].parameters()}, {"params": nets[1][2].parameters(), "lr": 3e-2}], foreach=False, **kw)
    assert fused.defaults["fused"] and type(fused) is type(plain)
    for _ in range(5):
        x = torch.randn(4, 8)
        for net, opt in zip(nets, (fused, plain), strict=True):
            opt.zero_grad()
            net(x).pow(2).mean().backward()
            opt.step()
    for a, b in zip(nets[0].parameters(), nets[1].parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_adam_falls_back_where_the_kernel_does_not_apply():
    assert not adam([torch.nn.Parameter(torch.zeros(3, device="meta"))]).defaults["fused"]


def lookup(model, groups):
    by_id = {id(p): g for g in groups for p in g["params"]}
    return {n: by_id[id(p)] for n, p in model.named_parameters()}


def test_groups_scale_layers_and_exclude_norms_and_biases():
    torch.manual_seed(0)
    cfg = tiny()
    cfg = type(cfg)(**{**cfg.__dict__, "n_layer": 3, "vocab_size": 40})
    model = XLNetClassifier(cfg, 3)
    g = lookup(model, finetune_param_groups(model, weight_decay=0.01, layer_decay=0.5))
    assert g["transformer.layer.2.ff.layer_1.weight"]["lr_scale"] == 1.0
    assert g["transformer.layer.1.ff.layer_1.weight"]["lr_scale"] == 0.5
    assert g["transformer.layer.0.rel_attn.q.weight"]["lr_scale"] == 0.25
    for name in ("transformer.word_embedding.weight", "logits_proj.weight", "transformer.r_w_bias"):
        assert g[name]["lr_scale"] == 1.0, name  # outside the layers: full rate, as the reference
    for name, group in g.items():
        excluded = "bias" in name or "layer_norm" in name
        assert group["weight_decay"] == (0.0 if excluded else 0.01), name
    assert g["transformer.r_s_bias"]["weight_decay"] == 0.0
    assert g["transformer.layer.0.rel_attn.layer_norm.weight"]["weight_decay"] == 0.0


def test_one_adamw_step_moves_lower_layers_less():
    """Adam's first step moves every weight by lr (per group); so the ratio of moves is the lr ratio."""
    torch.manual_seed(0)
    cfg = tiny()
    cfg = type(cfg)(**{**cfg.__dict__, "n_layer": 2, "vocab_size": 40})
    model = XLNetClassifier(cfg, 2)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = finetune_optimizer(model, lr=1e-3, weight_decay=0.0, layer_decay=0.25, eps=1e-12)
    x = torch.randint(0, 40, (4, 6))
    classification_loss(model(x), torch.tensor([0, 1, 0, 1])).backward()
    opt.step()

    def move(name):
        d = (dict(model.named_parameters())[name] - before[name]).abs()
        return d[d > 0].median().item()
    top, low = move("transformer.layer.1.ff.layer_1.weight"), move("transformer.layer.0.ff.layer_1.weight")
    assert top == pytest.approx(1e-3, rel=1e-3) and low == pytest.approx(2.5e-4, rel=1e-3)


def test_squad_preset_uses_the_references_layer_decay():
    assert SQUAD_PRESETS["squad2"]().train.layer_decay == 0.75
    with pytest.raises(Exception, match="layer_decay"):
        FinetuneConfig(layer_decay=1.5)
