"""Static multi-facet heads (spec multi-facet-softmax.md §4): distributions, reductions to softmax, partition
bookkeeping, the Mi window, causality on both backbones, gradients, and Table 2.1's parameter counts."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from genfeat.heads.doc import DOCHead
from genfeat.heads.facets import MultiInput
from genfeat.heads.multi_facet import MultiFacetSoftmax
from genfeat.heads.partitions import partition_product
from genfeat.heads.softmax import SoftmaxHead
from genfeat.models.gpt import GPTConfig
from genfeat.models.gpt.model import GPTDecoder
from genfeat.models.lm import CausalLM
from genfeat.models.transformer_xl import TransformerXL, TXLConfig
from genfeat.nn.outputs import BackboneOutput

D, V, B, T = 16, 37, 2, 7
CONFIGS = {
    "softmax": {}, "sigsoftmax": {"sigsoftmax": True}, "softmax+mi": {"multi_input": True},
    "softmax+mp": {"num_partitions": 4}, "mos3": {"num_softmax": 3}, "mos4": {"num_softmax": 4}, "doc": {"doc": True},
    "mfs-mp": {"num_softmax": 3, "multi_input": True}, "mfs-mi": {"num_softmax": 3, "num_partitions": 4},
    "mfs": {"num_softmax": 3, "num_partitions": 4, "multi_input": True},
}


def facet_head(d: int, v: int, tied=None, doc: bool = False, **kw):
    """The Table 2.1 heads by their constructor options (DOC is its own class)."""
    return DOCHead(d, v, tied, bias=kw.get("bias", False)) if doc else MultiFacetSoftmax(d, v, tied, **kw)


def backbone_out(seed: int = 0, layers: int = 4) -> BackboneOutput:
    g = torch.Generator().manual_seed(seed)
    all_h = tuple(torch.randn(B, T, D, generator=g) for _ in range(layers))
    return BackboneOutput(hidden=torch.randn(B, T, D, generator=g), all_hidden=all_h)


def scramble(head: torch.nn.Module, seed: int = 1) -> None:
    """Move every parameter away from its (identity) initialisation."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in head.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.3)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_head_is_a_distribution(name):
    head = facet_head(D, V, **CONFIGS[name])
    scramble(head)
    logp = head(backbone_out()).log_probs()
    assert logp.shape == (B, T, V)
    torch.testing.assert_close(logp.exp().sum(-1), torch.ones(B, T))


@pytest.mark.parametrize("name", ["softmax", "softmax+mp", "mos3", "doc", "mfs"])
def test_at_initialisation_every_head_is_the_plain_softmax(name):
    """Identity facets: f_k = h^M for every facet, a mixture of identical softmaxes is that softmax."""
    torch.manual_seed(0)
    head = facet_head(D, V, init_noise=0.0, **CONFIGS[name])
    out = backbone_out()
    plain = torch.log_softmax(out.hidden @ head.weight.T, -1)
    if name == "doc":  # DOC's facets read three different layers: equal only if the layers are equal
        out = BackboneOutput(out.hidden, all_hidden=(out.hidden,) * 3)
    torch.testing.assert_close(head(out).log_probs(), plain, atol=1e-5, rtol=1e-5)


def test_k1_reduces_to_softmax_head_with_the_same_facet():
    head, ref = facet_head(D, V, bias=True), SoftmaxHead(D, V, bias=True, facet_proj=True)
    scramble(head)
    ref.load_state_dict({"weight": head.weight, "bias": head.bias, "facet.weight": head.facets[0].weight,
                         "facet.bias": head.facets[0].bias})
    out = backbone_out()
    torch.testing.assert_close(head(out).scores, ref(out).scores)


def test_mos_matches_the_mixture_formula():
    head = facet_head(D, V, num_softmax=3)
    scramble(head)
    out = backbone_out()
    h = out.hidden
    pi = torch.softmax(head.prior(h), -1)
    p = sum(pi[..., k:k + 1] * torch.softmax(head.facets[k](h) @ head.weight.T, -1) for k in range(3))
    torch.testing.assert_close(head(out).log_probs(), p.log(), atol=1e-5, rtol=1e-5)


