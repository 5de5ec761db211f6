"""`genfeat run facets` end to end on articles in the BBC News layout with a small GloVe-format vector file:
the examples (neighbour words, stop words out), training, exact resume, and the word-vector readers."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from genfeat.data.facets import build_vocab, sentence_examples, tokenize
from genfeat.data.word_vectors import read_word_vectors
from tests.recipes.test_multi_cls_recipes import COMMON, TOPICS, bbc_articles  # noqa: F401 (fixture)


@pytest.fixture
def vectors(tmp_path):
    words = sorted({w for ws in TOPICS.values() for w in ws.split()} | set(COMMON))
    rng = np.random.default_rng(0)
    path = tmp_path / "vectors.txt"
    path.write_text("".join(f"{w} " + " ".join(f"{v:.4f}" for v in rng.standard_normal(8)) + "\n" for w in words))
    return path


def test_examples_take_the_neighbours_non_stop_words():
    docs = [["The market rose.", "Shares of the bank fell sharply.", "Investors said the firm grew."]]
    vocab = build_vocab(docs, 1)
    ex = sentence_examples(docs, vocab, ["market", "rose", "shares", "bank", "investors", "firm", "the"])
    assert len(ex) == 3
    words = ["market", "rose", "shares", "bank", "investors", "firm", "the"]
    assert [words[i] for i in ex.targets[1]] == ["market", "rose", "investors", "firm"]  # "the" is a stop word
    assert [vocab[i] for i in ex.inputs[0]] == [*tokenize("The market rose."), "<eos>"]


def test_word_vector_formats(tmp_path):
    (tmp_path / "w2v.txt").write_text("2 3\ncat 1 2 3\ndog 4 5 6\n")
    words, vecs = read_word_vectors(tmp_path / "w2v.txt")
    assert words == ["cat", "dog"] and vecs.shape == (2, 3) and vecs[1, 2] == 6
    with gzip.open(tmp_path / "glove.txt.gz", "wt") as f:
        f.write("cat 1 2\ndog 3 4\nemu 5 6\n")
    words, vecs = read_word_vectors(tmp_path / "glove.txt.gz", vocab={"emu", "cat"})
    assert words == ["cat", "emu"] and vecs.tolist() == [[1, 2], [5, 6]]
    (tmp_path / "bad.txt").write_text("cat 1 2\ndog 3\n")
    with pytest.raises(Exception, match="bad.txt:2"):
        read_word_vectors(tmp_path / "bad.txt")


def test_facets_recipe_trains_and_resumes(bbc_articles, vectors, tmp_path, capsys):  # noqa: F811
    from tests.resume_check import assert_resume_is_exact

    args = ["facets", "--preset", "tiny", "--data.vectors", str(vectors)]
    assert_resume_is_exact(args, tmp_path, "valid_loss")
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["k"] == 3 and s["target_words"] > 10
    assert s["valid_loss"] == pytest.approx(s["valid_er_pos"] - s["valid_er_neg"], abs=1e-4)  # Eq. 3.2, weight 1
    assert (tmp_path / "a" / "vocab.txt").read_text().startswith("<pad>\n<unk>\n<eos>\n")
    from genfeat.cli import main

    capsys.readouterr()  # the runs' own output
    assert main(["facet-words", str(tmp_path / "a"), "--sentence", "The bank said profits rose.", "--top", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("sentence:") and len(out) == 1 + 3 and out[1].startswith("facet  1: ")
