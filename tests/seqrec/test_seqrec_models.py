"""SASRec / GRU4Rec with every Table-2.7 head, and RepeatNet (spec §12 tests 4, 5, 7-10)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from genfeat.heads.config import named_head
from genfeat.models.seqrec import RepeatNet, SeqRecConfig, build_seqrec
from genfeat.models.seqrec.config import TABLE_2_7
from genfeat.nn.outputs import BackboneOutput

N = 120  # items; the largest reranker ring is 500 -> clipped configs below use smaller rings


def _batch():
    torch.manual_seed(1)
    seq = torch.randint(1, N + 1, (4, 10))
    length = torch.tensor([4, 10, 7, 1])
    for b, n in enumerate(length):
        seq[b, n:] = 0
    seq[1, 5] = seq[1, 2]  # duplicates
    seq[1, 8] = seq[1, 2]
    return seq, length


def _cfg(encoder: str, head: str, merge: str = "assign", **kw) -> SeqRecConfig:
    hc = dataclasses.replace(named_head(head), merge=merge)
    if hc.reranker_sizes:
        hc = dataclasses.replace(hc, reranker_sizes=(5, 20, 50))  # spec §11 rings scaled to few items
    return SeqRecConfig(encoder=encoder, head=hc, max_len=10, d=16, d_inner=32, gru_hidden=24,
                        dropout=0.0, attn_dropout=0.0, **kw)


@pytest.mark.parametrize("head", TABLE_2_7)
@pytest.mark.parametrize("encoder", ["sasrec", "gru4rec"])
def test_every_head_is_a_distribution_over_items(encoder, head):
    torch.manual_seed(0)
    model = build_seqrec(_cfg(encoder, head), N).eval()
    seq, length = _batch()
    logp = model.log_probs(seq, length)
    assert logp.shape == (4, N + 1)
    assert torch.isneginf(logp[:, 0]).all()  # padding id: probability 0
    torch.testing.assert_close(logp.exp().sum(-1), torch.ones(4), atol=1e-5, rtol=0)
    logp.logsumexp(-1).sum().backward()  # finite gradients everywhere
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize("head", TABLE_2_7)
@pytest.mark.parametrize("encoder", ["sasrec", "gru4rec"])
def test_every_position_scores_its_prefix(encoder, head):
    """Window training's exactness: position t of `position_log_probs` equals `log_probs` of the history made
    of the items up to t (context partition, local embeddings, rings and the Mi window included)."""
    torch.manual_seed(0)
    model = build_seqrec(_cfg(encoder, head), N).eval()
    seq, length = _batch()
    every = model.position_log_probs(seq)
    assert every.shape == (4, 10, N + 1)
    for t in range(10):
        prefix = seq.clone()
        prefix[:, t + 1:] = 0
        rows = length > t  # histories that reach position t
        want = model.log_probs(prefix, torch.full_like(length, t + 1))
        torch.testing.assert_close(every[rows, t], want[rows], atol=1e-5, rtol=1e-5)


def test_repeatnet_every_position_scores_its_prefix():
    torch.manual_seed(0)
    model = build_seqrec(_cfg("repeatnet", "softmax"), N).eval()
    seq, length = _batch()
    every = model.position_log_probs(seq)
    for t in range(10):
        prefix = seq.clone()
        prefix[:, t + 1:] = 0
        rows = length > t
        torch.testing.assert_close(every[rows, t], model.log_probs(prefix, torch.full_like(length, t + 1))[rows])


@pytest.mark.parametrize("encoder", ["sasrec", "gru4rec"])
def test_last_valid_readout_ignores_the_padding_and_later_slots(encoder):
    torch.manual_seed(0)
    model = build_seqrec(_cfg(encoder, "clr20,100,500+mi"), N).eval()
    seq, length = _batch()
    base = model.log_probs(seq, length)
    other = seq.clone()
    other[0, 4:] = torch.randint(1, N + 1, (6,))  # fill user 0's padding with items: nothing it reads changes
    torch.testing.assert_close(model.log_probs(other, length)[0], base[0])
    full = torch.full_like(length, 10)
    slot = build_seqrec(_cfg(encoder, "clr20,100,500+mi", readout="last_slot"), N).eval()
    slot.load_state_dict(model.state_dict())
    torch.testing.assert_close(slot.log_probs(other, full), model.log_probs(other, full))  # equal at full length
    assert not torch.allclose(slot.log_probs(seq, length)[0], base[0])  # a padding slot otherwise


def test_sasrec_is_causal():
    torch.manual_seed(0)
    enc = build_seqrec(_cfg("sasrec", "softmax"), N).encoder.eval()
    seq, _ = _batch()
    a = enc(seq).hidden
    seq2 = seq.clone()
    seq2[1, 6] = (seq2[1, 6] % N) + 1
    b = enc(seq2).hidden
    torch.testing.assert_close(a[1, :6], b[1, :6])
    assert not torch.allclose(a[1, 6], b[1, 6])


def test_mi_depth_is_every_encoder_layer():
    assert _cfg("sasrec", "c+mi").resolved_head().depth == 2
    assert _cfg("gru4rec", "c+mi").resolved_head().depth == 1
    assert _cfg("sasrec", "clr20,100,500", merge="add").resolved_head().merge == "add"


@pytest.mark.parametrize("merge", ["assign", "add"])
def test_context_partition_brute_force(merge):
    """Spec §12 test 5: history items (only they, padding excluded) get f_C·e_x (replace) or f_1·e_x + f_C·e_x
    (add), plus the local term f_L·L_E(q_t) averaged over the positions holding x."""
    torch.manual_seed(0)
    model = build_seqrec(_cfg("sasrec", "clr20,100,500", merge=merge), N).eval()
    head = model.head
    head.dynamic.reranker_sizes, head.dynamic.f_rerank = (), torch.nn.ModuleList()  # C + L only
    seq, length = _batch()
    out = model.encoder(seq)
    pos = (length - 1)[:, None]
    z = head(out, seq, positions=pos).scores[:, 0]
    W, h = head.weight, out.hidden
    for b in range(4):
        T = int(length[b]) - 1
        q = h[b, T]
        base = head.facets[0](q) @ W.T
        want = base.clone()
        items = {int(x) for x in seq[b, : T + 1] if x > 0}
        for x in items:
            occ = [t for t in range(T + 1) if int(seq[b, t]) == x]
            local = sum(head.dynamic.f_local(q) @ head.dynamic.f_key(h[b, t]) for t in occ) / len(occ)
            val = head.dynamic.f_context(q) @ W[x] + local
            want[x] = val if merge == "assign" else base[x] + val
        torch.testing.assert_close(z[b], want, atol=1e-5, rtol=1e-5)


def test_reranker_rings_brute_force():
    """Spec §12 test 7: rings (5, 20, 50) largest first on the current logits; with replace, the final top-5
    ring's items (not in the history) get f_R5·e_x."""
    torch.manual_seed(0)
    model = build_seqrec(_cfg("gru4rec", "clr20,100,500"), N).eval()
    head = model.head
    seq, length = _batch()
    out = model.encoder(seq)
    q = out.hidden[torch.arange(4), length - 1]
    z = head(out, seq, positions=(length - 1)[:, None]).scores[:, 0]
    for b in range(4):
        cur = head.facets[0](q[b]) @ head.weight.T
        rings = zip(head.dynamic.reranker_sizes, head.dynamic.f_rerank, strict=True)
        for n, layer in sorted(rings, key=lambda p: -p[0]):
            ranked = cur.detach().clone()
            ranked[0] = float("-inf")
            top = ranked.topk(n).indices
            cur = cur.clone()
            cur[top] = layer(q[b]) @ head.weight[top].T
        hist = {int(x) for x in seq[b] if x > 0}
        keep = [x for x in range(N + 1) if x not in hist]
        torch.testing.assert_close(z[b, keep], cur[keep], atol=1e-5, rtol=1e-5)


