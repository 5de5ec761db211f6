"""`genfeat run facets` end to end on articles in the BBC News layout with a small GloVe-format vector file:
the examples (neighbour words, stop words out), training, exact resume, and the word-vector readers."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from genfeat.data.facets import build_vocab, sentence_examples, tokenize
from genfeat.data.word_vectors import read_word_vectors
from tests.recipe_data import TOPICS


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


def test_facets_recipe_trains(bbc_articles, vectors, tmp_path, capsys):  # its resume: tests/test_recipe_matrix.py
    from genfeat.cli import main

    out = tmp_path / "a"
    assert main(["run", "facets", "--preset", "tiny", "--data.vectors", str(vectors), "--out", str(out)]) == 0
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["k"] == 3 and s["target_words"] > 10
    assert s["valid_loss"] == pytest.approx(s["valid_er_pos"] - s["valid_er_neg"], abs=1e-4)  # Eq. 3.2, weight 1
    assert (tmp_path / "a" / "vocab.txt").read_text().startswith("<pad>\n<unk>\n<eos>\n")
    closing = capsys.readouterr().out.strip().splitlines()[-1]  # the run's closing line names its directory
    assert closing.startswith("valid_loss ") and closing.endswith(f"-> {out}")
    assert main(["facet-words", str(tmp_path / "a"), "--sentence", "The bank said profits rose.", "--top", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("sentence:") and len(out) == 1 + 3 and out[1].startswith("facet  1: ")


def test_noun_phrases_and_their_context_targets():
    from genfeat.data.facets import noun_phrases, phrase_examples

    lexicon = frozenset({("interest", "rate"), ("interest",), ("bank",), ("central", "bank"), ("the",), ("1999",)})
    toks = tokenize("The interest rate of the central bank rose in 1999 while the bank fell.")
    spans = [" ".join(toks[a:b]) for a, b in noun_phrases(toks, lexicon)]
    assert spans == ["interest rate", "central bank", "bank"]  # longest match; stop words and digits alone skipped
    docs = [["The interest rate of the central bank rose in 1999 while the bank fell."]]
    vocab = build_vocab(docs, 1)
    words = ["rate", "central", "bank", "rose", "fell", "interest", "1999"]
    ex = phrase_examples(docs, vocab, words, lexicon, window=2)
    # ±2 tokens, stop words out: "interest rate" has only "the" / "of the" around it (no target: dropped)
    assert [[vocab[i] for i in x] for x in ex.inputs] == [["central", "bank", "<eos>"], ["bank", "<eos>"]]
    assert [[words[i] for i in t] for t in ex.targets] == [["rose"], ["fell"]]


def test_phrase_model_trains(bbc_articles, vectors, tmp_path):  # noqa: F811
    """The phrase preset end to end, on a WordNet noun file placed by hand in the data cache."""
    import os
    from pathlib import Path

    from genfeat.cli import main

    wn = Path(os.environ["GENFEAT_DATA"]) / "wordnet" / "usr" / "share" / "wordnet"
    wn.mkdir(parents=True)
    nouns = sorted({w for ws in TOPICS.values() for w in ws.split()})
    (wn / "data.noun").write_text("".join(f"{i:08d} 06 n 01 {w} 0 000 | a {w}\n" for i, w in enumerate(nouns)))
    (wn / "data.verb").write_text("")
    args = ["run", "facets", "--preset", "bbc_phrases", "--data.vectors", str(vectors), "--model.d_model", "16",
            "--model.d_target", "8", "--model.k", "2", "--model.n_enc", "1", "--model.n_dec", "1", "--model.n_head",
            "2", "--model.d_inner", "32", "--data.batch_size", "8", "--data.min_count", "1", "--train.max_steps", "4",
            "--train.eval_every", "2", "--out", str(tmp_path / "p")]
    assert main(args) == 0
    s = json.loads((tmp_path / "p" / "summary.json").read_text())
    assert s["unit"] == "phrase" and s["train_phrases"] > 100 and np.isfinite(s["valid_loss"])
    assert main([*args[:-2], "--model.cross_attention", "true", "--out", str(tmp_path / "q")]) == 2


def test_input_table_starts_from_the_target_vectors_when_the_widths_agree(bbc_articles, vectors, tmp_path):  # noqa: F811
    """d_model = d_target: a word with a target vector starts with that vector's direction (the GloVe-initialised
    encoder, the presets' default); one step at lr 1e-12 keeps the initial table."""
    import torch

    from genfeat.cli import main
    from genfeat.models.facets.inference import load_run

    words, vecs = read_word_vectors(vectors)
    common = ["--preset", "tiny", "--data.vectors", str(vectors), "--train.max_steps", "1", "--train.lr", "1e-12",
              "--train.eval_every", "1"]
    assert main(["run", "facets", *common, "--model.d_model", "8", "--out", str(tmp_path / "g")]) == 0
    model, vocab, _, _ = load_run(tmp_path / "g")
    index = {w: i for i, w in enumerate(vocab)}
    shared = [w for w in words if w in index]
    table = model.encoder.tok.weight.detach()[[index[w] for w in shared]]
    target = torch.from_numpy(np.stack([vecs[words.index(w)] for w in shared])).float()
    cos = torch.nn.functional.cosine_similarity(table, target, dim=1)
    assert len(shared) > 10 and cos.min() > 0.999
    assert main(["run", "facets", *common, "--out", str(tmp_path / "r")]) == 0  # d_model 16: a random table
    model, vocab, _, _ = load_run(tmp_path / "r")
    assert model.encoder.tok.weight.shape[1] == 16
