"""Inserted condition vectors in the GPT decoder (spec interactive-generation.md §9 tests 3-7, §4.4): the merged
layout and its null labels, causality, position ids, the special position table, n = 0 = the base LM, the
streaming sampler's positions and its cache, key masks for left padding, gradients through the cache."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from genfeat.models.gpt import GPTConfig, build_gpt_lm
from genfeat.models.gpt.insertion import IGNORE, Insertions, insertion_layout, merge, merged_labels
from genfeat.models.sampling import filter_log_probs, sample, stream
from genfeat.nn.outputs import BackboneOutput

CFG = GPTConfig(vocab_size=50, n_layer=2, n_head=2, d_model=16, max_len=40, dropout=0.0, cond_dim=6)


@pytest.fixture
def lm():
    torch.manual_seed(0)
    m = build_gpt_lm(CFG).eval()
    with torch.no_grad():  # a visible special table (the default init is small but not zero; make it matter)
        m.backbone.cond_pos_emb.weight.normal_(0, 0.5)
    return m


def test_layout_and_labels_of_the_spec_example():
    """Tokens 0..9, insertions at [3, 7] with n = [2, 1] -> x0 x1 x2 f f x3 x4 x5 x6 f x7 x8 x9 (13); labels
    x0..x3, -, -, x4..x7, -, x8, x9."""
    ids = torch.arange(10)[None] + 20
    loc = torch.tensor([[3, 3, 7]])
    lay = insertion_layout(loc, 10)
    assert lay.width == 13 and lay.length.tolist() == [13]
    assert lay.token_slot.tolist() == [[0, 1, 2, 5, 6, 7, 8, 10, 11, 12]]
    assert lay.vector_slot.tolist() == [[3, 4, 9]]
    x = [20 + i for i in range(10)]
    want = x[0:4] + [IGNORE, IGNORE] + x[4:8] + [IGNORE] + x[8:10]
    assert merged_labels(ids, loc).tolist() == [want]


def test_unused_slots_and_bad_layouts():
    lay = insertion_layout(torch.tensor([[1, -1], [0, 2]]), 4)
    assert lay.width == 6 and lay.length.tolist() == [5, 6]
    assert lay.vector_slot[0].tolist() == [1, 6]  # the unused slot goes to the spill column
    v = torch.zeros(1, 2, 6)
    with pytest.raises(ValueError, match="sorted"):
        Insertions(v, torch.tensor([[3, 1]]))
    with pytest.raises(ValueError, match="after the used"):
        Insertions(v, torch.tensor([[-1, 1]]))
    with pytest.raises(ValueError, match="past the last"):
        insertion_layout(torch.tensor([[4]]), 4)


def test_the_gathered_loss_is_the_null_label_loss_on_the_merged_sequence(lm):
    """lm(ids[:, :-1], targets=ids[:, 1:], inserts) = shift-by-one CE of the merged logits with `merged_labels`."""
    torch.manual_seed(1)
    ids = torch.randint(0, 50, (2, 12))
    loc = torch.tensor([[2, 2, 8], [5, -1, -1]])
    ins = Insertions(torch.randn(2, 3, 6), loc)
    head_out, _ = lm(ids[:, :-1], inserts=ins)
    ours = F.cross_entropy(head_out.log_probs().reshape(-1, 50), ids[:, 1:].reshape(-1), reduction="sum")
    # the merged sequence through the blocks by hand
    dec = lm.backbone
    tok = dec.tok_emb(ids[:, :-1]) + dec.pos_emb(torch.arange(11))
    lay = insertion_layout(loc, 11)
    h = merge(tok, dec.embed_conditions(ins, torch.arange(11).expand(2, 11)), lay)
    for b in dec.blocks:
        h = b(h)
    logits = lm.head(BackboneOutput(hidden=dec.ln_f(h))).log_probs()  # (B, 14, V)
    labels = merged_labels(ids[:, :-1], loc)
    labels = torch.cat([labels, labels.new_full((2, 1), IGNORE)], 1)
    # each row's last real token predicts ids[:, -1]: put it after that token's slot
    for r in range(2):
        labels[r, lay.token_slot[r, -1] + 1] = ids[r, -1]
    ref = F.cross_entropy(logits.reshape(-1, 50), labels[:, 1:].reshape(-1), ignore_index=IGNORE, reduction="sum")
    torch.testing.assert_close(ours, ref, atol=1e-4, rtol=1e-5)


def test_causality_positions_and_the_special_table(lm):
    torch.manual_seed(2)
    ids = torch.randint(0, 50, (1, 10))
    ins = Insertions(torch.randn(1, 2, 6), torch.tensor([[6, 6]]))
    plain = lm.backbone(ids).hidden
    cond = lm.backbone(ids, inserts=ins).hidden
    assert cond.shape == plain.shape
    torch.testing.assert_close(cond[:, :6], plain[:, :6], atol=1e-6, rtol=0)  # tokens before the insertion
    assert (cond[:, 6:] - plain[:, 6:]).abs().max() > 1e-3  # the tokens after it read the hints
    # the special position is the position of the token they precede, and a table of its own
    dec = lm.backbone
    assert dec.cond_pos_emb is not dec.pos_emb and dec.cond_pos_emb.weight.data_ptr() != dec.pos_emb.weight.data_ptr()
    at6 = dec.embed_conditions(ins, torch.arange(10)[None])
    torch.testing.assert_close(at6, dec.cond_proj(ins.vectors) + dec.cond_pos_emb.weight[6])
    with torch.no_grad():
        dec.cond_pos_emb.weight[6] += 1.0  # only the vectors' own position row moves the output
        dec.pos_emb.weight[6].zero_()
    moved = lm.backbone(ids, inserts=ins).hidden
    assert (moved[:, 6:] - cond[:, 6:]).abs().max() > 1e-3


def test_no_inserted_vectors_is_the_base_lm(lm):
    """G5 / test 7: with no vectors the outputs equal the plain decoder's, exactly."""
    torch.manual_seed(3)
    ids = torch.randint(0, 50, (2, 9))
    plain, _ = lm(ids)
    empty, _ = lm(ids, inserts=Insertions(torch.zeros(2, 0, 6), torch.zeros(2, 0, dtype=torch.long)))
    unused, _ = lm(ids, inserts=Insertions(torch.zeros(2, 2, 6), torch.full((2, 2), -1)))
    assert torch.equal(plain.log_probs(), empty.log_probs())
    torch.testing.assert_close(plain.log_probs(), unused.log_probs(), atol=1e-6, rtol=0)
    base = build_gpt_lm(GPTConfig(**{**CFG.__dict__, "cond_dim": 0})).eval()
    base.load_state_dict({k: v for k, v in lm.state_dict().items() if "cond_" not in k})
    assert torch.equal(base(ids)[0].log_probs(), plain.log_probs())


