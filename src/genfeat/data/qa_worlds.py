"""The data of a semi-supervised QA run (thesis Y §3.2; spec gdan.md §4.2, §5.1): the labelled questions L, the
unlabelled (paragraph, answer) pairs U that questions are generated for, `heldout` pairs of U kept out of training
(the generator's reward and health are measured on them), and the dev / test questions. Each returns
{"labelled", "unlabelled", "heldout", "dev", "test"} as lists of `QAExample`s; a built set adds its "sha256".

    squad_world(root, rate, seed, max_paragraph, heldout)   the thesis's protocol on SQuAD files
    cbt_world(rate, seed, heldout)                          the CBT-style books cloze set (`data.cbt_books`)
    synthetic_world(cfg, seed, heldout)                     the spec's synthetic world (`data.qa_synthetic`)

L is `rate` × the training questions, drawn with `seed` (`qa.labelled_pool`); the test split is one for every seed.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from genfeat.data import cbt_books as cbt
from genfeat.data.answer_extraction import SUBSTITUTE_TYPES
from genfeat.data.qa import (
    QAExample,
    article_split,
    labelled_pool,
    squad_paragraphs,
    squad_word_examples,
    truncate,
    unlabelled_pairs,
)
from genfeat.data.qa_synthetic import SyntheticQAConfig, synthetic_qa
from genfeat.data.squad import load_squad_json
from genfeat.errors import ConfigError


def squad_file(root: Path, split: str) -> Path:
    """`split`-v1.1.json or, else, `split`-v2.0.json in `root`."""
    for name in (f"{split}-v1.1.json", f"{split}-v2.0.json"):
        if (root / name).is_file():
            return root / name
    raise ConfigError(f"{root}: no {split}-v1.1.json or {split}-v2.0.json")


def squad_world(root: str, rate: float, seed: int, max_paragraph: int, heldout: int) -> dict[str, list[QAExample]]:
    """The thesis's protocol on SQuAD files: a tenth of the training articles as the test split (one for every
    seed), L from the rest, U = five typed answers a paragraph of the other articles' paragraphs that no labelled
    question asks about, paragraphs cut to `max_paragraph` tokens around the answer; dev: the dev file."""
    if not root:
        raise ConfigError("data.source=squad needs --data.root DIR, a directory holding train-v1.1.json (or "
                          "train-v2.0.json) and dev-v1.1.json (or dev-v2.0.json)")
    root_dir = Path(root)
    train_file = squad_file(root_dir, "train")
    rng = np.random.default_rng([seed, 3])
    parsed = load_squad_json(train_file)  # read once: the questions, the articles and the paragraphs
    examples = squad_word_examples(parsed)
    pool, test = article_split(examples, 0.1, np.random.default_rng(0))  # one test split for every seed
    labelled = labelled_pool(pool, rate, len(examples), rng)
    asked = {e.paragraph for e in labelled}
    test_articles = {e.article for e in test}
    free = {p: a for p, a in squad_paragraphs(parsed).items() if a not in test_articles}
    unl = [e for e in unlabelled_pairs(free, SUBSTITUTE_TYPES, 5, rng) if e.paragraph not in asked]
    unl = [unl[i] for i in rng.permutation(len(unl))]
    cut = [truncate(e, max_paragraph) for e in unl]
    return {"labelled": [truncate(e, max_paragraph) for e in labelled], "unlabelled": cut[heldout:],
            "heldout": cut[:heldout], "dev": squad_word_examples(squad_file(root_dir, "dev")), "test": test}


def cbt_world(rate: float, seed: int, heldout: int) -> dict[str, Any]:
    """The CBT-style cloze set (`data.cbt_books`, its split seed 0: one question set for every run): U = five typed
    words a passage (L's answer-type distribution) of the training passages that have no labelled question, the
    valid split as dev; "sha256": the set's checksum (`ClozeSet.checksum`, as docs/results/data_tasks.md records
    it)."""
    cloze = cbt.cbt_books()
    train = cloze.splits["train"]
    rng = np.random.default_rng([seed, 3])
    labelled = labelled_pool(train, rate, len(train), rng)
    kinds = Counter(e.answer_type for e in labelled)
    freq = {k: kinds[k] / len(labelled) for k in cbt.TYPES}
    unl = cbt.unlabelled_answers(train, {e.paragraph for e in labelled}, 5, freq, rng)
    unl = [unl[i] for i in rng.permutation(len(unl))]
    return {"labelled": labelled, "unlabelled": unl[heldout:], "heldout": unl[:heldout],
            "dev": cloze.splits["valid"], "test": cloze.splits["test"], "sha256": cloze.checksum}


def synthetic_world(cfg: SyntheticQAConfig, seed: int, heldout: int) -> dict[str, list[QAExample]]:
    """The synthetic world of `cfg` drawn for run seed `seed` (world seed cfg.seed + 1000 · seed), with `heldout`
    extra unlabelled pairs held out."""
    w = synthetic_qa(dataclasses.replace(cfg, seed=cfg.seed + 1000 * seed, n_unlabelled=cfg.n_unlabelled + heldout))
    return {"labelled": w.labelled, "unlabelled": w.unlabelled[:-heldout], "heldout": w.unlabelled[-heldout:],
            "dev": w.dev, "test": w.test}
