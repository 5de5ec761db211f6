"""The spec gdan.md §5.1 synthetic QA world: answers are the asked person's facts, human questions use words the
paragraphs never do, the unlabelled answers follow the labelled set's types."""

from collections import Counter

import numpy as np

from genfeat.data.answer_extraction import subsample_answers
from genfeat.data.qa_synthetic import QUESTIONS, SyntheticQAConfig, synthetic_qa


def test_questions_are_answered_by_the_asked_persons_fact():
    w = synthetic_qa(SyntheticQAConfig(n_labelled=100, n_unlabelled=300, n_dev=50, n_test=50, seed=3))
    assert (len(w.labelled), len(w.unlabelled), len(w.dev), len(w.test)) == (100, 300, 50, 50)
    for e in w.labelled + w.test:
        person = next(t for t in e.question if t.startswith("per_"))
        assert person in e.paragraph
        j, k = e.span
        sentence_start = max([i + 1 for i in range(j) if e.paragraph[i] == "."], default=0)
        sentence_end = e.paragraph.index(".", k)
        assert person in e.paragraph[sentence_start:sentence_end]  # the fact is the asked person's
        assert 4 <= e.paragraph.count(".") <= 8
    para_words = {t for e in w.labelled + w.unlabelled for t in e.paragraph}
    template_words = {t for qs in QUESTIONS.values() for q in qs for t in q.split() if "{" not in t}
    assert {"town", "profession", "employed", "relocate"} <= template_words - para_words
    assert all(e.question is None for e in w.unlabelled)
    assert len({e.paragraph for e in w.unlabelled}) >= 300 / 5  # at most 5 answers per paragraph
    assert max(Counter(e.paragraph for e in w.unlabelled).values()) <= 5


def test_unlabelled_answer_types_follow_the_labelled_ones():
    w = synthetic_qa(SyntheticQAConfig(n_labelled=400, n_unlabelled=3000, n_dev=10, n_test=10))
    lab = Counter(e.answer_type for e in w.labelled)
    unl = Counter(e.answer_type for e in w.unlabelled)
    for t in lab:
        assert abs(unl[t] / 3000 - lab[t] / 400) < 0.06


def test_subsampling_never_draws_an_absent_type_and_keeps_order():
    rng = np.random.default_rng(0)
    cands = [((0, 0), "a"), ((2, 3), "b"), ((5, 5), "a"), ((7, 7), "c")]
    for _ in range(50):
        got = subsample_answers(cands, {"a": 0.5, "b": 0.5}, 2, rng)
        assert len(got) == 2 and all(t != "c" for _, t in got)
        assert got == sorted(got)
    assert subsample_answers(cands, {"z": 1.0}, 3, rng) == []


def test_a_type_is_drawn_at_its_frequency_however_many_candidates_it_has():
    rng = np.random.default_rng(0)
    cands = [((0, 0), "a")] + [((i, i), "b") for i in range(1, 10)]
    draws = [subsample_answers(cands, {"a": 0.5, "b": 0.5}, 1, rng)[0][1] for _ in range(600)]
    assert abs(draws.count("a") / 600 - 0.5) < 0.07


def test_rule_based_candidates_on_real_text():
    from genfeat.data.answer_extraction import SUBSTITUTE_TYPES, extract_candidates

    text = ("The University of Notre Dame opened on May 5, 1842 in Indiana. It had 250 students and "
            "a small library. In 1900 the campus grew by 12 percent.")
    toks, cands = extract_candidates(text)
    got = {" ".join(toks[a:b + 1]): kind for (a, b), kind in cands}
    assert got["university of notre dame"] == "entity" and got["indiana"] == "entity"
    assert got["may 5 , 1842"] == "date" and got["1900"] == "date"
    assert got["250"] == "other_numeric" and got["12 percent"] == "other_numeric"
    assert got["small library"] == "common_noun_phrase"
    assert "the" not in got and "it" not in got and "in" not in got  # stop words at a sentence's start
    spans = [s for s, _ in cands]
    assert spans == sorted(spans)
    assert all(b1 < a2 for (_, b1), (a2, _) in zip(spans, spans[1:], strict=False))  # no overlap
    assert abs(sum(SUBSTITUTE_TYPES.values()) - 1) < 1e-9
