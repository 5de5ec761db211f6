"""The CBT-style cloze builder (data.cbt_books): word types, the question protocol, unlabelled answers, the
checksum; the cloze objective; the recipe's cbt_books source end to end on a fixture set."""

import dataclasses
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from genfeat.data import cbt_books as cbt
from genfeat.data.qa import QAVocab, qa_rows
from genfeat.models.gdan.reader import answer_log_likelihood

NAMES = ["Anna", "Boris", "Clara", "Dmitri", "Elena", "Fyodor", "Galina", "Igor", "Katya", "Lev", "Masha", "Nikolai"]
NOUNS = ["apple", "river", "house", "garden", "letter", "horse", "window", "bread", "candle", "forest", "sister",
         "table"]
LEXICON = cbt.NounLexicon(noun={w: 3 for w in [*NOUNS, "walk", "two"]} | {"apples": 3},
                          other={"walk": 5, "gave": 2, "saw": 4})


def sentences(n: int, seed: int = 0) -> tuple[str, ...]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        a, b = rng.choice(NAMES, 2, replace=False)
        x, y = rng.choice(NOUNS, 2, replace=False)
        out.append(f"Then {a} gave the {x} to {b} near the {y}.")
    return tuple(out)


def test_word_types_read_case_after_the_first_token_and_noun_dominance():
    toks = [cbt._tokens(s) for s in (
        "Anna saw the river and two apples.", "Then Anna and Mr Boris took a walk.", "River water was cold.",
        "She gave Boris the river stone.")]
    types = cbt.word_types(toks, LEXICON)
    assert types["anna"] == "NE" and types["boris"] == "NE"
    assert types["river"] == "CN" and types["apples"] == "CN"  # "River" opens a sentence: its case is not read
    assert "mr" not in types and "the" not in types  # a title, a stop word
    assert "walk" not in types  # more verb senses than noun senses
    assert "two" not in types  # a numeral
    assert "gave" not in types  # no noun sense


def test_unit_questions_follow_the_protocol():
    unit = cbt.Unit("book/one", "train", sentences(80))
    qs = cbt.unit_questions(unit, LEXICON, seed=0)
    assert qs and {q.answer_type for q in qs} == {"NE", "CN"}
    starts = sorted({int(q.qid.split(":")[1]) for q in qs})
    assert starts[:3] == [0, 5, 10]  # windows every 5 sentences
    types = cbt.word_types([cbt._tokens(s) for s in unit.sentences], LEXICON)
    for q in qs:
        w0 = int(q.qid.split(":")[1])
        passage = tuple(t.lower() for s in unit.sentences[w0:w0 + 20] for t in cbt._tokens(s))
        query = [t.lower() for t in cbt._tokens(unit.sentences[w0 + 20])]
        assert q.paragraph == passage  # 20 sentences as the passage
        assert q.question == tuple(cbt.PLACEHOLDER if w == q.answer else w for w in query)  # the 21st, blanked
        assert q.answer in query and q.answer not in q.question
        assert len(set(q.candidates)) == 10 and list(q.candidates) == sorted(q.candidates)
        assert q.answer in q.candidates
        assert all(c in passage and types[c] == q.answer_type for c in q.candidates)
        j = q.span[0]
        assert q.span == (j, j) and passage[j] == q.answer and q.answer not in passage[j + 1:]  # last occurrence
    again = cbt.unit_questions(unit, LEXICON, seed=0)
    assert again == qs
    assert cbt.unit_questions(unit, LEXICON, seed=1) != qs  # the seed draws answers and candidates


def test_a_passage_needs_ten_words_of_the_type():
    few = tuple(f"Then {NAMES[i % 5]} gave the {NOUNS[i % 12]} to {NAMES[(i + 1) % 5]}." for i in range(30))
    qs = cbt.unit_questions(cbt.Unit("b", "train", few), LEXICON, seed=0)
    assert qs and all(q.answer_type == "CN" for q in qs)  # five names only: no NE question


def test_unlabelled_answers_skip_labelled_passages_and_draw_typed_words():
    qs = cbt.unit_questions(cbt.Unit("book/one", "train", sentences(120)), LEXICON, seed=0)
    asked = {qs[0].paragraph}
    unl = cbt.unlabelled_answers(qs, asked, 5, {"NE": 0.5, "CN": 0.5}, np.random.default_rng(0))
    assert unl and all(u.paragraph not in asked and u.question is None for u in unl)
    per = {}
    for u in unl:
        per[u.paragraph] = per.get(u.paragraph, 0) + 1
        word = u.paragraph[u.span[0]]
        assert word in u.candidates and word not in u.paragraph[u.span[0] + 1:]
    assert max(per.values()) <= 5 and len(per) == len({q.paragraph for q in qs} - asked)


