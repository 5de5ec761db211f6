"""The task layer is encoder-agnostic: its classifier and span extractor train on a Hugging Face BERT as they do
on genfeat's XLNet (whose fine-tuning models are these task models; tests/xlnet checks them against HF)."""

from __future__ import annotations

import pytest
import torch

from genfeat.api import HFBackbone
from genfeat.tasks.heads import SequenceClassifier, SequenceSummary, SpanExtractor


def _bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=30, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=16), add_pooling_layer=False)


def test_sequence_classifier_learns_on_a_bert_encoder():
    """Label = whether token 7 occurs; the [CLS]-pooled (pool="first") classifier fits it, padding masked."""
    torch.manual_seed(0)
    x = torch.randint(8, 30, (32, 10))
    y = torch.arange(32) % 2
    x[y == 1, 4] = 7
    mask = torch.ones_like(x)
    mask[::3, 8:] = 0  # some padded rows
    x[:, 0] = 1  # a [CLS] stand-in at position 0 of every row
    model = SequenceClassifier(HFBackbone(_bert()), 32, 2, dropout=0.0, pool="first")
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(60):
        loss = model.loss(model(x, torch.zeros_like(x), mask), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    assert (model(x, torch.zeros_like(x), mask).argmax(-1) == y).float().mean() == 1.0


def test_span_extractor_runs_on_a_bert_encoder():
    model = SpanExtractor(HFBackbone(_bert()), 32, start_n_top=3, end_n_top=2)
    x = torch.randint(1, 30, (2, 12))
    p_mask = torch.zeros_like(x)
    p_mask[:, :3] = 1  # the question: never part of an answer
    out = model(x, torch.zeros_like(x), torch.ones_like(x), p_mask, torch.zeros(2, dtype=torch.long),
                torch.tensor([4, 5]), torch.tensor([6, 5]), torch.tensor([0, 1]))
    out["loss"].backward()
    model.eval()
    beam = model(x, torch.zeros_like(x), torch.ones_like(x), p_mask, torch.zeros(2, dtype=torch.long))
    assert beam["start_top_index"].shape == (2, 3) and beam["end_top_index"].shape == (2, 3, 2)
    assert (beam["start_top_index"] >= 3).all()  # masked positions are never proposed


def test_summary_pools():
    h = torch.arange(2 * 3 * 4, dtype=torch.float).view(2, 3, 4)
    for pool, expected in (("first", h[:, 0]), ("last", h[:, -1]), ("mean", h.mean(1))):
        s = SequenceSummary(4, 0.0, pool)
        torch.nn.init.eye_(s.summary.weight)
        torch.nn.init.zeros_(s.summary.bias)
        assert torch.allclose(s(h), torch.tanh(expected)), pool
    with pytest.raises(ValueError, match="pool"):
        SequenceSummary(4, pool="max")
