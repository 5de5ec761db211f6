"""The news-pattern builder's rules (`data.news_patterns`) and the recipe on news text (preset news, shortened)."""

import json

import numpy as np
import pytest

from genfeat.cli import main
from genfeat.data.news_patterns import mentions, news_patterns, sentence_patterns, tokens
from tests.recipe_data import _write_bbc

PEOPLE = ["Alan Smith", "Mary Jones", "Tony Blair", "Gordon Brown", "Kate Bush", "John Peel"]
PLACES = ["London", "Paris", "New York", "Berlin"]
VERBS = ["met", "visited", "left", "praised"]


@pytest.fixture
def news_bbc():
    def article(rng, vocab, i):
        sents = [f"Yesterday {rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(PLACES)} again." for _ in range(6)]
        return f"{rng.choice(vocab).title()} news\n\n" + " ".join(sents)
    return _write_bbc(article)


def test_mention_and_pattern_rules():
    toks = tokens("The talks in New York's harbour ended, Tony Blair said to I. Smith.")
    assert toks[:6] == ["The", "talks", "in", "New", "York", "'s"]
    spans = [" ".join(toks[a:b]) for a, b in mentions(toks)]
    assert spans == ["New York", "Tony Blair", "Smith"]  # "The" starts the sentence; "I" is one letter
    assert mentions(tokens("Acme Corp said no."))[0] == (1, 2)  # a run at the start loses its first token
    got = sentence_patterns("Yesterday Alan Smith met Acme Corp in London.")
    assert got == [("$ARG1 met $ARG2", "Alan Smith", "Acme Corp"),
                   ("$ARG1 met acme corp in $ARG2", "Alan Smith", "London"),
                   ("$ARG1 in $ARG2", "Acme Corp", "London")]
    assert sentence_patterns("Yesterday Alan Smith met Acme Corp in London.", max_tokens=4) == [
        ("$ARG1 met $ARG2", "Alan Smith", "Acme Corp"), ("$ARG1 in $ARG2", "Acme Corp", "London")]
    assert sentence_patterns("So Alan Smith Jones left.") == []  # one mention: no pair


def test_news_matrix_is_deterministic_and_filtered(news_bbc):
    m = news_patterns("bbc-news")
    assert m.checksum() == news_patterns("bbc-news").checksum()
    assert set(m.row_names) == {f"$ARG1 {v} $ARG2" for v in VERBS}  # every (person, place) pair, in order
    assert all(n.split("\t")[0] in PEOPLE and n.split("\t")[1] in PLACES for n in m.pair_names)
    strict = news_patterns("bbc-news", min_pairs=10 ** 6)
    assert strict.n_rows == 0 or strict.n_rows < m.n_rows


def test_news_recipe_trains_and_scores_patterns(news_bbc, tmp_path, capsys):
    vectors = tmp_path / "vectors.txt"  # GloVe's text format, 8 wide, for the patterns' words
    rng = np.random.default_rng(0)
    vectors.write_text("".join(f"{w} " + " ".join(f"{x:.4f}" for x in rng.standard_normal(8)) + "\n"
                               for w in VERBS))
    out = tmp_path / "news"
    assert main(["run", "universal_schema", "--preset", "news", "--data.corpus", "bbc-news", "--data.vectors",
                 str(vectors), "--model.d_model", "8", "--model.d_target", "8", "--model.n_head", "2",
                 "--model.d_inner", "16", "--data.batch_size", "8", "--train.max_steps", "6",
                 "--train.eval_every", "3", "--uschema.max_steps", "4", "--uschema.eval_every", "2",
                 "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["dataset"]["patterns"] == len(VERBS) and "valid_loss" in s
    assert (out / "phases" / "uschema" / "phase.json").is_file()  # Algorithm 2's USchema start
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("\n".join(f"{lab}\tv\t$ARG1 {a} $ARG2\t$ARG1 {b} $ARG2\t1\t2\t3\t4" for lab, a, b in
                               ((">", "met", "visited"), ("N", "left", "praised"), ("<", "met", "left"))) + "\n")
    capsys.readouterr()
    assert main(["eval", "entailment", str(out), "--pairs", str(pairs), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["methods"]
    assert set(got) == {"Random", "Freq Diff", f"multi_facet K=5 transformer ({out})"}
    assert got["Random"]["ap"] == pytest.approx(2 / 3)  # two of the three pairs are entailments
    assert got["Freq Diff"]["micro"] == 0.5  # counts 2 < 3: the original is the premise, right for ">", not "<"
