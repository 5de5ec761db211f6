"""Dynamic partitioning (spec multi-facet-softmax.md §5, §12): C, L, R rings, CLR against a brute-force
loop over positions, context membership, padding, memory ids, causality and initial equivalence."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from genfeat.heads.dynamic import DynamicSpec
from genfeat.heads.multi_facet import MultiFacetSoftmax
from genfeat.models.gpt import GPTConfig
from genfeat.models.gpt.model import GPTDecoder
from genfeat.models.lm import CausalLM
from genfeat.nn.outputs import BackboneOutput
from tests.heads.test_multi_facet import B, D, T, V, backbone_out, scramble

DYNAMIC = {
    "C": {"context": True}, "L": {"local": True}, "CL": {"context": True, "local": True},
    "R:5": {"reranker_sizes": (5,)}, "R:3,8,20": {"reranker_sizes": (20, 3, 8)},
    "CLR:4,9": {"context": True, "local": True, "reranker_sizes": (4, 9)},
    "CLR+Mi": {"context": True, "local": True, "reranker_sizes": (6,), "multi_input": True},
    "MoS+CLR": {"context": True, "local": True, "reranker_sizes": (6,), "num_softmax": 3},
    "C add": {"context": True, "merge": "add"}, "CLR add": {"context": True, "local": True,
                                                            "reranker_sizes": (6,), "merge": "add"},
    # R V > 16 m: the ring scores its candidates' gathered rows instead of a product with every word
    "R:2": {"reranker_sizes": (2,)}, "CLR:2 add": {"context": True, "local": True, "reranker_sizes": (2,),
                                                   "merge": "add"},
}


_SPEC = {"context": "context", "local": "local", "reranker_sizes": "reranker_sizes", "merge": "merge",
         "pad_id": "pad_id", "context_includes_current": "includes_current"}


def dynamic_head(d: int, v: int, tied=None, **kw) -> MultiFacetSoftmax:
    """MultiFacetSoftmax with the dynamic-partition options given flat, as HeadConfig names them."""
    spec = DynamicSpec(**{_SPEC[k]: kw.pop(k) for k in list(kw) if k in _SPEC})
    return MultiFacetSoftmax(d, v, tied, dynamic=spec, **kw)


def ids_with_repeats(seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (B, T), generator=g)
    ids[:, 4] = ids[:, 1]  # a repeated word
    return ids


@pytest.mark.parametrize("name", list(DYNAMIC))
def test_dynamic_heads_are_distributions(name):
    head = dynamic_head(D, V, pad_id=0, **DYNAMIC[name])
    scramble(head)
    ids = ids_with_repeats()
    ids[0, :2] = 0  # padding
    logp = head(backbone_out(), ids).log_probs()
    torch.testing.assert_close(torch.logsumexp(logp, -1), torch.zeros(B, T), atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", list(DYNAMIC))
def test_dynamic_heads_start_as_the_softmax(name):
    head = dynamic_head(D, V, init_noise=0.0, **DYNAMIC[name])
    out = backbone_out()
    plain = torch.log_softmax(out.hidden @ head.weight.T, -1)
    torch.testing.assert_close(head(out, ids_with_repeats()).log_probs(), plain, atol=1e-5, rtol=1e-5)


def brute_force_first_softmax(head: MultiFacetSoftmax, q: torch.Tensor, ids: torch.Tensor,
                              pad_id: int | None = None) -> torch.Tensor:
    """Eqs. 2.7-2.11 position by position with Python loops, out of place (differentiable: the gradient oracle);
    assign mode, or add mode (every facet's logit added to the current one); the padding id never in a ring."""
    W = head.weight
    add = head.dynamic.spec.merge == "add"
    rows = []
    keys = head.dynamic.f_key(q) if head.dynamic.f_local is not None else None
    for b in range(B):
        for t in range(T):
            ell = head.facets[0](q[b, t]) @ W.T
            rings = zip(head.dynamic.reranker_sizes, head.dynamic.f_rerank, strict=True)
            for n, layer in sorted(rings, key=lambda p: -p[0]):
                ranked = ell if pad_id is None else ell.masked_fill(torch.arange(V) == pad_id, float("-inf"))
                top = ranked.topk(n).indices
                ell = ell.clone()
                ell[top] = (ell[top] if add else 0) + layer(q[b, t]) @ W[top].T
            last = t if head.dynamic.spec.includes_current else t - 1
            for x in set(ids[b, : last + 1].tolist()) - {pad_id}:
                occ = [i for i in range(last + 1) if ids[b, i] == x]
                value = ell[x] if head.dynamic.f_context is None or add else 0
                if head.dynamic.f_context is not None:
                    value = value + head.dynamic.f_context(q[b, t]) @ W[x]
                if head.dynamic.f_local is not None:
                    value = value + torch.stack([head.dynamic.f_local(q[b, t]) @ keys[b, i] for i in occ]).mean()
                ell = ell.clone()
                ell[x] = value
            rows.append(ell)
    return torch.stack(rows).view(B, T, V)


@pytest.mark.parametrize("name", ["C", "L", "CL", "R:3,8,20", "CLR:4,9"])
@pytest.mark.parametrize("current", [True, False])
def test_matches_the_equations_position_by_position(name, current):
    head = dynamic_head(D, V, context_includes_current=current, **DYNAMIC[name])
    scramble(head)
    out, ids = backbone_out(), ids_with_repeats()
    got = head.facet_logits(out, ids)[0][0]
    torch.testing.assert_close(got, brute_force_first_softmax(head, out.hidden, ids), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["C add", "CLR add", "L", "R:3,8,20", "CLR:4,9", "R:2", "CLR:2 add"])
def test_values_and_gradients_match_the_loops(name):
    """The sparse writes (ring and context changes added, base logits recomputed on the written words) give the
    loops' values and the gradients of the loops' out-of-place assignments, for every parameter and the states;
    padding ids in the context, a word that is both in a ring and in the context."""
    torch.manual_seed(0)
    head = dynamic_head(D, V, pad_id=0, **{"reranker_sizes": (6,)} | DYNAMIC[name])
    scramble(head)
    q = backbone_out().hidden.detach().requires_grad_()
    ids = ids_with_repeats(2)
    ids[1, :3] = 0
    weights = torch.randn(B, T, V)

    def grads(logits):
        return torch.autograd.grad((logits * weights).sum(), [q, *head.parameters()], allow_unused=True)

    got = head.facet_logits(BackboneOutput(q), ids)[0][0]
    want = brute_force_first_softmax(head, q, ids, pad_id=0)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    for g, w in zip(grads(got), grads(want), strict=True):
        if w is None:
            assert g is None or not g.any()
        else:
            torch.testing.assert_close(g, w, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ["R:3,8,20", "CLR:4,9"])
def test_rings_skip_the_padding_id_even_when_it_ranks_first(name):
    head = dynamic_head(D, V, pad_id=2, **DYNAMIC[name])
    scramble(head)
    out, ids = backbone_out(), ids_with_repeats(1)
    ids[ids == 2] = 5  # the padding id is not in the context
    with torch.no_grad():
        head.weight[2] = 8 * out.hidden.mean((0, 1)) / out.hidden.mean((0, 1)).norm()  # padding logit on top
    assert (head.facets[0](out.hidden) @ head.weight.T).argmax(-1).eq(2).float().mean() > 0.5
    got = head.facet_logits(out, ids)[0][0]
    torch.testing.assert_close(got, brute_force_first_softmax(head, out.hidden, ids, pad_id=2), atol=1e-5, rtol=1e-5)


def test_context_membership_current_token_and_padding():
    head = dynamic_head(D, V, context=True, pad_id=3)
    scramble(head)
    out = backbone_out()
    ids = torch.tensor([[5, 3, 9, 3, 11, 5, 12]] * B)
    base = head.facets[0](out.hidden) @ head.weight.T
    ctx = head.dynamic.f_context(out.hidden) @ head.weight.T
    for current in (True, False):
        head.dynamic.spec = dataclasses.replace(head.dynamic.spec, includes_current=current)
        got = head.facet_logits(out, ids)[0][0]
        for t in range(T):
            seen = set(ids[0, : t + 1 if current else t].tolist()) - {3}  # the pad id never counts
            for x in range(V):
                want = ctx[:, t, x] if x in seen else base[:, t, x]
                torch.testing.assert_close(got[:, t, x], want, atol=1e-5, rtol=1e-5)


def test_memory_ids_count_for_the_context_partition():
    head = dynamic_head(D, V, context=True, local=True)
    scramble(head)
    out, ids = backbone_out(), torch.full((B, T), 2)
    mem = torch.full((B, 4), 7)
    with_mem = head.facet_logits(out, ids, mem_ids=mem)[0][0]
    without = head.facet_logits(out, ids)[0][0]
    ctx = head.dynamic.f_context(out.hidden) @ head.weight.T
    torch.testing.assert_close(with_mem[..., 7], ctx[..., 7])  # only in memory: C logit, no local term
    assert not torch.allclose(without[..., 7], ctx[..., 7])
    keep = [x for x in range(V) if x != 7]
    torch.testing.assert_close(with_mem[..., keep], without[..., keep])


def test_reranker_sizes_are_checked():
    with pytest.raises(ValueError, match="reranker sizes"):
        dynamic_head(D, V, reranker_sizes=(V + 1,))
    with pytest.raises(ValueError, match="reranker sizes"):
        dynamic_head(D, V, reranker_sizes=(5, 5))
    with pytest.raises(ValueError, match="input ids"):
        dynamic_head(D, V, context=True)(backbone_out())


def test_gradients_reach_every_dynamic_facet():
    head = dynamic_head(D, V, context=True, local=True, reranker_sizes=(4, 9), num_softmax=2, multi_input=True)
    scramble(head)
    out, ids = backbone_out(), ids_with_repeats()
    F.nll_loss(head(out, ids).log_probs().reshape(-1, V), ids.roll(-1, 1).reshape(-1)).backward()
    for name, p in head.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_clr_is_causal_in_a_language_model():
    torch.manual_seed(0)
    bb = GPTDecoder(GPTConfig(vocab_size=V, n_layer=3, n_head=2, d_model=D, max_len=16, dropout=0.0))
    lm = CausalLM(bb, dynamic_head(D, V, bb.tok_emb, context=True, local=True, reranker_sizes=(5,),
                                        multi_input=True)).eval()
    scramble(lm.head)
    ids = ids_with_repeats()
    logp = lm(ids)[0].log_probs()
    ids2 = ids.clone()
    ids2[:, 5] = (ids2[:, 5] + 3) % V
    logp2 = lm(ids2)[0].log_probs()
    torch.testing.assert_close(logp[:, :5], logp2[:, :5])
    assert not torch.allclose(logp[:, 5], logp2[:, 5])


def test_context_partition_sees_the_transformer_xl_memory():
    from genfeat.heads.config import HeadConfig
    from genfeat.models.transformer_xl import TXLConfig, build_txl_lm

    torch.manual_seed(0)
    lm = build_txl_lm(TXLConfig(vocab_size=V, n_layer=2, d_model=D, n_head=2, d_head=8, d_inner=32, tgt_len=6,
                                mem_len=6, dropout=0.0, head=HeadConfig(kind="multi_facet", context=True))).eval()
    scramble(lm.head)
    seg1 = torch.tensor([[1, 2, 30, 3, 4, 5]] * B)
    seg2 = torch.tensor([[6, 7, 8, 9, 10, 11]] * B)
    _, out1 = lm(seg1)
    assert torch.equal(out1.mem_ids, seg1) and out1.carry()["mem_ids"] is out1.mem_ids  # ids beside the memory
    head_out, out2 = lm(seg2, **out1.carry())
    bb = lm.backbone(seg2, mems=out1.mems, output_all_hidden=False)
    f_c = lm.head.dynamic.f_context(bb.hidden)
    got = head_out.scores
    torch.testing.assert_close(got[..., 30], f_c @ lm.head.weight[30])  # only in the previous segment
    assert torch.equal(out2.mem_ids, seg2) and all(m.is_floating_point() for m in out2.mems)
    no_mem, _ = lm(seg2)
    assert not torch.allclose(no_mem.scores[..., 30], f_c @ lm.head.weight[30])


def test_memory_loss_carries_the_memory_ids_and_resumes_with_them():
    """Transformer-XL training with a context partition: MemoryLMLoss hands the next segment the memory and its
    token ids (`carry`), and its checkpointed state restores both (a resumed loss gives the same next loss)."""
    from genfeat.heads.config import HeadConfig
    from genfeat.losses.nll import nll
    from genfeat.models.transformer_xl import TXLConfig, build_txl_lm
    from genfeat.tasks.language_modeling import MemoryLMLoss

    torch.manual_seed(0)
    lm = build_txl_lm(TXLConfig(vocab_size=V, n_layer=2, d_model=D, n_head=2, d_head=8, d_inner=32, tgt_len=6,
                                mem_len=6, dropout=0.0, head=HeadConfig(kind="multi_facet", context=True))).eval()
    scramble(lm.head)
    seg1, seg2 = torch.randint(0, V, (B, 6)), torch.randint(0, V, (B, 6))
    y1, y2 = seg1.roll(1, 1), seg2.roll(1, 1)
    loss = MemoryLMLoss()
    loss(lm, (seg1, y1))
    assert torch.equal(loss.memory["mem_ids"], seg1)
    _, bb = lm(seg1, targets=y1)
    want = nll(lm(seg2, targets=y2, **bb.carry())[0], y2)
    resumed = MemoryLMLoss()
    resumed.load_state_dict(loss.state_dict())
    torch.testing.assert_close(resumed(lm, (seg2, y2))[0], want)
    torch.testing.assert_close(loss(lm, (seg2, y2))[0], want)
    without_ids = nll(lm(seg2, targets=y2, mems=bb.mems)[0], y2)
    assert (want - without_ids).abs() > 1e-5


def test_generation_carries_the_memory_ids():
    """`sample` on Transformer-XL with a context partition continues each step from the last output's memory and
    its ids: greedy decoding equals a loop that calls the model on one token at a time with `carry()`."""
    from genfeat.heads.config import HeadConfig
    from genfeat.models.sampling import sample
    from genfeat.models.transformer_xl import TXLConfig, build_txl_lm

    torch.manual_seed(0)
    lm = build_txl_lm(TXLConfig(vocab_size=V, n_layer=2, d_model=D, n_head=2, d_head=8, d_inner=32, tgt_len=6,
                                mem_len=6, dropout=0.0, head=HeadConfig(kind="multi_facet", context=True))).eval()
    scramble(lm.head)
    prompt = torch.tensor([[1, 2, 30, 3, 4, 5]] * B)
    got = sample(lm, prompt, 5, top_k=1)
    ids = prompt
    with torch.no_grad():
        head_out, out = lm(ids, last_only=True, mems=())
        for _ in range(5):
            ids = torch.cat([ids, head_out.log_probs()[:, -1].argmax(-1, keepdim=True)], 1)
            head_out, out = lm(ids[:, -1:], last_only=True, **out.carry())
    assert torch.equal(got, ids)
    calls = []
    forward = lm.forward

    def recording(*args, **kwargs):
        calls.append(set(kwargs))
        return forward(*args, **kwargs)
    lm.forward = recording
    sample(lm, prompt, 3, top_k=1)
    assert len(calls) == 3 and all({"mems", "mem_ids"} <= c for c in calls[1:])  # each step gets the ids too