def test_mi_window_reads_the_last_three_positions_and_zeros_before_the_start():
    from genfeat.heads.facets import MultiInput

    torch.manual_seed(0)
    mi = MultiInput(4, window=3, depth=2)
    layers = (torch.randn(1, 5, 4), torch.randn(1, 5, 4))
    out = BackboneOutput(layers[-1], all_hidden=layers)
    q = mi(out)
    for T in (0, 1, 4):
        blocks = []
        for h in (layers[1], layers[0]):
            for i in range(3):
                blocks.append(h[0, T - i] if T - i >= 0 else torch.zeros(4))
        want = torch.cat([layers[1][0, T], torch.nn.functional.gelu(mi.proj(torch.cat(blocks)), approximate="tanh")])
        torch.testing.assert_close(q[0, T], want)


def test_repeatnet_decoders():
    torch.manual_seed(0)
    net = RepeatNet(N, d=16, hidden_size=16, dropout=0.0).eval()
    seq, length = _batch()
    logp, log_re = net(seq, length)
    torch.testing.assert_close(logp.exp().sum(-1), torch.ones(4), atol=1e-5, rtol=0)
    for b in range(4):
        hist = sorted({int(x) for x in seq[b] if x > 0})
        others = [x for x in range(1, N + 1) if x not in hist]
        # repeat mass sits exactly on the history (P_e = 0 there), explore mass exactly off it (P_r = 0)
        torch.testing.assert_close(logp[b, hist].exp().sum(), log_re[b, 0].exp(), atol=1e-5, rtol=0)
        torch.testing.assert_close(logp[b, others].exp().sum(), log_re[b, 1].exp(), atol=1e-5, rtol=0)
    assert torch.isneginf(logp[:, 0]).all()
    longer = torch.nn.functional.pad(seq, (0, 4))  # more padding changes nothing: masked in all three attentions
    torch.testing.assert_close(net(longer, length)[0], logp)


