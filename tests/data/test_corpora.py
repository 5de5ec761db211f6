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