def test_mos_with_multiple_input_states_matches_eq_2_3():
    """MoS + Mi: q (Eq. 2.3) = h^M ⊕ GELU(L^h(window x layers)); every facet and the prior read q (spec §3.3)."""
    head = facet_head(D, V, num_softmax=3, multi_input=True)
    scramble(head)
    out = backbone_out()
    layers = [out.hidden, out.all_hidden[-2], out.all_hidden[-3]]
    pad = [F.pad(h, (0, 0, 2, 0)) for h in layers]  # zeros before the start
    x = torch.cat([h[:, 2 - i: 2 - i + T] for h in pad for i in range(3)], -1)  # (B, T, 9D)
    q = torch.cat([out.hidden, F.gelu(head.multi_input.proj(x), approximate="tanh")], -1)  # (B, T, 2D)
    pi = torch.softmax(q @ head.prior.weight.T + head.prior.bias, -1)
    _, log_prior = head.facet_logits(out)
    torch.testing.assert_close(log_prior, pi.log(), atol=1e-5, rtol=1e-5)
    p = sum(pi[..., k:k + 1] * torch.softmax(head.facets[k](q) @ head.weight.T, -1) for k in range(3))
    torch.testing.assert_close(head(out).log_probs(), p.log(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("J", "bias"), [(4, True), (4, False), (37, False), (40, True)])  # V = 37: a last row of 1
def test_partitions_score_each_word_with_its_own_facet(J, bias):
    head = facet_head(D, V, num_partitions=J, bias=bias)
    scramble(head)
    out = backbone_out()
    logits = head(out).scores
    for x in range(V):  # brute force: word x uses facet x mod J
        f = head.facets[x % J](out.hidden)
        torch.testing.assert_close(logits[..., x], f @ head.weight[x] + (head.bias[x] if bias else 0))


@pytest.mark.parametrize(("V_", "J"), [(12, 4), (14, 4), (3, 5)])  # rows of J words: complete, 2 over, none
def test_partition_product_values_and_gradients(V_, J):
    """Partition-major logits of the strided GEMMs (word x < J·(V // J) at (x mod J)·n + x // J, the rest at x)
    against a loop over words, and gradcheck of both backward products."""
    torch.manual_seed(V_ + J)
    f = torch.randn(J, 5, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(V_, 3, dtype=torch.float64, requires_grad=True)
    z = partition_product(f, w)
    n = V_ // J
    for x in range(V_):
        col = (x % J) * n + x // J if x < J * n else x
        torch.testing.assert_close(z[:, col], f[x % J] @ w[x])
    assert torch.autograd.gradcheck(partition_product, (f, w))


def test_sigsoftmax_formula():
    head = facet_head(D, V, sigsoftmax=True)
    scramble(head)
    out = backbone_out()
    z = head.facets[0](out.hidden) @ head.weight.T
    p = torch.exp(z) * torch.sigmoid(z)
    torch.testing.assert_close(head(out).log_probs(), (p / p.sum(-1, keepdim=True)).log(), atol=1e-5, rtol=1e-5)


def test_multi_input_window_and_layers():
    mi = MultiInput(D, window=3, depth=3)
    out = backbone_out()
    q = mi(out)
    assert q.shape == (B, T, 2 * D)
    torch.testing.assert_close(q[..., :D], out.hidden)
    layers = [out.hidden, out.all_hidden[-2], out.all_hidden[-3]]
    t = 4  # by hand: per layer from the top, [h_t, h_{t-1}, h_{t-2}]
    x = torch.cat([h[:, t - i] for h in layers for i in range(3)], -1)
    torch.testing.assert_close(q[:, t, D:], F.gelu(mi.proj(x), approximate="tanh"))
    x0 = torch.cat([h[:, 0] if i == 0 else torch.zeros(B, D) for h in layers for i in range(3)], -1)
    torch.testing.assert_close(q[:, 0, D:], F.gelu(mi.proj(x0), approximate="tanh"))  # zeros before the start
    changed = BackboneOutput(out.hidden, tuple(h.clone() for h in out.all_hidden))
    changed.all_hidden[0][:, 1] += 1.0  # not among the top 3 layers
    changed.all_hidden[-3][:, 1] += 1.0  # layer M-2 at position 1: reaches q_1..q_3 only
    diff = (mi(changed) - q).abs().amax((0, 2))
    assert (diff[1:4] > 0).all() and (diff[[0, 4, 5, 6]] == 0).all()
    with pytest.raises(ValueError, match="output_all_hidden"):
        mi(BackboneOutput(out.hidden))


def test_doc_reads_one_layer_per_facet():
    head = facet_head(D, V, doc=True)
    scramble(head)
    out = backbone_out()
    base = head(out).log_probs()
    for idx in (-3, -2):
        hs = list(out.all_hidden)
        hs[idx] = hs[idx] + 1.0
        assert not torch.allclose(head(BackboneOutput(out.hidden, tuple(hs))).log_probs(), base)
    hs = list(out.all_hidden)
    hs[-1] = hs[-1] + 1.0  # block M's pre-LN output: DOC's top facet reads BackboneOutput.hidden instead
    torch.testing.assert_close(head(BackboneOutput(out.hidden, tuple(hs))).log_probs(), base)


@pytest.mark.parametrize("name", ["mfs", "doc", "mos3"])
def test_gradients_reach_every_facet_and_prior(name):
    head = facet_head(D, V, **CONFIGS[name])
    scramble(head)
    out = backbone_out()
    targets = torch.randint(0, V, (B, T))
    F.nll_loss(head(out).log_probs().reshape(-1, V), targets.reshape(-1)).backward()
    for pname, p in head.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, pname


@pytest.mark.parametrize("backbone", ["gpt", "txl"])
def test_causal_on_both_backbones(backbone):
    torch.manual_seed(0)
    if backbone == "gpt":
        bb = GPTDecoder(GPTConfig(vocab_size=V, n_layer=3, n_head=2, d_model=D, max_len=16, dropout=0.0))
        emb = bb.tok_emb
    else:
        bb = TransformerXL(TXLConfig(vocab_size=V, n_layer=3, d_model=D, n_head=2, d_head=8, d_inner=32, tgt_len=T,
                                     mem_len=T, dropout=0.0, dropatt=0.0))
        emb = bb.word_emb.emb_layers[0]
    lm = CausalLM(bb, facet_head(D, V, emb, num_softmax=3, num_partitions=4, multi_input=True)).eval()
    scramble(lm.head)
    ids = torch.randint(0, V, (B, T))
    logp = lm(ids)[0].log_probs()
    ids2 = ids.clone()
    ids2[:, 5] = (ids2[:, 5] + 1) % V
    logp2 = lm(ids2)[0].log_probs()
    torch.testing.assert_close(logp[:, :5], logp2[:, :5])  # a later token never changes earlier predictions
    assert not torch.allclose(logp[:, 5:], logp2[:, 5:])
    if backbone == "txl":  # and the head runs segment after segment with memory
        head_out, out = lm(ids)
        head_out2, _ = lm(ids, mems=out.mems)
        torch.testing.assert_close(head_out2.log_probs().exp().sum(-1), torch.ones(B, T))


# Table 2.1 head sizes for GPT-2 Small (D = 768): total minus body (124,439,808) minus the untied output copy
# (50257 * 768), as derived in spec multi-facet-softmax.md §8.2
TABLE_2_1_SMALL = {"softmax": 590_592, "sigsoftmax": 590_592, "softmax+mi": 6_489_600, "softmax+mp": 2_362_368,
                   "mos4": 2_365_444, "mos3": 1_774_083, "doc": 1_778_691, "mfs-mp": 8_855_043,
                   "mfs-mi": 3_545_859, "mfs": 12_396_291}


@pytest.mark.parametrize("name", list(TABLE_2_1_SMALL))
def test_head_parameter_counts_match_table_2_1(name):
    emb = torch.nn.Embedding(3, 768)  # the vocabulary matrix is the (tied) output copy, not a head parameter
    head = facet_head(768, 3, emb, **CONFIGS[name])
    own = sum(p.numel() for n, p in head.named_parameters() if p is not emb.weight and n != "weight")
    assert own == TABLE_2_1_SMALL[name]


def test_doc_pins_which_layer_feeds_which_facet():
    """Facet k reads layer M-3+k (k = 1..3): perturbing one layer moves that facet's softmax only, so a saved DOC
    checkpoint loads its facets onto the layers they were trained on."""
    head = facet_head(D, V, doc=True)
    scramble(head)
    out = backbone_out()
    base = torch.stack(head.facet_logits(out)[0], -2)  # (B, T, 3, V): one softmax's logits per facet
    for facet, idx in enumerate((-3, -2)):
        hs = list(out.all_hidden)
        hs[idx] = hs[idx] + 1.0
        moved = (torch.stack(head.facet_logits(BackboneOutput(out.hidden, tuple(hs)))[0], -2) - base).abs()
        moved = moved.amax((0, 1, 3))
        assert moved[facet] > 1e-4 and torch.cat([moved[:facet], moved[facet + 1:]]).max() == 0
    moved = (torch.stack(head.facet_logits(BackboneOutput(out.hidden + 1.0, out.all_hidden))[0], -2) - base).abs()
    assert moved.amax((0, 1, 3)).tolist()[:2] == [0.0, 0.0] and moved[..., 2, :].max() > 1e-4
