"""The token-stream cache of a file corpus follows its files' contents."""

import os

import pytest

from genfeat.cli import main
from genfeat.data import lm_data
from genfeat.data.lm_data import LMDataConfig, prepare_lm_data
from genfeat.errors import DataError


def _folder(root, train: str):
    root.mkdir(exist_ok=True)
    (root / "train.txt").write_text(train)
    (root / "valid.txt").write_text("a b\n")
    (root / "test.txt").write_text("b a\n")
    return root


def test_an_edited_dir_corpus_is_tokenized_again(tmp_path, capsys):
    """Replacing train.txt (even with its size and mtime kept) gives a new vocabulary at the next run, and the
    cache of the old contents is removed; an untouched folder reuses its cache without re-reading the files."""
    d = _folder(tmp_path / "corpus", "a b a b\n")
    cfg = LMDataConfig(corpus=f"dir:{d}")
    tok, _ = prepare_lm_data(cfg)
    n = tok.vocab_size  # a, b and the specials
    first = lm_data._cache_dir(cfg)
    st = (d / "train.txt").stat()
    (d / "train.txt").write_text("c d e f\n")  # same size
    os.utime(d / "train.txt", ns=(st.st_atime_ns, st.st_mtime_ns))
    tok, streams = prepare_lm_data(cfg)
    assert lm_data._cache_dir(cfg) != first and not first.exists()
    assert tok.vocab_size == n + 2 and tok.encode_lines(["c d e f"]).tolist() == streams["train"][:5].tolist()
    built = (lm_data._cache_dir(cfg) / "train.bin").stat().st_mtime_ns
    prepare_lm_data(cfg)  # untouched: the same cache, not rebuilt
    assert (lm_data._cache_dir(cfg) / "train.bin").stat().st_mtime_ns == built
    assert main(["data", "clean"]) == 0
    assert "removed 1 token-stream cache(s)" in capsys.readouterr().out
    assert not lm_data._cache_dir(cfg).exists()
    assert prepare_lm_data(cfg)[0].vocab_size == n + 2


def test_unchanged_files_are_not_hashed_again(tmp_path, monkeypatch):
    d = _folder(tmp_path / "corpus", "a b a b\n")
    cfg = LMDataConfig(corpus=f"dir:{d}")
    prepare_lm_data(cfg)
    opened = []
    real = lm_data.hashlib.file_digest
    monkeypatch.setattr(lm_data.hashlib, "file_digest", lambda f, *a: opened.append(f.name) or real(f, *a))
    prepare_lm_data(cfg)
    assert opened == []
    (d / "valid.txt").write_text("b b\n")
    prepare_lm_data(cfg)
    assert opened == [str(d / "valid.txt")]


def test_a_missing_corpus_folder_says_so(tmp_path):
    with pytest.raises(DataError, match=f"corpus folder {tmp_path / 'nope'} does not exist"):
        prepare_lm_data(LMDataConfig(corpus=f"dir:{tmp_path / 'nope'}"))