def test_checksum_and_files_cover_the_questions(tmp_path):
    qs = cbt.unit_questions(cbt.Unit("book/one", "train", sentences(60)), LEXICON, seed=0)
    cs = cbt.ClozeSet("cbt-books", {"train": qs, "valid": qs[:2], "test": qs[2:4]})
    other = dataclasses.replace(qs[0], candidates=(*qs[0].candidates[:-1], "zzz"))
    assert cs.checksum == cbt.ClozeSet("x", {"train": list(qs), "valid": qs[:2], "test": qs[2:4]}).checksum
    assert cs.checksum != cbt.ClozeSet("cbt-books", {"train": [other, *qs[1:]], "valid": qs[:2],
                                                     "test": qs[2:4]}).checksum
    paths = cs.write(tmp_path)
    rows = [json.loads(line) for line in paths[0].read_text().splitlines()]
    assert len(rows) == len(qs) and rows[0]["answer"] == qs[0].answer
    assert rows[0]["candidates"] == list(qs[0].candidates)
    assert cs.describe()["sizes"]["train_NE"] == sum(q.answer_type == "NE" for q in qs)


def test_kjv_books_split_by_canonical_position(monkeypatch):
    from genfeat.data import corpora

    monkeypatch.setattr(corpora, "kjv_books", lambda: {f"B{i}": ["In the beginning."] for i in range(1, 67)})
    split = {u.name: u.split for u in cbt.kjv_units()}
    assert split["kjv/B5"] == split["kjv/B15"] == "valid" and split["kjv/B10"] == split["kjv/B60"] == "test"
    assert sum(s == "train" for s in split.values()) == 66 - 7 - 6


def test_the_cloze_objective_is_the_attention_sum_over_the_answers_occurrences():
    qs = cbt.unit_questions(cbt.Unit("book/one", "train", sentences(30)), LEXICON, seed=0)[:3]
    vocab = QAVocab.build(qs)
    rows = qa_rows(qs, vocab)
    T = rows["paragraph"].size(1)
    torch.manual_seed(0)
    s = torch.randn(len(qs), T).masked_fill(~rows["paragraph_mask"], float("-inf")).log_softmax(-1)
    got = answer_log_likelihood({"start_log_probs": s, "end_log_probs": s}, rows)
    for b, q in enumerate(qs):
        hits = [i for i, w in enumerate(q.paragraph) if w == q.answer]
        assert len(hits) > 1 or b  # the fixture repeats words: the sum is over several positions
        assert torch.isclose(got[b], torch.logsumexp(s[b, hits], 0), atol=1e-6)
    span = {k: v for k, v in rows.items() if k != "candidates"}  # the span objective without candidates
    assert torch.allclose(answer_log_likelihood({"start_log_probs": s, "end_log_probs": s}, span),
                          s.gather(1, rows["start"][:, None]).squeeze(1) * 2)


@pytest.fixture
def fixture_set(monkeypatch):
    units = [cbt.Unit(f"book/{i}", split, sentences(90, seed=i))
             for i, split in enumerate(["train"] * 4 + ["valid", "test"])]
    qs = {s: [q for u in units if u.split == s for q in cbt.unit_questions(u, LEXICON, 0)]
          for s in cbt.SPLITS}
    monkeypatch.setattr(cbt, "cbt_books", lambda: cbt.ClozeSet("cbt-books", qs))
    return qs


@pytest.mark.parametrize("method", ["context", "gdan"])
def test_recipe_on_the_cbt_source(fixture_set, tmp_path, monkeypatch, method):
    from genfeat.data import qa_worlds
    from genfeat.data.qa_worlds import cbt_world
    from genfeat.recipes import gdan

    cfg = gdan.cbt_books()
    cfg = dataclasses.replace(
        cfg, method=method, data=dataclasses.replace(cfg.data, rate=0.5, heldout=20, out_vocab=50),
        model=dataclasses.replace(cfg.model, d_embed=8, reader_hidden=8, generator_hidden=8, max_question=12),
        generator_train=dataclasses.replace(cfg.generator_train, max_steps=4, eval_every=2),
        train=dataclasses.replace(cfg.train, max_steps=10, eval_every=5))
    data = cbt_world(cfg.data.rate, cfg.seed, cfg.data.heldout)
    train_passages = {q.paragraph for q in fixture_set["train"]}
    assert len(data["labelled"]) == int(0.5 * len(fixture_set["train"]))
    asked = {e.paragraph for e in data["labelled"]}
    assert all(u.paragraph in train_passages and u.paragraph not in asked for u in data["unlabelled"])
    assert data["dev"] == fixture_set["valid"] and data["test"] == fixture_set["test"]
    holes = []
    real_context_question = qa_worlds.context_question

    def context_question(*args):
        holes.append(args[3])
        return real_context_question(*args)

    monkeypatch.setattr(qa_worlds, "context_question", context_question)
    summary = gdan.run(cfg, tmp_path)
    n_test = len(fixture_set["test"])
    correct = summary["test_accuracy"] * n_test / 100  # an accuracy over exactly the test questions
    assert abs(correct - round(correct)) < 1e-6 and "test_f1" not in summary
    assert summary["data_sha256"] == data["sha256"] == cbt.cbt_books().checksum
    if method == "context":  # every cloze pseudo-question holds the placeholder
        assert holes and set(holes) == {cbt.PLACEHOLDER}
    if method == "gdan":
        assert math.isfinite(summary["reward_mle"]) and summary["reward_mle"] <= 0
        rows = [json.loads(line) for line in (tmp_path / "questions.jsonl").read_text().splitlines()]
        assert [r["answer"] for r in rows] == [e.answer for e in data["heldout"][:20]]


