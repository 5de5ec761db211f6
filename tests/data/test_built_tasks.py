"""The tasks built from offline sources (`data/built_tasks.py`): Debian package sections and the two WordNet
tasks, on files written here in the real formats (a Packages / Translation-en pair, WordNet data lines), and the
real sources where GENFEAT_REAL_DATA points at a cache that holds them."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from genfeat.data.built_task import sized_split, splits_checksum, write_tsv
from genfeat.data.built_tasks import BUILDERS, build_task
from genfeat.data.debian_sections import debian_sections, description_text, read_deb822
from genfeat.data.wordnet import inflections, lexname_task, mentions, parse_gloss, read_synsets, wic_pairs, wic_task
from genfeat.errors import ConfigError, DataError

SECTIONS = ["games", "games", "games", "python", "python", "python", "libs", "libs", "libs", "utils"]


@pytest.fixture
def lists(tmp_path) -> Path:
    pk, tr = [], []
    for i, sec in enumerate(SECTIONS):
        area = "contrib/" if i == 1 else ""
        pk.append(f"Package: pkg{i:02d}\nVersion: 1.0\nDescription: short {i}\nDescription-md5: m{i}\n"
                  f"Tag: role::program,\n use::gameplaying\nSection: {area}{sec}\n")
        text = {7: "Shared\n same text", 8: "Shared\n same text", 4: "Twin\n text", 5: "Twin\n text"}.get(
            i, f"Synopsis {i}\n A {sec} package\n .\n  * number {i}")
        tr.append(f"Package: pkg{i:02d}\nDescription-md5: m{i}\nDescription-en: {text}\n")
    pk.append("Package: pkg00\nVersion: 2.0\nDescription-md5: other\nSection: utils\n")  # a second list: ignored
    tr.append("Package: pkg06\nDescription-md5: m6\nDescription-en: Later\n ignored\n")  # the first record wins
    pk.append("Package: pkg10\nDescription-md5: m10\nSection: utils\n")
    tr.append("Package: pkg10\nDescription-md5: m10\nDescription-en: Shared\n same text\n")  # same text, other section
    (tmp_path / "Packages").write_text("\n".join(pk))
    (tmp_path / "Translation-en").write_text("\n".join(tr))
    return tmp_path


def test_deb822_and_description_text(lists):
    paras = list(read_deb822(lists / "Packages"))
    assert len(paras) == 12 and paras[0]["Tag"] == "role::program,\nuse::gameplaying"
    assert description_text("Synopsis\n line one\n .\n  * two") == "Synopsis. line one * two"
    assert description_text("  Only   a synopsis") == "Only a synopsis"
    bad = lists / "bad"
    bad.write_text(" continuation first\n")
    with pytest.raises(DataError, match="continuation"):
        list(read_deb822(bad))


def test_debian_sections_joins_dedupes_and_splits(lists):
    t = debian_sections(lists, seed=0, min_count=2, n_valid=1, n_test=1)
    texts = sorted(a for k in ("train", "valid", "test") for a, _ in t.splits[k][0])
    # pkg04 / pkg05 (python) share a text: kept once; pkg07, pkg08 (libs) and pkg10 (utils) share one: all
    # dropped; then libs (pkg06) and utils (pkg09; pkg00 keeps its first record, games) are below min_count
    assert t.classes == ["games", "python"]
    assert texts == ["Synopsis 0. A games package * number 0", "Synopsis 1. A games package * number 1",
                     "Synopsis 2. A games package * number 2", "Synopsis 3. A python package * number 3", "Twin. text"]
    assert t.notes["dropped_conflicting_texts"] == 3 and t.notes["dropped_duplicate_texts"] == 1
    assert debian_sections(lists, seed=0, min_count=2, n_valid=1, n_test=1).checksum == t.checksum
    assert debian_sections(lists, seed=1, min_count=2, n_valid=1, n_test=1).checksum != t.checksum


def test_sized_split_is_stratified_disjoint_and_complete():
    y = np.repeat(np.arange(4), [400, 300, 200, 100])
    s = sized_split(y, 0, 100, 200)
    assert sorted(np.concatenate(list(s.values())).tolist()) == list(range(1000))
    assert len(s["valid"]) == 100 and len(s["test"]) == 200
    assert np.bincount(y[s["test"]]).tolist() == [80, 60, 40, 20]
    assert (sized_split(y, 0, 100, 200)["test"] == s["test"]).all()
    with pytest.raises(DataError):
        sized_split(y, 0, 600, 500)


WN = {  # data.noun / data.verb lines in the wndb(5WN) format (the licence header lines start with two spaces)
    "noun": ["  1 This software and database is being provided",
             "00001 05 n 02 dog 0 domestic_dog 0 000 | a domesticated canine; \"the dog barked all night\"; "
             "\"dogs chase cats\"",
             "00002 05 n 01 cat 0 000 | a feline; \"the cat purred\"",
             "00003 06 n 01 dog 1 000 | a metal support; \"the logs rested on the dogs\"",
             "00004 18 n 01 bank 0 000 | a person who banks; \"the bank was friendly\"",
             "00005 06 n 01 bank 1 000 | a building; \"the banks closed\"; \"he walked to the bank\"",
             "00006 06 n 01 chair 0 000 | a seat",
             "00007 06 n 02 smash_hit 0 blockbuster 0 000 | a big success",
             "00009 06 n 02 smash 0 crash 0 000 | a collision",
             "00010 06 n 02 hit 0 strike 0 000 | a blow",
             "00008 06 n 02 physical_object 0 object 0 000 | a thing (the answer would be the head: not an item)"],
    "verb": ["00101 38 v 02 run 0 go 0 000 01 + 02 00 | move fast; \"she ran home\"; \"they run daily\"",
             "00102 41 v 01 run 1 000 01 + 02 00 | be a candidate; \"he is running for office\"",
             "00103 38 v 01 walk 0 000 01 + 02 00 | go on foot"],
}


@pytest.fixture
def wordnet(tmp_path) -> Path:
    for pos, lines in WN.items():
        (tmp_path / f"data.{pos}").write_text("\n".join(lines) + "\n")
    (tmp_path / "verb.exc").write_text("ran run\n")
    return tmp_path


def test_wordnet_reader(wordnet):
    nouns = read_synsets("noun", wordnet)
    assert [s.offset for s in nouns] == [1, 2, 3, 4, 5, 6, 7, 9, 10, 8]
    assert nouns[0].lemmas == ("dog", "domestic dog") and nouns[0].lexname == "noun.animal"
    assert nouns[0].definition == "a domesticated canine" and nouns[0].examples == ("the dog barked all night",
                                                                                   "dogs chase cats")
    assert nouns[5].gloss == "a seat" and read_synsets("verb", wordnet)[1].lexname == "verb.social"
    assert parse_gloss('x y; "a b"; "c"') == ("x y", ("a b", "c"))
    (wordnet / "data.adv").write_text("00001 xx r\n")
    with pytest.raises(DataError, match="data.adv:1"):
        read_synsets("adv", wordnet)


def test_inflections_and_mentions():
    assert {"ran", "runs", "running", "run"} <= inflections("run", "verb", {"run": {"ran"}})
    assert {"stopped", "stopping"} <= inflections("stop", "verb", {})
    assert {"babies"} <= inflections("baby", "noun", {}) and "looked up" in inflections("look up", "verb", {})
    assert mentions("She RAN home.", {"ran"}) and not mentions("a brand new", {"bran"})


def test_lexname_task(wordnet):
    t = lexname_task(wordnet, min_count=2, n_valid=1, n_test=1)
    assert t.classes == ["noun.animal", "noun.artifact", "verb.motion"]  # person and social: one synset each
    texts = [a for k in ("train", "valid", "test") for a, _ in t.splits[k][0]]
    assert len(texts) == 11 and 'a feline; "the cat purred"' in texts


def test_turney_style_phrase_items(wordnet):
    from genfeat.data.wordnet import phrase_items

    [item] = phrase_items(wordnet, seed=0)
    assert (item.bigram, item.answer) == ("smash hit", "blockbuster")
    assert item.distractors[:2] == ("crash", "strike") and len(item.distractors) == 4  # the words' synonyms
    assert not {"smash", "hit", "blockbuster"} & set(item.distractors)  # never the bigram's words or the answer
    assert phrase_items(wordnet, seed=0) == phrase_items(wordnet, seed=0)
    [known] = phrase_items(wordnet, seed=0, vocabulary={"smash", "hit", "blockbuster", "crash", "dog", "cat", "bank"})
    assert known.distractors[0] == "crash" and set(known.distractors[1:]) <= {"dog", "cat", "bank"}  # no "strike"
    assert phrase_items(wordnet, seed=0, vocabulary={"smash", "blockbuster"}) == []  # "hit" unknown


def test_wic_pairs_balance_and_split_by_lemma(wordnet):
    pairs = wic_pairs(wordnet, seed=0)
    same = [p for p in pairs if p[3] == 1]
    assert ("bank", "the banks closed", "he walked to the bank", 1) in same  # an inflected form counts
    assert ("run", "she ran home", "they run daily", 1) in same  # the exception list: ran -> run
    assert ("dog", "the dog barked all night", "dogs chase cats", 1) in same
    assert len(same) == len(pairs) - len(same)  # one different-sense pair per same-sense pair of the lemma
    assert all(p[0] == "dog" for p in pairs if p[3] == 0 and "logs" in p[1] + p[2])
    t = wic_task(wordnet, seed=0, valid_share=0.34, test_share=0.34)
    lemmas = {k: {a.split(":")[0] for a, _ in t.splits[k][0]} for k in t.splits}
    assert sum(map(len, lemmas.values())) == 3 and not (lemmas["train"] & lemmas["test"])
    assert t.splits["test"][0][0][0].split(": ", 1)[1] in {p[1] for p in pairs}


def test_checksum_tsv_and_registry(tmp_path, lists):
    t = debian_sections(lists, min_count=2, n_valid=1, n_test=1)
    files = write_tsv(t, tmp_path / "out")
    assert [f.name for f in files] == ["train.tsv", "valid.tsv", "test.tsv"]
    assert files[0].read_text().splitlines()[0] == "text_a\ttext_b\tlabel"
    flipped = {k: (p, y.copy()) for k, (p, y) in t.splits.items()}
    flipped["test"][1][0] = 1 - flipped["test"][1][0]
    assert splits_checksum(flipped) != t.checksum
    assert set(BUILDERS) == {"debian-sections", "wordnet-lexnames", "wordnet-wic"}
    with pytest.raises(ConfigError, match="built tasks"):
        build_task("glue")


REAL = os.environ.get("GENFEAT_REAL_DATA")


@pytest.mark.skipif(not REAL or not (Path(REAL or ".") / "wordnet").is_dir(), reason="GENFEAT_REAL_DATA with wordnet")
def test_real_wordnet_tasks_are_the_recorded_ones(monkeypatch):
    """The WordNet 3.0 files (pinned by data.noun's sha256) give the recorded tasks, bit for bit."""
    monkeypatch.setenv("GENFEAT_DATA", REAL)
    lex, wic = build_task("wordnet-lexnames"), build_task("wordnet-wic")
    assert lex.describe()["sizes"] == {"train": 92097, "valid": 1001, "test": 1999} and len(lex.classes) == 38
    assert lex.checksum == "ceb50adcafd7907a1c95cebf30377f8f698af9aa1fcbdb07cc89586315e4755e"
    assert wic.describe()["sizes"] == {"train": 2842, "valid": 374, "test": 556}
    assert wic.checksum == "20d43782b509bed10f173f49c87180981145e45afc68797cdd3cc37ead4f63ea"