def test_config_errors():
    from genfeat.errors import ConfigError

    with pytest.raises(ConfigError, match="encoder"):
        SeqRecConfig(encoder="bert4rec")
    with pytest.raises(ConfigError, match="head"):
        SeqRecConfig(head="nope")
    with pytest.raises(ValueError, match="rings"):
        build_seqrec(SeqRecConfig(head="clr20,100,500", d=8, max_len=5), 50)


def test_window_loss_scores_only_the_target_positions():
    """next_item_loss on windows (inputs, targets with 0 = unscored) equals the mean NLL over the scored positions of
    the all-position distribution, gradients included."""
    from genfeat.tasks.ranking import next_item_loss

    torch.manual_seed(0)
    model = build_seqrec(_cfg("sasrec", "clr20,100,500+mi"), N).eval()
    seq, _ = _batch()
    targets = torch.randint(1, N + 1, seq.shape)
    targets[seq == 0] = 0
    targets[0, :2] = 0  # rows with different numbers of scored positions
    targets[2, :6] = 0
    loss, n = next_item_loss(model, (seq, targets))
    assert n == int((targets > 0).sum())
    got = torch.autograd.grad(loss, list(model.parameters()), allow_unused=True)
    logp = model.position_log_probs(seq)
    want_loss = -logp[targets > 0].gather(1, targets[targets > 0][:, None]).mean()
    torch.testing.assert_close(loss, want_loss)
    want = torch.autograd.grad(want_loss, list(model.parameters()), allow_unused=True)
    for g, w in zip(got, want, strict=True):
        if w is not None:
            torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("encoder", ["sasrec", "gru4rec"])
def test_multi_softmax_recommender_max_pools_distinct_facets(encoder):
    """The recommenders' Multi-Softmax (thesis C §2.5): one softmax of max_k of the facet logits, with facets that
    differ (they start identical, where max, mean and any facet agree)."""
    torch.manual_seed(0)
    model = build_seqrec(_cfg(encoder, "mos3-max"), N).eval()
    with torch.no_grad():
        for f in model.head.facets:
            f.weight.add_(torch.randn_like(f.weight))
    seq, length = _batch()
    zs, _ = model.head.facet_logits(model.encoder(seq), seq, positions=(length - 1)[:, None])
    z = torch.stack(zs, -1)[:, 0, 1:]  # (B, items, K), item 0 is padding
    assert not torch.allclose(z.amax(-1), z.mean(-1), atol=1e-3)
    torch.testing.assert_close(model(seq, length)[:, 1:], torch.log_softmax(z.amax(-1), -1), atol=1e-5, rtol=1e-5)


def test_sasrec_feed_forward_has_recbole_dropouts_only():
    """RecBole's SASRec block: x = LN(x + Drop(W_O·MHA(x))); x = LN(x + Drop(W_2 GELU(W_1 x))), no dropout after
    the GELU. Replays the block with the same dropout stream and compares in training mode."""
    from genfeat.models.seqrec.sasrec import SASRecBlock

    torch.manual_seed(0)
    blk = SASRecBlock(16, 2, 32, dropout=0.5, attn_dropout=0.0).train()
    x = torch.randn(3, 5, 16)
    mask = torch.ones(5, 5, dtype=torch.bool).tril()[None, None]
    torch.manual_seed(7)
    got = blk(x, mask)
    torch.manual_seed(7)
    q, k, v = blk.qkv(x).view(3, 5, 3, 2, 8).permute(2, 0, 3, 1, 4)
    a = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    h = blk.ln1(x + blk.drop(blk.out(a.transpose(1, 2).reshape(3, 5, 16))))
    want = blk.ln2(h + blk.drop(blk.ff2(torch.nn.functional.gelu(blk.ff1(h)))))
    torch.testing.assert_close(got, want)


def test_evaluation_keeps_history_items_as_candidates():
    """The thesis's and RecBole's protocol (mask_history=False): an already-seen item scored above the target
    costs the target a rank."""
    import numpy as np

    from genfeat.data.seqrec import Examples
    from genfeat.tasks.ranking import ranking_metrics

    class Fixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, hist, length):
            z = torch.zeros(hist.size(0), 8)
            z[:, 3], z[:, 5] = 2.0, 1.0  # item 3 (in the history) above the target 5
            return torch.log_softmax(z, -1)

    ex = Examples(history=np.array([[3, 1, 0]]), length=np.array([2]), target=np.array([5]))
    res = ranking_metrics(Fixed(), ex, ks=(1, 2), batch_size=4)
    assert res["hit@1"] == 0.0 and res["hit@2"] == 1.0
    masked = ranking_metrics(Fixed(), ex, ks=(1,), mask_history=True, batch_size=4)
    assert masked["hit@1"] == 1.0


def test_the_recipe_evaluates_with_history_items_as_candidates():
    """The default that the thesis's and RecBole's numbers assume, read through the recipe's own configs."""
    from genfeat.recipes import seqrec

    assert seqrec.SeqRecRunConfig().eval.mask_history is False
    assert all(p().eval.mask_history is False for p in seqrec.PRESETS.values())
