"""Multi-CLS BERT's per-facet mechanism and its pretraining data, each piece on its own (thesis C §5.2; spec
multi-cls-bert.md §3-§6): facet k's inserted map, head and pooler weight move facet k only; the heads are
LayerNorm(GELU(W h)); the sentence-order head reads the encoder's facet states; the pretraining masker's
80 / 10 / 10 split; TF-IDF targets against a hand computation; triples gathered from 3 x budget tokens; and ECE
against torchmetrics' binned calibration error."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from genfeat.data.multi_cls import TripleBatches
from genfeat.metrics.calibration import ece
from genfeat.models.bert import BertConfig, BertModel
from genfeat.models.multi_cls import FacetPooler, MultiCLSConfig, MultiCLSEncoder, MultiCLSPretrainer
from genfeat.models.multi_cls.pretrain import FacetHeads
from tests.data.test_multi_cls_data import WORDS, _docs, _tokenizer

TINY = BertConfig(vocab_size=120, d_model=16, n_layer=4, n_head=2, d_inner=32, max_len=32, dropout=0.0,
                  attn_dropout=0.0)
K = 3


def _encoder(**kw) -> MultiCLSEncoder:
    torch.manual_seed(0)
    return MultiCLSEncoder(BertModel(TINY), MultiCLSConfig(k=K, **kw)).double().eval()


def _ids(b=2, t=8):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(104, 120, (b, t), generator=g)
    ids[:, 0], ids[:, -1] = 101, 102
    return ids


@pytest.mark.parametrize("bias", [False, True])
def test_each_facet_has_its_own_inserted_map(bias):
    """Perturbing L_{l,k} changes, in the states right after block l, facet k's position only."""
    enc = _encoder(insert_bias=bias)
    ids = _ids()
    layer = enc.insert_after[0]
    base = enc(ids, output_all_hidden=True).all_hidden[layer]
    delta = 0.5 * torch.randn(16, 16, dtype=torch.float64)
    for k in range(K):
        with torch.no_grad():
            enc.inserted[str(layer)][k] += delta
        moved = (enc(ids, output_all_hidden=True).all_hidden[layer] - base).abs().amax((0, 2))  # (T + K,)
        with torch.no_grad():
            enc.inserted[str(layer)][k] -= delta
        assert moved[1 + k] > 1e-3 and moved[torch.arange(len(moved)) != 1 + k].max() < 1e-12, (k, moved)


def test_each_facet_head_has_its_own_weight_and_is_layernorm_of_gelu():
    torch.manual_seed(0)
    heads = FacetHeads(K, 16).double()
    with torch.no_grad():
        for ln in heads.norms:
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
    h = torch.randn(4, K, 16, dtype=torch.float64)
    c = heads(h)
    for k in range(K):  # c_k = LayerNorm_k(GELU(W_{O,k} h_k)), by hand
        ln = heads.norms[k]
        want = F.layer_norm(F.gelu(h[:, k] @ heads.weight[k].T), (16,), ln.weight, ln.bias, ln.eps)
        torch.testing.assert_close(c[:, k], want)
    for k in range(K):
        with torch.no_grad():
            heads.weight[k] += 0.3
        moved = (heads(h) - c).abs().amax((0, 2))
        with torch.no_grad():
            heads.weight[k] -= 0.3
        assert moved[k] > 1e-3 and moved[torch.arange(K) != k].max() < 1e-12


def test_each_pooler_weight_moves_its_own_facet_embedding_and_biases_start_at_zero():
    torch.manual_seed(0)
    pooler = FacetPooler(K, 16, aggregation="sum").double()
    assert pooler.bias is not None and float(pooler.bias.detach().abs().max()) == 0.0
    h = torch.randn(4, K, 16, dtype=torch.float64)
    e = pooler.facet_embeddings(h)
    for k in range(K):
        with torch.no_grad():
            pooler.weight[k] += 0.3
        moved = (pooler.facet_embeddings(h) - e).abs().amax((0, 2))
        with torch.no_grad():
            pooler.weight[k] -= 0.3
        assert moved[k] > 1e-3 and moved[torch.arange(K) != k].max() < 1e-12


def test_the_thesis_lambda_is_the_default():
    assert MultiCLSConfig().lam == 0.1  # thesis C §5.2.1, Eq. 5.2 (spec §5: λ = 0.1)


