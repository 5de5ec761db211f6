"""The input table's start from a word table (`models.facets.word_table_start`): the facet recipe's GloVe-started
encoder (thesis C §3.2; the recipe's docstring states the random-table ablation)."""

from __future__ import annotations

import torch

from genfeat.models.facets import word_table_start


def test_vocabulary_words_start_from_their_rows_the_rest_small_and_random():
    table = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    words, vocab = ["cat", "dog", "eel"], ["<pad>", "eel", "cat", "owl"]
    torch.manual_seed(0)
    init = word_table_start(vocab, words, table, 2)
    assert init[1].tolist() == table[2].tolist() and init[2].tolist() == table[0].tolist()
    assert 0 < init[[0, 3]].abs().max() < 0.1  # no row: N(0, 0.02²)
    torch.manual_seed(0)
    wide = word_table_start(vocab, words, table, 3)  # widths differ: all random, the same draw
    torch.manual_seed(0)
    assert torch.equal(wide, torch.randn(4, 3) * 0.02)


def test_the_phrase_model_without_cross_attention_is_refused_before_data_is_read(tmp_path, capsys):
    from genfeat.cli import main

    code = main(["run", "facets", "--preset", "tiny", "--data.unit", "phrase", "--data.corpus", "dir:/nonexistent",
                 "--out", str(tmp_path / "run")])
    assert code == 2 and "model.cross_attention=false" in capsys.readouterr().err
