"""Pointer-network baselines (spec multi-facet-softmax.md §5.6, §12 item 9): normalisation, the formulas by
hand, attention only over the past, copy mass, empty contexts, gradients and causality."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from genfeat.heads.pointer import MODES, PointerHead
from tests.heads.test_dynamic_partitions import ids_with_repeats
from tests.heads.test_multi_facet import B, D, T, V, backbone_out, scramble


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("current", [True, False])
def test_pointer_heads_are_distributions(mode, current):
    head = PointerHead(D, V, mode=mode, context_includes_current=current, pad_id=0)
    scramble(head)
    ids = ids_with_repeats()
    ids[1, :3] = 0
    logp = head(backbone_out(), ids).log_probs()
    assert torch.isfinite(torch.logsumexp(logp, -1)).all()
    torch.testing.assert_close(torch.logsumexp(logp, -1), torch.zeros(B, T), atol=1e-5, rtol=0)


def by_hand(head: PointerHead, h: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The three output distributions, position by position (context i <= t)."""
    W, out = head.weight, torch.empty(B, T, V)
    for b in range(B):
        for t in range(T):
            z = head.facet(h[b, t]) @ W.T
            u, keys = head.query(h[b, t]), head.key(h[b, : t + 1])
            copy = torch.zeros(V)
            if head.mode == "copynet":
                num = torch.exp(z)
                for i in range(t + 1):
                    num[ids[b, i]] += torch.exp(u @ torch.tanh(keys[i]))
                out[b, t] = num / num.sum()
                continue
            g = head.gate(h[b, t])[0]
            if head.mode == "pointer_generator":
                e = torch.stack([head.v @ torch.tanh(u + keys[i] + head.attn_bias) for i in range(t + 1)])
                a, p_gen = torch.softmax(e, 0), torch.sigmoid(g)
                for i in range(t + 1):
                    copy[ids[b, i]] += (1 - p_gen) * a[i]
            else:
                a = torch.softmax(torch.cat([torch.stack([u @ torch.tanh(keys[i]) for i in range(t + 1)]), g[None]]), 0)
                p_gen = a[-1]
                for i in range(t + 1):
                    copy[ids[b, i]] += a[i]
            out[b, t] = p_gen * torch.softmax(z, 0) + copy
    return out


@pytest.mark.parametrize("mode", MODES)
def test_pointer_formulas(mode):
    head = PointerHead(D, V, mode=mode).double()
    scramble(head)
    out = backbone_out()
    out.hidden = out.hidden.double()
    ids = ids_with_repeats()
    torch.testing.assert_close(head(out, ids).log_probs().exp(), by_hand(head, out.hidden, ids).double())


@pytest.mark.parametrize("mode", MODES)
def test_pointer_heads_never_look_ahead_and_train(mode):
    head = PointerHead(D, V, mode=mode)
    scramble(head)
    out, ids = backbone_out(), ids_with_repeats()
    base = head(out, ids).log_probs()
    ids2 = ids.clone()
    ids2[:, 5] = (ids2[:, 5] + 1) % V
    out2 = backbone_out()
    out2.hidden = out.hidden.clone()
    out2.hidden[:, 5:] += 1.0  # later states change too
    torch.testing.assert_close(head(out2, ids2).log_probs()[:, :5], base[:, :5])
    F.nll_loss(base.reshape(-1, V), ids.roll(-1, 1).reshape(-1)).backward()
    for name, p in head.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


def test_empty_context_falls_back_to_the_softmax():
    for mode in MODES:
        head = PointerHead(D, V, mode=mode, context_includes_current=False)
        scramble(head)
        out, ids = backbone_out(), ids_with_repeats()
        logp = head(out, ids).log_probs()
        z = head.facet(out.hidden[:, 0]) @ head.weight.T
        torch.testing.assert_close(logp[:, 0], torch.log_softmax(z, -1), atol=1e-5, rtol=1e-5)