def _positions_seen(lm, monkeypatch) -> list:
    seen = []
    orig = lm.backbone.forward

    def spy(*a, **kw):
        seen.append(kw.get("position_ids"))
        return orig(*a, **kw)
    monkeypatch.setattr(lm.backbone, "forward", spy)
    return seen


@pytest.mark.parametrize("ri", [False, True])
def test_generated_positions(lm, monkeypatch, ri):
    """Test 6: the first generated token sits at position T0 (training-consistent) or T0 + n (the reference)."""
    prompt = torch.randint(0, 50, (1, 7))
    ins = Insertions.before_last(torch.randn(1, 3, 6), 7)
    assert ins.locations.tolist() == [[6, 6, 6]]  # before x_I, the prompt's last token
    seen = _positions_seen(lm, monkeypatch)
    sample(lm, prompt, 3, top_k=5, generator=torch.Generator().manual_seed(0), inserts=ins, ri_position_offset=ri)
    assert seen[0].tolist() == [list(range(7))]
    if ri:
        assert seen[1] is None and seen[2] is None  # the decoder's default: the cache's length (7 + n = 10 first)
    else:
        assert [p.item() for p in seen[1:]] == [7, 8]


def test_cached_sampling_equals_rereading_with_inserted_vectors(lm, monkeypatch):
    """Cached = uncached sampling for a fixed seed, with vectors inserted (spec §9 and §4.4)."""
    prompt = torch.randint(0, 50, (2, 6))
    ins = Insertions.before_last(30 * torch.randn(2, 2, 6), 6)
    gen = lambda: torch.Generator().manual_seed(4)  # noqa: E731
    cached = sample(lm, prompt, 20, top_k=8, generator=gen(), inserts=ins)
    monkeypatch.setattr(type(lm), "generation_memory", lambda self: None)
    reread = sample(lm, prompt, 20, top_k=8, generator=gen(), inserts=ins)
    assert torch.equal(cached, reread)
    plain = sample(lm, prompt, 20, top_k=8, generator=gen())
    assert not torch.equal(plain, cached)  # and the vectors change what is drawn


