import pytest

from genfeat.data import corpora
from genfeat.errors import ConfigError


def _fake(tag: str):
    return lambda: {k: [f"{tag} {k} {i}" for i in range(2)] for k in corpora.SPLITS}


def test_joined_corpora_concatenate_split_by_split_in_order(monkeypatch):
    monkeypatch.setitem(corpora.CORPORA, "a", _fake("a"))
    monkeypatch.setitem(corpora.CORPORA, "b", _fake("b"))
    joined = corpora.load_corpus("b+a")
    for k in corpora.SPLITS:
        assert joined[k] == [f"b {k} 0", f"b {k} 1", f"a {k} 0", f"a {k} 1"]


def test_joined_corpora_name_the_unknown_part(monkeypatch):
    monkeypatch.setitem(corpora.CORPORA, "a", _fake("a"))
    with pytest.raises(ConfigError, match="'nope'"):
        corpora.load_corpus("a+nope")


def test_a_corpus_that_is_not_utf8_text_is_refused_past_a_small_share(tmp_path):
    """Latin-1 text and binary files would train on U+FFFD (or on control bytes): refused with the share; a stray
    byte in a large UTF-8 corpus is replaced, as the documented share allows."""
    from genfeat.data.text_files import MAX_BAD_SHARE, read_corpus
    from genfeat.errors import DataError

    text = "the café serves naïve résumés\n" * 400
    (tmp_path / "latin1.txt").write_bytes(text.encode("latin-1"))
    with pytest.raises(DataError, match=r"latin1.txt: 1,600 of its 12,000 bytes \(13.3%\) are not UTF-8"):
        read_corpus(tmp_path / "latin1.txt")
    (tmp_path / "binary.txt").write_bytes(b"\x00\x01abc\x1b" * 1000)  # ASCII, so valid UTF-8: the controls tell
    with pytest.raises(DataError, match=r"binary.txt: 3,000 of its 6,000 bytes \(50.0%\) are control bytes"):
        read_corpus(tmp_path / "binary.txt")
    raw = text.encode("utf-8")
    stray = raw[:1000] + b"\xff" + raw[1000:]  # 1 bad byte in 13,601: under MAX_BAD_SHARE
    assert 1 / len(stray) < MAX_BAD_SHARE
    (tmp_path / "stray.txt").write_bytes(stray)
    got = read_corpus(tmp_path / "stray.txt")
    assert got.count("\ufffd") == 1 and got.replace("\ufffd", "") == text
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.txt").write_bytes(text.encode("latin-1"))
    with pytest.raises(DataError, match="train.txt: .* are not UTF-8"):
        corpora.local_dir(str(tmp_path))
