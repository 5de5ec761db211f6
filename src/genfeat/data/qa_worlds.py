"""The data of a semi-supervised QA run (thesis Y §3.2; spec gdan.md §4.2, §5.1): the labelled questions L, the
unlabelled (paragraph, answer) pairs U that questions are generated for, `heldout` pairs of U kept out of training
(the generator's reward and health are measured on them), and the dev / test questions. Each returns
{"labelled", "unlabelled", "heldout", "dev", "test"} as lists of `QAExample`s; a built set adds its "sha256".

    squad_world(root, rate, seed, max_paragraph, heldout)   the thesis's protocol on SQuAD files
    cbt_world(rate, seed, heldout)                          the CBT-style books cloze set (`data.cbt_books`)
    synthetic_world(cfg, seed, heldout)                     the spec's synthetic world (`data.qa_synthetic`)
    load_world(QADataConfig, seed)                           the one `data.source` names (a run config's `data.*`)

L is `rate` × the training questions, drawn with `seed` (`qa.labelled_pool`); the test split is one for every seed.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genfeat.data import cbt_books as cbt
from genfeat.data.answer_extraction import SUBSTITUTE_TYPES
from genfeat.data.qa import (
    QAExample,
    article_split,
    context_question,
    labelled_pool,
    squad_paragraphs,
    squad_word_examples,
    truncate,
    unlabelled_pairs,
)
from genfeat.data.qa_synthetic import SyntheticQAConfig, synthetic_qa
from genfeat.data.squad import load_squad_json
from genfeat.errors import ConfigError

SOURCE_NAMES = {"synthetic": "the synthetic QA world", "squad": "SQuAD", "cbt_books": "the CBT-style books"}


@dataclass(frozen=True)
class QADataConfig:
    source: str = "synthetic"  # synthetic | squad | cbt_books
    synthetic: SyntheticQAConfig = field(default_factory=SyntheticQAConfig)
    root: str = ""  # squad: the directory holding the SQuAD train and dev JSON files
    rate: float = 0.1  # squad, cbt_books: the labelling rate, a fraction of the training questions (max 0.9)
    max_paragraph: int = 400  # squad: paragraphs cut to this many tokens around the answer
    heldout: int = 500  # unlabelled pairs held out of training (Q1's reward, the generator's health)
    context_window: int = 3  # W of the Context pseudo-questions (thesis 5; spec §5.1: 3 for short sentences)
    out_vocab: int = 20000  # G's output vocabulary (capped at the vocabulary)
    batch_size: int = 32

    def __post_init__(self) -> None:
        if self.source not in ("synthetic", "squad", "cbt_books"):
            raise ConfigError(f"data.source must be synthetic, squad or cbt_books, got {self.source!r}")
        if not 0 < self.rate <= 0.9:
            raise ConfigError(f"data.rate must be in (0, 0.9], got {self.rate}")
        if min(self.heldout, self.context_window, self.batch_size) < 1 or self.out_vocab < 7:
            raise ConfigError("data.heldout, context_window and batch_size must be >= 1, data.out_vocab >= 7")


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


def load_world(dc: QADataConfig, seed: int, blank_questions: bool = False) -> dict[str, Any]:
    """The world `dc.source` names, drawn for run seed `seed`; `blank_questions`: every question of L, dev and test
    blanked (one <unk>: the passage-only control)."""
    if dc.source == "squad":
        out = squad_world(dc.root, dc.rate, seed, dc.max_paragraph, dc.heldout)
    elif dc.source == "cbt_books":
        out = cbt_world(dc.rate, seed, dc.heldout)
    else:
        out = synthetic_world(dc.synthetic, seed, dc.heldout)
    if blank_questions:
        out |= {k: [dataclasses.replace(e, question=None) for e in out[k]] for k in ("labelled", "dev", "test")}
    return out


def with_context_questions(examples: list[QAExample], window: int) -> list[QAExample]:
    """The Context baseline's pseudo-questions (`qa.context_question`, `window` words each side of the answer); a
    cloze pair's holds the placeholder `xxxxx` between its two windows."""
    return [dataclasses.replace(e, question=context_question(e.paragraph, e.span, window,
                                                             cbt.PLACEHOLDER if e.candidates else None))
            for e in examples]