def test_left_padded_prompts_equal_their_unpadded_runs(lm):
    """A key mask hides left padding: a padded row draws what it draws alone, cached steps included."""
    torch.manual_seed(5)
    short = torch.randint(3, 50, (1, 4))
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), short], 1)
    mask = torch.tensor([[False] * 3 + [True] * 4])
    alone = lm.backbone(short).hidden
    both = lm.backbone(padded, key_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp_min(0)).hidden
    torch.testing.assert_close(both[:, 3:], alone, atol=1e-5, rtol=1e-5)
    nxt = torch.tensor([[7]])
    a = lm.backbone(short, mems=())
    p = lm.backbone(padded, key_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp_min(0), mems=())
    step_alone = lm.backbone(nxt, **a.carry()).hidden
    step_padded = lm.backbone(nxt, position_ids=torch.tensor([[4]]), **p.carry()).hidden  # the mask is carried
    torch.testing.assert_close(step_padded, step_alone, atol=1e-5, rtol=1e-5)
    lp_alone = [t.item() for t in stream(lm, short, 6, top_k=1)]
    lp_padded = [t.item() for t in stream(lm, padded, 6, top_k=1, key_mask=mask)]
    assert lp_alone == lp_padded
    unmasked = lm.backbone(padded).hidden  # without the mask the padding is read as tokens
    assert (unmasked[:, 3:] - alone).abs().max() > 1e-3


def test_top_k_top_p_filtering():
    """Test 15: k = 1 is greedy; outside the top-k (and the top-p set) the probability is exactly 0."""
    logp = torch.log_softmax(torch.tensor([[2.0, 1.0, 0.5, 0.1, -1.0]]), -1)
    k2 = filter_log_probs(logp, top_k=2).softmax(-1)
    assert (k2[0, 2:] == 0).all() and torch.allclose(k2.sum(), torch.tensor(1.0))
    p = logp.exp()[0]
    nucleus = filter_log_probs(logp, top_p=float(p[0] + p[1]) - 1e-4).softmax(-1)
    assert (nucleus[0, 2:] == 0).all() and (nucleus[0, :2] > 0).all()
    assert (filter_log_probs(logp, top_p=0.01).softmax(-1)[0, 1:] == 0).all()  # the top token stays
    torch.manual_seed(6)
    lm_ = build_gpt_lm(GPTConfig(vocab_size=50, n_layer=1, n_head=2, d_model=16, max_len=40)).eval()
    prompt = torch.randint(0, 50, (2, 5))
    greedy = sample(lm_, prompt, 6, top_k=1)
    ids = prompt
    for _ in range(6):
        ids = torch.cat([ids, lm_(ids)[0].log_probs()[:, -1].argmax(-1, keepdim=True)], 1)
    assert torch.equal(greedy, ids)


def test_stream_yields_as_it_draws_and_stops_when_the_reader_does(lm, monkeypatch):
    calls = []
    orig = lm.backbone.forward
    monkeypatch.setattr(lm.backbone, "forward", lambda *a, **kw: calls.append(1) or orig(*a, **kw))
    it = stream(lm, torch.randint(0, 50, (1, 5)), 30, top_k=5)
    first = next(it)
    assert first.shape == (1,) and len(calls) == 1
    next(it)
    it.close()  # a consumer that stops reading: no more forward passes
    assert len(calls) == 2 and not lm.training


def test_gradients_reach_the_cache(lm):
    """PPLM's access: a cache that requires grad gets a gradient from the next token's log-probability."""
    out = lm.backbone(torch.randint(0, 50, (1, 5)), mems=())
    mems = tuple(m.detach().requires_grad_(True) for m in out.mems)
    head_out, _ = lm(torch.randint(0, 50, (1, 1)), last_only=True, mems=mems)
    head_out.log_probs()[0, -1, 3].backward()
    assert all(m.grad is not None and m.grad.abs().sum() > 0 for m in mems)


def test_left_padding_with_inserted_vectors_equals_the_unpadded_row(lm):
    """The merged key mask keeps the inserted slots visible and the padding hidden."""
    torch.manual_seed(7)
    short = torch.randint(3, 50, (1, 5))
    padded = torch.cat([torch.zeros(1, 2, dtype=torch.long), short], 1)
    mask = torch.tensor([[False] * 2 + [True] * 5])
    v = 3 * torch.randn(1, 2, 6)
    alone = lm.backbone(short, inserts=Insertions.before_last(v, 5)).hidden
    both = lm.backbone(padded, key_mask=mask, position_ids=(mask.cumsum(1) - 1).clamp_min(0),
                       inserts=Insertions.before_last(v, 7)).hidden
    torch.testing.assert_close(both[:, 2:], alone, atol=1e-5, rtol=1e-5)
