"""Every named head builds on both causal backbones from a config, and the LM recipe trains with one."""

from __future__ import annotations

import json

import pytest
import torch

from genfeat.cli import main
from genfeat.errors import ConfigError
from genfeat.heads.config import HEADS, HeadConfig, build_head, named_head
from genfeat.losses.nll import nll
from genfeat.models.gpt import GPTConfig, build_gpt_lm
from genfeat.models.transformer_xl import TXLConfig, build_txl_lm
from genfeat.nn.outputs import BackboneOutput

V = 600  # the largest reranker ring of the named heads is 500


@pytest.mark.parametrize("name", list(HEADS))
@pytest.mark.parametrize("backbone", ["gpt", "txl"])
def test_named_heads_on_both_backbones(name, backbone):
    torch.manual_seed(0)
    head = named_head(name)
    if backbone == "txl" and head.stage2_candidates:
        pytest.skip("the two-stage reranker runs on the GPT decoder only (tests/heads/test_two_stage.py)")
    if backbone == "gpt":
        lm = build_gpt_lm(GPTConfig(vocab_size=V, n_layer=3, n_head=2, d_model=16, max_len=32, dropout=0.0, head=head))
    else:
        lm = build_txl_lm(TXLConfig(vocab_size=V, n_layer=3, d_model=16, n_head=2, d_head=8, d_inner=32, tgt_len=8,
                                    mem_len=8, dropout=0.0, head=head))
    ids = torch.randint(0, V, (2, 8))
    out, _ = lm(ids)
    logp = out.log_probs()
    torch.testing.assert_close(torch.logsumexp(logp, -1), torch.zeros(2, 8), atol=1e-5, rtol=0)


def test_head_config_errors():
    with pytest.raises(ConfigError, match="head.kind"):
        HeadConfig(kind="nope")
    for field in ("merge", "mixture", "pointer", "stage2_merge"):  # on a softmax head too, where they are unused
        with pytest.raises(ConfigError, match=f"head.{field} must be"):
            HeadConfig(**{field: "nope"})
    for field in ("num_softmax", "num_partitions", "window", "depth"):
        with pytest.raises(ConfigError, match=f"head.{field}=0"):
            HeadConfig(**{field: 0})
    with pytest.raises(ConfigError, match="head.stage2_candidates=-1: must be >= 0"):
        HeadConfig(stage2_candidates=-1)
    with pytest.raises(ConfigError, match=r"head.reranker_sizes must be >= 1, got \(20, 0\)"):
        HeadConfig(reranker_sizes=(20, 0))
    with pytest.raises(ConfigError, match="unknown head"):
        named_head("nope")
    with pytest.raises(ConfigError, match="reranker"):
        build_head(HeadConfig(kind="multi_facet", reranker_sizes=(100,)), 8, 10, None)
    with pytest.raises(ValueError, match="plain"):
        TXLConfig(cutoffs=(10,), head=HeadConfig())
    with pytest.raises(ConfigError, match="head.input_dim 1000 is wider than the backbone's 32"):
        build_head(HeadConfig(input_dim=1000), 32, 10, None)  # the rank would stay 32: not the width asked for
    assert build_head(HeadConfig(input_dim=32), 32, 10, None).proj.weight.shape == (32, 32)  # the sweep's top point


def test_lm_recipe_trains_a_multi_facet_head(ptb_dir, tmp_path):
    out = tmp_path / "mfs"
    args = ["run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}", "--out", str(out),
            "--model.head.kind", "multi_facet", "--model.head.num_softmax", "2", "--model.head.context", "true",
            "--model.head.multi_input", "true", "--model.head.depth", "2"]
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["test_ppl"] > 1 and summary["test_ppl"] < 1e6


def _facet_rows(main_args, out, capsys) -> tuple[list[str], list[float]]:
    assert main(main_args) == 0
    capsys.readouterr()
    assert main(["facets", str(out), "--context", "the company said", "--top", "3"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines()[1:] if line.strip()]
    probs = [float(tok.split()[-1]) for tok in rows[0].split("  ", 1)[1].split(", ")]
    return [r.split("  ")[0].strip() for r in rows], probs


def test_facet_inspection_command(ptb_dir, tmp_path, capsys):
    base = ["run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}", "--model.head.kind", "multi_facet"]
    names, probs = _facet_rows([*base, "--out", str(tmp_path / "mfs"), "--model.head.num_softmax", "3",
                                "--model.head.num_partitions", "2"], tmp_path / "mfs", capsys)
    assert names[0] == "final" and sum(n.startswith("softmax ") for n in names) == 3
    assert "partition 0 facet" in names and "partition 1 facet" in names
    assert len(probs) == 3 and probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1.0 + 1e-6
    _, probs = _facet_rows(["run", "lm", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}", "--train.max_steps",
                            "1", "--out", str(tmp_path / "softmax")], tmp_path / "softmax", capsys)
    # a barely trained softmax: small probabilities printed with three significant digits, not as 0.00x
    assert min(probs) > 0 and any(p < 0.1 and p != round(p, 3) for p in probs), probs
    names, _ = _facet_rows([*base, "--out", str(tmp_path / "clr"), "--model.head.context", "true",
                            "--model.head.reranker_sizes", "[5]"], tmp_path / "clr", capsys)
    assert names == ["final", "base facet f_1", "context facet f_C", "reranker facet R:5"]