def test_a_cloze_context_question_holds_the_placeholder_where_the_answer_was():
    from genfeat.data.qa import context_question

    p = ("a", "b", "c", "d", "e")
    assert context_question(p, (2, 2), 1, cbt.PLACEHOLDER) == ("b", cbt.PLACEHOLDER, "d")
    assert context_question(p, (2, 2), 1) == ("b", "d")


def test_sense_counts_and_the_noun_lexicon(tmp_path):
    from genfeat.data.wordnet import sense_counts

    (tmp_path / "index.noun").write_text("  1 licence header\nhouse n 12 4 @ ~ #p %p 12 2 a b\nlady n 3 1 @ 3 0 a\n")
    (tmp_path / "index.verb").write_text("house v 2 1 @ 2 0 a\nwalk v 10 1 @ 10 0 a\n")
    (tmp_path / "index.adj").write_text("")
    (tmp_path / "index.adv").write_text("")
    (tmp_path / "noun.exc").write_text("ladies lady\n")
    (tmp_path / "verb.exc").write_text("")
    assert sense_counts("noun", tmp_path) == {"house": 12, "lady": 3}
    lex = cbt.NounLexicon.load(tmp_path)
    assert lex.is_common_noun("house") and lex.is_common_noun("houses") and lex.is_common_noun("ladies")
    assert not lex.is_common_noun("walk") and not lex.is_common_noun("walked")


def test_the_registry_builds_the_cloze_set(monkeypatch):
    from genfeat.data import built_tasks

    monkeypatch.setitem(built_tasks.CLOZES, "cbt-books", lambda seed: ("cloze", seed))
    assert built_tasks.build("cbt-books", 3) == ("cloze", 3)


REAL = os.environ.get("GENFEAT_REAL_DATA")


@pytest.mark.skipif(not REAL or not all((Path(REAL or ".") / s).is_dir() for s in (*cbt.SOURCES, "wordnet")),
                    reason="GENFEAT_REAL_DATA with austen, kjv, bbc-news and wordnet")
def test_the_real_set_is_the_recorded_one(monkeypatch):
    """The recorded sizes and sha256 of docs/results/data_tasks.md, bit for bit."""
    monkeypatch.setenv("GENFEAT_DATA", REAL)
    c = cbt.cbt_books()
    z = c.stats()
    assert (z["train"], z["valid"], z["test"]) == (8788, 1147, 1281)
    assert c.checksum == "461f70ecac284cc84a108052a4621b593eee93486e6506198842f593aad0fd44"
    units = {e.article for s in cbt.SPLITS for e in c.splits[s]}
    for a, b in ((a, b) for a in cbt.SPLITS for b in cbt.SPLITS if a < b):
        assert not {e.article for e in c.splits[a]} & {e.article for e in c.splits[b]}  # book-disjoint
    assert {u.split("/")[0] for u in units} == {"austen", "kjv", "bbc"}


def test_word_vectors_start_d_and_g_embeddings(tmp_path):
    from genfeat.errors import ConfigError
    from genfeat.models.gdan import build_gdan
    from genfeat.recipes import gdan

    qs = cbt.unit_questions(cbt.Unit("book/one", "train", sentences(30)), LEXICON, seed=0)
    vocab = QAVocab.build(qs)
    (tmp_path / "vec.txt").write_text("anna 1 2 3\nriver 4 5 6\nnot-in-vocab 7 8 9\n")
    cfg = gdan.cbt_books()
    cfg = dataclasses.replace(cfg, method="gdan", model=dataclasses.replace(
        cfg.model, d_embed=3, reader_hidden=4, generator_hidden=4, word_vectors=str(tmp_path / "vec.txt")))
    torch.manual_seed(0)
    model = build_gdan(cfg.model, vocab, cfg.data.out_vocab, generator=True, tags=True, domain=False)
    for embed in (model.reader.embed, model.generator.embed):
        assert embed.weight[vocab["anna"]].tolist() == [1, 2, 3] and embed.weight[vocab["river"]].tolist() == [4, 5, 6]
        assert embed.weight[vocab["boris"]].abs().sum() > 0 and embed.weight[0].abs().sum() == 0  # random; padding
    with pytest.raises(ConfigError, match="d_embed 3"):
        build_gdan(dataclasses.replace(cfg.model, d_embed=5), vocab, cfg.data.out_vocab, True, True, False)
