"""Shared fixtures. Tests never touch the network or the user's data cache: GENFEAT_DATA points at
a temporary folder, and corpora are small files written here in the real formats."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

pytest_plugins = ["tests.recipe_data"]

SUBJECTS = ["the company", "mr. smith", "the board", "investors", "the market", "the fund", "analysts"]
VERBS = ["said", "expects", "sold", "bought", "reported", "will raise", "rejected"]
OBJECTS = ["N shares", "the offer", "its stake", "<unk> bonds", "a new plan", "the deal", "$ N million"]


def ptb_style_lines(n: int, seed: int) -> list[str]:
    """Sentences in Mikolov-PTB form: lower case, `N` for numbers, `<unk>` for rare words."""
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}" for _ in range(n)]


@pytest.fixture(autouse=True)
def _isolated_data_home(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("GENFEAT_DATA", str(tmp_path_factory.mktemp("genfeat-data")))


@pytest.fixture(autouse=True)
def _fixed_thread_count(monkeypatch):
    """A fresh run takes the CPUs free at its start (`train.threads`), which the load of a shared machine moves,
    and CPU kernels sum in another order with another count: two fresh runs of one config compared bitwise need
    one count. Tests of that choice itself unset GENFEAT_THREADS."""
    from genfeat.train.threads import available_cpus

    monkeypatch.setenv("GENFEAT_THREADS", str(available_cpus()))


@pytest.fixture(scope="session")
def ptb_dir(tmp_path_factory) -> Path:
    """A corpus folder in the standard ptb.{train,valid,test}.txt layout."""
    root = tmp_path_factory.mktemp("ptb-format")
    for split, n, seed in (("train", 1500, 0), ("valid", 150, 1), ("test", 150, 2)):
        (root / f"ptb.{split}.txt").write_text("".join(f" {s} \n" for s in ptb_style_lines(n, seed)))
    return root
