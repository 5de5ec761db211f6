"""The two-stage reranker Rs2 (spec multi-facet-softmax.md §5.3): exact against running the decoder on each
explicit sequence [x_0..x_t, SEP, slot, c_j], causal, normalised, and trainable end to end."""

from __future__ import annotations

import pytest
import torch

from genfeat.errors import ConfigError
from genfeat.heads.config import HeadConfig, named_head
from genfeat.losses import nll
from genfeat.models.gpt import GPTConfig, build_gpt_lm
from genfeat.tasks.language_modeling import lm_loss

V = 50


def _lm(head: str = "softmax+rs2:20", n: int = 6, merge: str = "add"):
    torch.manual_seed(0)
    cfg = named_head(head)
    cfg = HeadConfig(**{**cfg.__dict__, "stage2_candidates": n, "stage2_merge": merge})
    lm = build_gpt_lm(GPTConfig(vocab_size=V, n_layer=2, n_head=2, d_model=16, max_len=16, dropout=0.0, head=cfg))
    rs2 = lm.head
    with torch.no_grad():  # make stage 2 matter
        rs2.A.weight.normal_(std=0.3)
        rs2.B.weight.normal_(std=0.3)
        rs2.segment.normal_(std=0.1)
    return lm.eval()


@pytest.mark.parametrize("merge", ["add", "assign"])
def test_matches_the_decoder_run_on_each_explicit_sequence(merge):
    lm = _lm(merge=merge)
    rs2, dec = lm.head, lm.backbone
    ids = torch.randint(0, V, (2, 7))
    out, _ = lm(ids)
    bb = dec(ids, output_all_hidden=True)
    logp1 = rs2.stage1(bb, ids).log_probs()
    for b in range(2):
        for t in (0, 3, 6):
            cand = logp1[b, t].topk(rs2.n).indices
            slot = rs2.A(rs2.facet(bb.hidden[b, t]))
            want = logp1[b, t].clone()
            for c in cand:
                pos = torch.arange(t + 1)
                prefix = dec.tok_emb(ids[b, : t + 1]) + dec.pos_emb(pos)
                extra = torch.stack([rs2.sep, slot, dec.tok_emb.weight[c]]) + dec.pos_emb.weight[t] + rs2.segment
                h = torch.cat([prefix, extra])[None]
                for block in dec.blocks:
                    h = block(h)
                s2 = slot @ rs2.B(dec.ln_f(h)[0, -1])
                want[c] = want[c] + s2 if merge == "add" else s2
            torch.testing.assert_close(out.scores[b, t], want, atol=1e-5, rtol=1e-5)


def test_normalised_causal_and_only_candidates_change():
    lm = _lm()
    ids = torch.randint(0, V, (2, 9))
    out, _ = lm(ids)
    logp = out.log_probs()
    torch.testing.assert_close(logp.logsumexp(-1), torch.zeros(2, 9), atol=1e-5, rtol=0)
    later = ids.clone()
    later[:, 6:] = (later[:, 6:] + 1) % V
    torch.testing.assert_close(lm(later)[0].scores[:, :6], out.scores[:, :6])
    base = out.aux.log_probs()
    changed = (out.scores != base).sum(-1)
    assert (changed <= lm.head.n).all() and (changed > 0).all()
    with torch.no_grad():
        lm.head.A.weight.zero_()  # no slot -> no stage-2 score: the stage-1 distribution
    torch.testing.assert_close(lm(ids)[0].scores, base)


def test_training_loss_is_stage1_plus_stage2_and_reaches_every_part():
    lm = _lm("clr20+rs2:20+mi").train()
    ids, y = torch.randint(0, V, (2, 8)), torch.randint(0, V, (2, 8))
    loss, n = lm_loss(lm, (ids, y))
    out, _ = lm(ids)
    torch.testing.assert_close(loss, nll(out, y) + nll(out.aux, y))
    loss.backward()
    rs2 = lm.head
    for name, p in [("A", rs2.A.weight), ("B", rs2.B.weight), ("facet", rs2.facet.weight), ("sep", rs2.sep),
                    ("segment", rs2.segment), ("stage-1 context facet", rs2.stage1.dynamic.f_context.weight),
                    ("decoder", lm.backbone.blocks[0].attn.qkv.weight)]:
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    names = [k for k, _ in lm.state_dict().items()]
    assert len(names) == len(set(names)) and not any(k.startswith("head._decoder") for k in names)


def test_config_errors():
    from genfeat.models.transformer_xl import TXLConfig

    with pytest.raises(ValueError, match="GPT decoder only"):
        TXLConfig(head=named_head("softmax+rs2:20"))
    with pytest.raises(ConfigError, match="candidates"):
        build_gpt_lm(GPTConfig(vocab_size=10, n_layer=1, n_head=1, d_model=8, max_len=8,
                               head=HeadConfig(stage2_candidates=20)))