def _pretraining_batch(n=2, t=10):
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(104, 120, (3 * n, t), generator=g)
    ids[:, 0], ids[:, -1] = 101, 102
    labels = torch.full_like(ids, -100)
    labels[:, 2] = ids[:, 2]
    return {"input_ids": ids, "token_type_ids": torch.zeros_like(ids), "attention_mask": torch.ones_like(ids),
            "mlm_labels": labels, "tfidf": torch.rand(3 * n, t, generator=g) * 10,
            "so_labels": torch.tensor([0, 1] * (3 * n // 2))}


def test_sentence_order_head_reads_the_facet_states_not_the_heads():
    """L_SO is a function of the encoder's facet states: the MCQT heads' weights do not enter it."""
    pre = MultiCLSPretrainer(_encoder()).double()
    batch = _pretraining_batch()
    base = pre.losses(batch)
    with torch.no_grad():
        pre.facet_heads.weight.mul_(3.0).add_(0.1)
    moved = pre.losses(batch)
    assert float(moved["so"]) == pytest.approx(float(base["so"]), abs=1e-12)
    assert abs(float(moved["mcqt"]) - float(base["mcqt"])) > 1e-6


def test_mlm_corrupts_80_10_10():
    tk = _tokenizer()
    it = TripleBatches(_docs(n_docs=4, n_sents=60), tk, n_triples=16, budget=64, seed=4)
    mask = tk.token_to_id("[MASK]")
    kinds = np.zeros(3)  # [MASK], kept, another token
    for _ in range(25):
        b = next(it)
        sel = b["mlm_labels"] != -100
        got, want = b["input_ids"][sel], b["mlm_labels"][sel]
        kinds += [(got == mask).sum(), (got == want).sum(), ((got != mask) & (got != want)).sum()]
    share = kinds / kinds.sum()
    assert kinds.sum() > 5000
    # a random replacement can draw the original token (1 / vocab) or [MASK]: both negligible here
    np.testing.assert_allclose(share, [0.8, 0.1, 0.1], atol=0.02)


def test_tfidf_targets_by_hand():
    """tf = count in the document, idf = ln(N / df), min-max rescaled to [0, 10] within each sentence."""
    tk = _tokenizer()
    docs = [["alpha beta beta .", "gamma alpha .", "s1 .", "s2 .", "s3 .", "s4 ."],
            ["alpha gamma .", "delta delta .", "s1 .", "s2 .", "s3 .", "s4 ."],
            ["epsilon alpha .", "zeta .", "s1 .", "s2 .", "s3 .", "s4 ."]]
    it = TripleBatches(docs, tk, n_triples=1, budget=64, seed=0)
    df = {"alpha": 3, "beta": 1, "gamma": 2, ".": 3, "delta": 1, "epsilon": 1, "zeta": 1}
    tf0 = {"alpha": 2, "beta": 2, "gamma": 1, ".": 6}

    def scaled(v):
        v = np.asarray(v, dtype=np.float64)
        return 10 * (v - v.min()) / (v.max() - v.min()) if v.max() > v.min() else np.zeros_like(v)
    first = [tf0[w] * math.log(3 / df[w]) for w in ("alpha", "beta", "beta", ".")]
    np.testing.assert_allclose(it.tfidf[0][0], scaled(first), rtol=1e-5, atol=1e-5)
    second = [tf0[w] * math.log(3 / df[w]) for w in ("gamma", "alpha", ".")]
    np.testing.assert_allclose(it.tfidf[0][1], scaled(second), rtol=1e-5, atol=1e-5)
    delta = [2 * math.log(3 / 1), 2 * math.log(3 / 1), 2 * math.log(3 / 3)]  # "delta delta ." in document 1
    np.testing.assert_allclose(it.tfidf[1][1], scaled(delta), rtol=1e-5, atol=1e-5)


def test_triples_gather_about_three_budgets_of_text():
    """Many short sentences: a triple's six groups hold >= 3 x budget tokens, so its sequences come out near the
    budget instead of a third of it."""
    rng = np.random.default_rng(0)
    docs = [[" ".join(rng.choice(WORDS, 3)) + " ." for _ in range(300)] for _ in range(3)]
    it = TripleBatches(docs, _tokenizer(), n_triples=8, budget=40, seed=5)
    lengths = torch.cat([next(it)["attention_mask"].sum(1) for _ in range(6)]).double()
    assert lengths.mean() > 0.8 * 40 and lengths.max() <= 40


def test_ece_matches_torchmetrics():
    """Equal-width ECE (10 bins, weights |B| / N) against torchmetrics' multiclass L1 calibration error, with
    confidences at the bin edges and at exactly 1.0."""
    from torchmetrics.functional.classification import multiclass_calibration_error

    rng = np.random.default_rng(0)
    logits = rng.standard_normal((600, 4)) * rng.uniform(0.1, 4, (600, 1))
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    probs[:50] = np.eye(4)[rng.integers(0, 4, 50)]  # confidence exactly 1.0
    probs[50:60] = [0.7, 0.1, 0.1, 0.1]  # a bin edge
    labels = np.where(rng.random(600) < 0.7, probs.argmax(1), rng.integers(0, 4, 600))
    want = 100 * float(multiclass_calibration_error(torch.from_numpy(probs), torch.from_numpy(labels), num_classes=4,
                                                    n_bins=10, norm="l1"))
    assert ece(probs, labels) == pytest.approx(want, abs=1e-6)
    assert ece(probs[:50], labels[:50]) > 0  # the all-1.0 examples are binned, not dropped


def test_facet_token_check():
    from genfeat.errors import ConfigError
    from genfeat.models.multi_cls import check_facet_tokens

    names = {0: "[PAD]", 1: "[unused0]", 2: "[unused1]", 3: "cat", 101: "[CLS]"}
    check_facet_tokens(names.get, 1, 2, 101, torch.tensor([[101, 5, 102]]))
    with pytest.raises(ConfigError, match="not \\[unused2\\]"):
        check_facet_tokens(names.get, 1, 3)
    with pytest.raises(ConfigError, match="start with \\[CLS\\]"):
        check_facet_tokens(names.get, 1, 2, 101, torch.tensor([[101, 5, 102], [5, 101, 102]]))
