"""The reusable blocks under GDAN (spec gdan.md §5.3 tests 4-6): packed recurrent encoders, attention and the copy
mechanism over the extended vocabulary, the reader's gated attention, span objective and decoding."""

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from genfeat.models.gdan.reader import (
    GatedAttentionReader,
    ReaderConfig,
    append_tag,
    best_spans,
    candidate_log_probs,
    span_log_likelihood,
)
from genfeat.nn.pointer import copy_mixture, extend_ids, from_extended, masked_softmax
from genfeat.nn.recurrent import BiRNN


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_birnn_equals_a_packed_bidirectional_cell(cell):
    torch.manual_seed(0)
    rnn = BiRNN(4, 3, cell)
    ref = torch.nn.GRU(4, 3, batch_first=True, bidirectional=True) if cell == "gru" else \
        torch.nn.LSTM(4, 3, batch_first=True, bidirectional=True)
    with torch.no_grad():  # the reference's two directions carry BiRNN's two cells' weights
        for name, p in ref.named_parameters():
            src = rnn.backward_rnn if name.endswith("_reverse") else rnn.forward_rnn
            p.copy_(getattr(src, name.removesuffix("_reverse")))
    x = torch.randn(3, 6, 4)
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1] * 6, [1, 0, 0, 0, 0, 0]], dtype=torch.bool)
    out, last = rnn(x, mask)
    packed = pack_padded_sequence(x, mask.sum(1), batch_first=True, enforce_sorted=False)
    ref_out, h = ref(packed)
    ref_out, _ = pad_packed_sequence(ref_out, batch_first=True, total_length=6)
    h = h[0] if cell == "lstm" else h
    assert torch.allclose(out, ref_out, atol=1e-6)
    assert torch.all(out[0, 3:] == 0)
    assert torch.allclose(last, torch.cat([h[0], h[1]], -1), atol=1e-6)
    x2 = x.clone()
    x2[0, 3:] = 100.0  # what padding holds never matters
    assert torch.allclose(rnn(x2, mask)[0][0, :3], out[0, :3])