def test_transformer_xl_recipe_trains_a_context_head_with_memory(ptb_dir, tmp_path):
    out = tmp_path / "txl-c"
    assert main(["run", "transformer_xl", "--preset", "tiny", "--data.corpus", f"dir:{ptb_dir}", "--out", str(out),
                 "--model.head.kind", "multi_facet", "--model.head.context", "true",
                 "--train.ckpt_every", "3"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert 1 < summary["test_ppl"] < 1e6
    # memory + ids come back
    assert main(["run", "--resume", str(out), "--train.max_steps", "8", "--train.reschedule", "true"]) == 0


@pytest.mark.parametrize("name", list(HEADS))
def test_scoring_selected_positions_equals_gathering_every_position(name):
    """positions=(B, P): the read-out of a recommender or the last step of generation. Same scores as the
    full (B, T, V) output gathered at those positions, with the context of each position unchanged."""
    torch.manual_seed(0)
    d, B, T = 16, 3, 9
    head = build_head(named_head(name), d, V, torch.nn.Embedding(V, d), pad_id=0).eval()
    states = tuple(torch.randn(B, T, d) for _ in range(4))
    out = BackboneOutput(states[-1], all_hidden=states)
    ids = torch.randint(1, V, (B, T))
    ids[0, 6:] = 0  # right padding
    ids[1, 4] = ids[1, 1]  # a duplicate
    pos = torch.tensor([[5], [8], [2]])
    full, part = head(out, ids), head(out, ids, positions=pos)
    assert full.is_log_prob == part.is_log_prob
    want = full.scores[torch.arange(B)[:, None], pos]
    torch.testing.assert_close(part.scores, want, atol=1e-5, rtol=1e-5)


def test_max_logits_mixture_is_one_softmax_of_the_facet_maximum():
    torch.manual_seed(0)
    head = build_head(HeadConfig(kind="multi_facet", num_softmax=3, mixture="max_logits"), 8, 20, None)
    out = BackboneOutput(torch.randn(2, 5, 8))
    with torch.no_grad():  # facets start identical (every head starts as the softmax): move them apart
        for f in head.facets:
            f.weight.add_(torch.randn_like(f.weight))
    res = head(out)
    zs, prior = head.facet_logits(out)
    assert prior is None and not res.is_log_prob and head.prior is None
    z = torch.stack(zs, -1)
    assert not torch.allclose(z.amax(-1), z.mean(-1))
    torch.testing.assert_close(res.scores, z.amax(-1))
    for f in head.facets[1:]:  # identical facets: the single softmax
        f.load_state_dict(head.facets[0].state_dict())
    torch.testing.assert_close(head(out).scores, torch.nn.functional.linear(head.facets[0](out.hidden), head.weight))
    with pytest.raises(ConfigError, match="max_logits"):
        build_head(HeadConfig(kind="multi_facet", mixture="max_logits"), 8, 20, None)


@pytest.mark.parametrize("name", ["softmax", "mos3", "clr20+mi", "pointer_sentinel+mi", "doc"])
def test_last_only_scores_equal_the_full_output_at_the_last_position(name):
    """What generation asks for: the head scores one position; the distribution is the same."""
    torch.manual_seed(0)
    lm = build_gpt_lm(GPTConfig(vocab_size=V, n_layer=3, n_head=2, d_model=16, max_len=32, dropout=0.0,
                                head=named_head(name))).eval()
    ids = torch.randint(0, V, (2, 9))
    full, _ = lm(ids)
    last, _ = lm(ids, last_only=True)
    torch.testing.assert_close(last.log_probs()[:, 0], full.log_probs()[:, -1], atol=1e-5, rtol=1e-5)


_TARGET_PATH_CASES = [n for n, c in HEADS.items() if c.kind != "softmax" and not c.stage2_candidates] + [
    "bias_mfs", "mp7_odd_vocab", "max_logits", "mos2+clr20", "copynet_past", "pointer_generator_past"]


def _target_case(name: str) -> HeadConfig:
    extra = {"bias_mfs": HeadConfig(kind="multi_facet", num_softmax=3, num_partitions=4, multi_input=True, bias=True),
             "mp7_odd_vocab": HeadConfig(kind="multi_facet", num_partitions=7),  # 600 % 7 != 0: padded blocks
             "max_logits": HeadConfig(kind="multi_facet", num_softmax=3, mixture="max_logits", context=True),
             "mos2+clr20": HeadConfig(kind="multi_facet", num_softmax=2, context=True, local=True,
                                      reranker_sizes=(20,), bias=True),
             # context i < t: the first position has an empty context (softmax only)
             "copynet_past": HeadConfig(kind="pointer", pointer="copynet", context_includes_current=False, bias=True),
             "pointer_generator_past": HeadConfig(kind="pointer", pointer="pointer_generator",
                                                  context_includes_current=False)}
    return extra.get(name) or HEADS[name]


@pytest.mark.parametrize("name", _TARGET_PATH_CASES)
def test_target_path_equals_full_distribution(name):
    """Training's target-only path (log p(target) without the (B, T, K, V) distribution) gives the same loss and
    the same gradients (every parameter and the backbone states) as the NLL of the full distribution."""
    torch.manual_seed(0)
    head = build_head(_target_case(name), 16, V, torch.nn.Embedding(V, 16), pad_id=3)
    for p in head.parameters():  # away from the identity init, so every facet matters
        p.data.add_(0.05 * torch.randn_like(p))
    states = [torch.randn(2, 9, 16, requires_grad=True) for _ in range(3)]
    out = BackboneOutput(states[-1], all_hidden=tuple(states))
    ids = torch.randint(0, V, (2, 9))
    ids[0, 2] = 3  # a padding id in the context
    targets = torch.randint(0, V, (2, 9))
    targets[1, 4] = -100
    targets[:, 5:] = ids[:, 1:5]  # targets that are in the context (copied)

    def loss_and_grads(**kw):
        loss = nll(head(out, ids, **({"targets": targets} if kw else {})), targets)
        grads = torch.autograd.grad(loss, [*head.parameters(), *states], allow_unused=True)
        return loss, grads

    full, g_full = loss_and_grads()
    tgt, g_tgt = loss_and_grads(targets=True)
    assert head(out, ids, targets=targets).scores is None
    torch.testing.assert_close(tgt, full, atol=1e-5, rtol=1e-5)
    for a, b in zip(g_tgt, g_full, strict=True):
        if b is None:
            assert a is None or not a.any()
        else:
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_target_path_with_memory_sees_the_memory_tokens():
    """Transformer-XL + context partition: the training call (targets=) passes the memory's token ids to the head
    like the scoring call does; a memory token that is the target gets the context logit either way."""
    torch.manual_seed(0)
    lm = build_txl_lm(TXLConfig(vocab_size=V, n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, tgt_len=6,
                                mem_len=6, dropout=0.0, head=named_head("c+mi")))
    for p in lm.head.dynamic.f_context.parameters():
        p.data.add_(0.2 * torch.randn_like(p))
    ids = torch.randint(0, V, (2, 12))
    _, bb = lm(ids[:, :6])
    y = ids[:, :6].flip(1)  # targets that occur in the memory
    full = nll(lm(ids[:, 6:], **bb.carry())[0], y)
    tgt = nll(lm(ids[:, 6:], targets=y, **bb.carry())[0], y)
    no_mem_ids = nll(lm(ids[:, 6:], targets=y, mems=bb.mems)[0], y)
    torch.testing.assert_close(tgt, full)
    assert (tgt - no_mem_ids).abs() > 1e-4


@pytest.mark.parametrize("name", ["mfs", "mos3", "c+mi", "clr20,100+mi", "copynet", "pointer_sentinel"])
def test_heads_train_under_bf16_autocast(name):
    """CPU bf16 autocast (the GPU recipe's mixed precision): the training call and the full distribution run, the
    loss stays close to fp32's and every gradient is finite."""
    torch.manual_seed(0)
    lm = build_gpt_lm(GPTConfig(vocab_size=V, n_layer=3, n_head=2, d_model=16, max_len=32, dropout=0.0,
                                head=named_head(name)))
    ids = torch.randint(0, V, (2, 12))
    ref = nll(lm(ids[:, :-1], targets=ids[:, 1:])[0], ids[:, 1:])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nll(lm(ids[:, :-1], targets=ids[:, 1:])[0], ids[:, 1:])
        full = nll(lm(ids[:, :-1])[0], ids[:, 1:])
    loss.backward()
    assert abs(loss.item() - ref.item()) < 0.05 * ref.item() and abs(full.item() - ref.item()) < 0.05 * ref.item()
    assert all(torch.isfinite(p.grad).all() for p in lm.parameters() if p.grad is not None)
