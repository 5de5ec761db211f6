"""The synthetic QA world of spec gdan.md §5.1: templated biographies, human-template questions that use words the
paragraphs never do, and a simulated entity recogniser for the unlabelled answers.

    world = synthetic_qa(SyntheticQAConfig(n_labelled=50, seed=0))
    world.labelled, world.unlabelled, world.dev, world.test        lists of `data.qa.QAExample`

World: 300 persons per_i, each with a birth city and year, an occupation, an employer (two tokens: org_i inc), a
move city and year; 40 cities, 60 years y1900..y1959, 20 occupations, 20 organisations. A paragraph tells the
facts of 2-3 persons, two paraphrases per fact, with 0-2 filler sentences of a 200-word filler vocabulary,
shuffled, 4-8 sentences. Six question types, three human paraphrases each. Labelled, dev and test questions are
asked about fresh paragraphs of each split (the article id is the paragraph); the unlabelled set is
(paragraph, answer) pairs from further paragraphs: every city / year / occupation / organisation mention is a
candidate (the simulated NER), up to 5 per paragraph subsampled to the labelled answers' type distribution
(`data.answer_extraction`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genfeat.data.answer_extraction import subsample_answers, type_distribution
from genfeat.data.qa import QAExample

QUESTIONS = {
    "birth_city": ("in which town did {p} come into the world ?", "where was {p} born ?",
                   "what is the birthplace of {p} ?"),
    "birth_year": ("when was {p} born ?", "in what year was {p} born ?", "what year did {p} come into the world ?"),
    "occupation": ("what was the profession of {p} ?", "what job did {p} have ?", "what did {p} do for a living ?"),
    "employer": ("who employed {p} ?", "which company did {p} work for ?", "what firm hired {p} ?"),
    "move_city": ("where did {p} relocate in {y2} ?", "to which town did {p} move in {y2} ?",
                  "where did {p} go to live in {y2} ?"),
    "move_year": ("when did {p} move to {c2} ?", "in what year did {p} relocate to {c2} ?",
                  "what year did {p} settle in {c2} ?"),
}
KIND = {"birth_city": "city", "birth_year": "year", "occupation": "occupation", "employer": "organisation",
        "move_city": "city", "move_year": "year"}
# fact sentences: tokens with slots; each slot that is an answer is named by its question type
SENTENCES = {
    "birth": (("{p}", "was", "born", "in", "<birth_city>", "in", "<birth_year>", "."),
              ("born", "in", "<birth_year>", ",", "{p}", "grew", "up", "in", "<birth_city>", ".")),
    "work": (("{p}", "worked", "as", "a", "<occupation>", "for", "<employer>", "."),
             ("{p}", "was", "a", "<occupation>", "at", "<employer>", ".")),
    "move": (("in", "<move_year>", "{p}", "moved", "to", "<move_city>", "."),
             ("{p}", "moved", "to", "<move_city>", "in", "<move_year>", ".")),
}


@dataclass(frozen=True)
class SyntheticQAConfig:
    n_labelled: int = 50  # |L|
    n_unlabelled: int = 5000  # |U|, (paragraph, answer) pairs
    n_dev: int = 300
    n_test: int = 1000
    seed: int = 0
    n_persons: int = 300
    n_cities: int = 40
    n_years: int = 60
    n_occupations: int = 20
    n_organisations: int = 20
    n_filler: int = 200
    answers_per_paragraph: int = 5


@dataclass
class SyntheticQA:
    labelled: list[QAExample]
    unlabelled: list[QAExample]
    dev: list[QAExample]
    test: list[QAExample]


class _World:
    def __init__(self, cfg: SyntheticQAConfig, rng: np.random.Generator):
        self.cfg, self.rng = cfg, rng
        cities = [f"city_{i}" for i in range(cfg.n_cities)]
        years = [f"y{1900 + i}" for i in range(cfg.n_years)]
        occs = [f"occ_{i}" for i in range(cfg.n_occupations)]
        self.filler = [f"fw_{i}" for i in range(cfg.n_filler)]
        self.facts = []
        for _ in range(cfg.n_persons):
            born = int(rng.integers(len(years) - 10))
            self.facts.append({
                "birth_city": (str(rng.choice(cities)),), "birth_year": (years[born],),
                "occupation": (str(rng.choice(occs)),),
                "employer": (f"org_{int(rng.integers(cfg.n_organisations))}", "inc"),
                "move_city": (str(rng.choice(cities)),),
                "move_year": (years[born + 1 + int(rng.integers(min(9, len(years) - born - 1)))],)})

    def paragraph(self) -> tuple[tuple[str, ...], list[tuple[int, tuple[int, int], str]]]:
        """(tokens, [(person, span, question type)]) of one fresh paragraph."""
        rng = self.rng
        persons = rng.choice(self.cfg.n_persons, int(rng.integers(2, 4)), replace=False)
        units = []
        for p in persons:
            for fact in rng.permutation(list(SENTENCES))[: int(rng.integers(2, 4))]:
                units.append((int(p), SENTENCES[str(fact)][int(rng.integers(2))]))
        total = int(rng.integers(4, 9))
        n_fill = min(int(rng.integers(0, 3)), max(0, total - 2))
        units = [units[i] for i in rng.permutation(len(units))[: max(2, total - n_fill)]]
        for _ in range(n_fill):
            units.append((-1, (*rng.choice(self.filler, int(rng.integers(4, 9))).tolist(), ".")))
        tokens: list[str] = []
        slots = []
        for i in rng.permutation(len(units)):
            person, template = units[i]
            for tok in template:
                if tok == "{p}":
                    tokens.append(f"per_{person}")
                elif tok.startswith("<"):
                    qtype = tok[1:-1]
                    value = self.facts[person][qtype]
                    slots.append((person, (len(tokens), len(tokens) + len(value) - 1), qtype))
                    tokens.extend(value)
                else:
                    tokens.append(tok)
        return tuple(tokens), slots

    def question(self, person: int, qtype: str) -> tuple[str, ...]:
        f = self.facts[person]
        text = QUESTIONS[qtype][int(self.rng.integers(3))].format(p=f"per_{person}", y2=f["move_year"][0],
                                                                   c2=f["move_city"][0])
        return tuple(text.split())

    def questions(self, n: int, split: str) -> list[QAExample]:
        out: list[QAExample] = []
        while len(out) < n:
            tokens, slots = self.paragraph()
            person, span, qtype = slots[int(self.rng.integers(len(slots)))]
            out.append(QAExample(tokens, self.question(person, qtype), span, f"{split}-{len(out)}", KIND[qtype],
                                 f"{split}-{len(out)}"))
        return out

    def unlabelled(self, n: int, type_freq: dict[str, float]) -> list[QAExample]:
        out: list[QAExample] = []
        while len(out) < n:
            tokens, slots = self.paragraph()
            cands = [(span, KIND[qtype]) for _, span, qtype in slots]
            article = f"u-{len(out)}"
            for span, kind in subsample_answers(cands, type_freq, self.cfg.answers_per_paragraph, self.rng):
                out.append(QAExample(tokens, None, span, article, kind, f"u-{len(out)}"))
        return out[:n]


def synthetic_qa(cfg: SyntheticQAConfig) -> SyntheticQA:
    rng = np.random.default_rng(cfg.seed)
    world = _World(cfg, rng)
    labelled = world.questions(cfg.n_labelled, "train")
    dev, test = world.questions(cfg.n_dev, "dev"), world.questions(cfg.n_test, "test")
    unlabelled = world.unlabelled(cfg.n_unlabelled, type_distribution([e.answer_type for e in labelled]))
    return SyntheticQA(labelled, unlabelled, dev, test)