def test_extended_ids_round_trip():
    src = torch.tensor([[5, 9, 12, 9, 3], [12, 2, 0, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], dtype=torch.bool)
    ext, oov = extend_ids(src, 8, mask)
    assert ext.tolist() == [[5, 8, 9, 8, 3], [8, 2, 0, 0, 0]]
    assert oov.tolist() == [[9, 12], [12, -1]]
    assert from_extended(ext, oov, 8).masked_fill(~mask, 0).tolist() == src.tolist()


def test_copy_mixture_is_a_distribution_that_sums_repeats():
    torch.manual_seed(0)
    V = 6
    src = torch.tensor([[2, 7, 2, 9]])  # 2 twice; 7 and 9 outside the output vocabulary
    mask = torch.ones(1, 4, dtype=torch.bool)
    ext, oov = extend_ids(src, V, mask)
    p_vocab = torch.rand(1, 3, V).softmax(-1)
    attn = masked_softmax(torch.randn(1, 3, 4), mask[:, None, :])
    gate = torch.rand(1, 3, 1)
    p = copy_mixture(p_vocab, attn, ext, gate, oov.size(1))
    assert p.shape == (1, 3, V + 2)
    assert torch.allclose(p.sum(-1), torch.ones(1, 3))
    # the repeated word gets both of its copy probabilities
    g = gate[0, :, 0]
    assert torch.allclose(p[0, :, 2], g * p_vocab[0, :, 2] + (1 - g) * (attn[0, :, 0] + attn[0, :, 2]))
    # out-of-vocabulary words only through copying
    assert torch.allclose(p[0, :, V], (1 - gate[0, :, 0]) * attn[0, :, 1])
    zero_copy = copy_mixture(p_vocab, attn, ext, torch.ones(1, 3, 1), oov.size(1))
    assert torch.equal(zero_copy, torch.nn.functional.pad(p_vocab, (0, 2)))
    assert torch.all(zero_copy[..., V:] == 0)


def test_gated_attention_matches_the_formula():
    h_p = torch.tensor([[[1.0, 0.0, 2.0], [0.5, -1.0, 1.0]]])  # (1, 2, 3)
    h_q = torch.tensor([[[1.0, 1.0, 0.0], [0.0, 2.0, 1.0], [9.0, 9.0, 9.0]]])  # the last position is padding
    q_mask = torch.tensor([[True, True, False]])
    gated, alpha = GatedAttentionReader.gate(h_p, h_q, q_mask)
    for i in range(2):
        s = torch.stack([h_q[0, j] @ h_p[0, i] for j in range(2)])
        a = torch.exp(s) / torch.exp(s).sum()
        assert torch.allclose(alpha[0, i, :2], a)
        assert alpha[0, i, 2] == 0
        assert torch.allclose(gated[0, i], (a[0] * h_q[0, 0] + a[1] * h_q[0, 1]) * h_p[0, i])
    assert torch.allclose(alpha.sum(-1), torch.ones(1, 2))


def test_tags_are_the_last_real_token_and_never_an_answer():
    ids = torch.tensor([[7, 8, 9, 0], [7, 8, 9, 10]])
    mask = ids != 0
    tagged, tmask = append_tag(ids, mask, 4)
    assert tagged.tolist() == [[7, 8, 9, 4, 0], [7, 8, 9, 10, 4]]
    assert tmask.sum(1).tolist() == [4, 5]
    torch.manual_seed(0)
    reader = GatedAttentionReader(ReaderConfig(12, 8, 4, n_hops=2, dropout=0.0)).eval()
    q = torch.tensor([[7, 9, 0], [8, 10, 11]])
    out = reader(ids, mask, q, q != 0, tag=4)
    # positions of the untagged paragraph: answer indices unchanged; the tag's position (3 in row 0) excluded
    assert out["start_log_probs"].shape == (2, 4)
    for k in ("start_log_probs", "end_log_probs"):
        assert torch.allclose(out[k].exp().sum(1), torch.ones(2))
        assert out[k][0, 3] == float("-inf")
    untagged = reader(ids, mask, q, q != 0)
    assert not torch.allclose(untagged["start_log_probs"][1], out["start_log_probs"][1])


def test_span_objective_and_decoding():
    torch.manual_seed(0)
    s, e = torch.randn(3, 30).log_softmax(-1), torch.randn(3, 30).log_softmax(-1)
    j, k = torch.tensor([0, 4, 10]), torch.tensor([2, 4, 20])
    assert torch.allclose(span_log_likelihood(s, e, j, k), s[torch.arange(3), j] + e[torch.arange(3), k])
    spans = best_spans(s, e, max_len=5)
    assert torch.all(spans[:, 1] >= spans[:, 0]) and torch.all(spans[:, 1] - spans[:, 0] < 5)
    for b in range(3):  # the best allowed pair, by brute force
        best = max(((s[b, a] + e[b, c]).item(), a, c) for a in range(30) for c in range(a, min(30, a + 5)))
        assert spans[b].tolist() == [best[1], best[2]]


def test_cloze_attention_sum():
    p = torch.tensor([[5, 6, 5, 7]])
    lp = torch.tensor([[0.1, 0.2, 0.3, 0.4]]).log()
    got = candidate_log_probs(p, lp, torch.tensor([[5, 7, 9]])).exp()
    assert torch.allclose(got[0, :2], torch.tensor([0.4, 0.4]))
    assert got[0, 2] == 0


def test_fully_masked_rows_are_zero_not_nan():
    out = masked_softmax(torch.randn(2, 3), torch.tensor([[True, False, True], [False, False, False]]))
    assert out[0, 1] == 0 and torch.allclose(out[0].sum(), torch.tensor(1.0))
    assert torch.equal(out[1], torch.zeros(3))


def test_span_cap_is_exact():
    s = torch.full((1, 10), -10.0)
    e = torch.full((1, 10), -10.0)
    s[0, 0], e[0, 5], e[0, 4] = 0.0, 0.0, -1.0  # the best pair (0, 5) is 6 tokens long
    assert best_spans(s, e, max_len=5).tolist() == [[0, 4]]
    assert best_spans(s, e, max_len=6).tolist() == [[0, 5]]


def test_the_question_is_tagged_too(monkeypatch):
    torch.manual_seed(0)
    reader = GatedAttentionReader(ReaderConfig(12, 8, 4, n_hops=1, dropout=0.0)).eval()
    seen = []
    rnn = reader.question_rnns[0]
    forward = rnn.forward
    monkeypatch.setattr(rnn, "forward", lambda x, m: seen.append(m.sum(1).tolist()) or forward(x, m))
    p, q = torch.tensor([[7, 8, 9]]), torch.tensor([[7, 9, 0]])
    reader(p, p != 0, q, q != 0, tag=4)
    reader(p, p != 0, q, q != 0)
    assert seen == [[3], [2]]
