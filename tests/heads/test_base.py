"""Shared head helpers: the chunked exact top-k and the sparse-gradient row lookup of the output embedding."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from genfeat.heads.base import HeadNeeds, embedding_rows, top_indices
from genfeat.heads.config import HEADS, build_head
from genfeat.heads.softmax import SoftmaxHead
from genfeat.nn.outputs import BackboneOutput
from tests.heads.test_dynamic_partitions import dynamic_head


@pytest.mark.parametrize("V", [6400, 6437])  # no tail / a tail of 37 entries after the last full chunk
@pytest.mark.parametrize("k", [1, 5, 6])
def test_top_indices_equal_topk(V, k):
    torch.manual_seed(V + k)
    x = torch.randn(3, 7, V, dtype=torch.float64)
    x[0, 0, :k] += 10.0  # the whole top k in the first chunk
    x[0, 1, -1] += 10.0  # the best entry in the tail (or the last chunk)
    x[1, 2, ::64] += 10.0  # one top entry per chunk
    assert V // 64 >= 16 * k  # the chunked path is taken
    torch.testing.assert_close(top_indices(x, k), x.topk(k, -1).indices, rtol=0, atol=0)


def test_top_indices_falls_back_to_topk_for_short_rows():
    x = torch.randn(4, 300)
    torch.testing.assert_close(top_indices(x, 20), x.topk(20, -1).indices, rtol=0, atol=0)


def test_embedding_rows_gradient_is_added_into_the_dense_one():
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(50, 8))
    f, ids = torch.randn(5, 8), torch.tensor([[3, 3, 7], [0, 49, 3]])
    dz, dr = torch.randn(5, 50), torch.randn(2, 3, 8)
    ((f @ w.T) * dz).sum().add((embedding_rows(w, ids) * dr).sum()).backward()
    assert w.grad.layout == torch.strided
    assert torch.autograd.grad(embedding_rows(w, ids).sum(), w)[0].is_sparse  # no (50, 8) buffer of its own
    want = dz.T @ f + torch.zeros(50, 8).index_add_(0, ids.flatten(), dr.flatten(0, 1))
    torch.testing.assert_close(w.grad, want)
    frozen = torch.randn(50, 8)
    torch.testing.assert_close(embedding_rows(frozen, ids), F.embedding(ids, frozen))


def test_large_vocabulary_rings_train_with_a_dense_gradient():
    """A vocabulary long enough for the chunked top-k: the ring candidates are torch.topk's (padding id skipped)
    and the head's training step leaves dense gradients that match the full-distribution loss's."""
    torch.manual_seed(1)
    V, d = 5000, 16
    head = dynamic_head(d, V, context=True, local=True, reranker_sizes=(3,), pad_id=0)
    with torch.no_grad():
        for p in head.parameters():
            p.add_(0.1 * torch.randn_like(p))
    logits = torch.randn(2, 4, V)
    logits[0, 0, 0] = 100.0  # the padding id ranks first
    want = logits.masked_fill(torch.arange(V) == 0, float("-inf")).topk(3, -1).indices
    torch.testing.assert_close(head.dynamic.top_ids(logits, 3).sort(-1).values, want.sort(-1).values, rtol=0, atol=0)

    out, ids = BackboneOutput(torch.randn(2, 4, d)), torch.randint(0, V, (2, 4))
    tgt = torch.randint(1, V, (2, 4))
    head(out, ids, targets=tgt).target_log_probs.sum().backward()
    got = [p.grad.clone() for p in head.parameters()]
    head.zero_grad(set_to_none=True)
    head(out, ids).log_probs().gather(-1, tgt[..., None]).sum().backward()
    for g, p in zip(got, head.parameters(), strict=True):
        assert g.layout == torch.strided
        torch.testing.assert_close(g, p.grad, atol=1e-5, rtol=1e-4)


def test_in_context_pairwise_and_table_agree_with_a_loop():
    """Duplicated context words with the mask on for one occurrence only, both ways of testing membership."""
    from genfeat.heads.dynamic import in_context

    g = torch.Generator().manual_seed(3)
    V, B, P, S, m = 12, 2, 5, 6, 4
    ctx = torch.randint(0, V, (B, S), generator=g)
    ctx[:, 1] = ctx[:, 0]
    mask = torch.rand(B, P, S, generator=g) > 0.4
    mask[:, :, 0], mask[:, :, 1] = True, False
    cand = torch.randint(0, V, (B, P, m), generator=g)
    want = torch.tensor([[[any(bool(mask[b, p, s]) and int(ctx[b, s]) == int(cand[b, p, j]) for s in range(S))
                           for j in range(m)] for p in range(P)] for b in range(B)])
    assert want.any() and not want.all()
    for vocab in (V, m * S):  # m S > V: table; m S <= vocab: pairwise
        torch.testing.assert_close(in_context(cand, ctx, mask, vocab), want)


class _Recorder(torch.nn.Module):
    """A softmax head that records what the model passed it."""

    def __init__(self, needs: HeadNeeds, d: int, V: int):
        super().__init__()
        self.needs, self.inner, self.calls = needs, SoftmaxHead(d, V), []

    def forward(self, out, **kw):
        self.calls.append((out.all_hidden is not None, sorted(kw)))
        return self.inner(out, positions=kw.get("positions"))


@pytest.mark.parametrize("needs, want", [
    (HeadNeeds(), (False, [])),
    (HeadNeeds(all_hidden=True), (True, [])),
    (HeadNeeds(input_ids=True), (False, ["input_ids"])),
    (HeadNeeds(targets=True), (False, ["targets"])),
    (HeadNeeds(input_ids=True, targets=True, all_hidden=True), (True, ["input_ids", "targets"])),
])
def test_causal_lm_passes_exactly_what_the_head_declares(needs, want):
    """The head contract: CausalLM hands the head the inputs its `needs` name and nothing else (no probing)."""
    from genfeat.models.gpt import GPTConfig
    from genfeat.models.gpt.model import GPTDecoder
    from genfeat.models.lm import CausalLM

    bb = GPTDecoder(GPTConfig(vocab_size=11, n_layer=2, n_head=2, d_model=8, max_len=6, dropout=0.0))
    head = _Recorder(needs, 8, 11)
    ids = torch.randint(0, 11, (2, 5))
    CausalLM(bb, head)(ids, targets=ids)
    assert head.calls[-1] == want


def test_last_only_asks_for_one_position_when_the_head_can():
    from genfeat.models.gpt import GPTConfig
    from genfeat.models.gpt.model import GPTDecoder
    from genfeat.models.lm import CausalLM

    bb = GPTDecoder(GPTConfig(vocab_size=11, n_layer=1, n_head=2, d_model=8, max_len=6, dropout=0.0)).eval()
    ids = torch.randint(0, 11, (2, 5))
    with_pos, without = _Recorder(HeadNeeds(positions=True), 8, 11), _Recorder(HeadNeeds(), 8, 11)
    without.inner.load_state_dict(with_pos.inner.state_dict())
    a, _ = CausalLM(bb, with_pos)(ids, last_only=True)
    b, _ = CausalLM(bb, without)(ids, last_only=True)
    assert with_pos.calls[-1] == (False, ["positions"]) and without.calls[-1] == (False, [])
    torch.testing.assert_close(a.log_probs(), b.log_probs())
    assert a.log_probs().shape == (2, 1, 11)


def test_a_head_without_needs_is_refused():
    from genfeat.models.lm import CausalLM

    class Bare(torch.nn.Module):
        def forward(self, out, **kw):
            return out

    with pytest.raises(TypeError, match="HeadNeeds"):
        CausalLM(torch.nn.Identity(), Bare())


def test_a_backbone_declares_what_it_offers():
    """The backbone half of the contract: CausalLM refuses a backbone without `offers`; the two decoders declare
    their memory (GPT's cache, Transformer-XL's recurrent memory with its ext_len), which decides what generation
    starts from."""
    from genfeat.models.gpt import GPTConfig, GPTDecoder
    from genfeat.models.lm import CausalLM
    from genfeat.models.transformer_xl import TransformerXL, TXLConfig
    from genfeat.nn.outputs import BackboneOffers

    with pytest.raises(TypeError, match="BackboneOffers"):
        CausalLM(torch.nn.Identity(), SoftmaxHead(8, 11))
    gpt = GPTDecoder(GPTConfig(vocab_size=11, n_layer=1, n_head=2, d_model=8, max_len=6, dropout=0.0))
    txl = TransformerXL(TXLConfig(vocab_size=11, n_layer=1, d_model=8, n_head=2, d_head=4, d_inner=16, tgt_len=4,
                                  mem_len=4, ext_len=1))
    assert gpt.offers == BackboneOffers(memory="cache", positions=True)
    assert txl.offers == BackboneOffers("recurrent", ext_len=1)
    assert CausalLM(gpt, SoftmaxHead(8, 11)).generation_memory() == ()
    with pytest.raises(ValueError, match="memory must be"):
        BackboneOffers(memory="kv")


@pytest.mark.parametrize("name", list(HEADS))
def test_every_named_head_declares_what_it_reads(name):
    """Registry heads: Mi / DOC / Rs2 ask for the lower layers, C / L / R / pointers for the ids, only C for the
    memory's ids."""
    cfg = HEADS[name]
    if cfg.stage2_candidates:
        pytest.skip("the two-stage reranker is built on the GPT decoder (tests/heads/test_two_stage.py)")
    needs = build_head(cfg, 8, 600, None, pad_id=0).needs
    assert needs.all_hidden == (cfg.multi_input or cfg.doc)
    assert needs.input_ids == (cfg.context or cfg.local or bool(cfg.reranker_sizes) or cfg.kind == "pointer")
    assert needs.memory_ids == cfg.context
