"""Readers of gensim's similarity files, on files written here in their formats."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from genfeat.data.similarity_sets import lee_documents, lee_pairs, word_pairs


@pytest.fixture
def gensim_dir() -> Path:
    d = Path(os.environ["GENFEAT_DATA"]) / "gensim-testdata" / "gensim" / "test" / "test_data"
    d.mkdir(parents=True)
    (d / "lee.cor").write_text("".join(f"document number {i} about topic {i % 5}\n" for i in range(50)))
    m = np.triu(np.arange(2500, dtype=float).reshape(50, 50) / 2500, 1) + np.eye(50)
    np.savetxt(d / "similarities0-1.txt", m, delimiter="\t")
    (d / "wordsim353.tsv").write_text("# header\n# Word 1\tWord 2\tHuman (mean)\nLove\tsex\t6.77\ntiger\tcat\t7.35\n")
    return d


def test_lee_pairs_are_the_upper_triangle(gensim_dir):
    pairs, gold = lee_pairs()
    assert len(pairs) == len(gold) == 1225 and pairs[0] == (0, 1) and pairs[-1] == (48, 49)
    assert gold[0] == pytest.approx(1 / 2500) and gold[-1] == pytest.approx((48 * 50 + 49) / 2500)
    assert len(lee_documents()) == 50


def test_word_pairs(gensim_dir):
    assert word_pairs("wordsim353") == [("love", "sex", 6.77), ("tiger", "cat", 7.35)]
    with pytest.raises(Exception, match="unknown"):
        word_pairs("men")


def test_superglue_jsonl(tmp_path):
    from genfeat.data.text_classification import load_superglue_jsonl

    (tmp_path / "val.jsonl").write_text(
        '{"question": "is it?", "passage": "It is.", "idx": 0, "label": true}\n'
        '{"question": "was it?", "passage": "No.", "idx": 1, "label": false}\n')
    assert load_superglue_jsonl(tmp_path / "val.jsonl", "BoolQ") == [("is it?", "It is.", "true"),
                                                                      ("was it?", "No.", "false")]
    (tmp_path / "wic.jsonl").write_text('{"word": "bank", "sentence1": "a river bank", "sentence2": "the bank '
                                        'lent money", "idx": 0, "label": false}\n')
    assert load_superglue_jsonl(tmp_path / "wic.jsonl", "WiC")[0][0] == "bank: a river bank"
    (tmp_path / "bad.jsonl").write_text('{"premise": "x"}\n')
    with pytest.raises(Exception, match="bad.jsonl:1"):
        load_superglue_jsonl(tmp_path / "bad.jsonl", "CB")
