"""WordNet's pointers (`data.wordnet`) and the WordNet universal-schema builder's rules (`data.wordnet_schema`)."""

import pytest

from genfeat.data.universal_schema import RELATION
from genfeat.data.wordnet import Pointer, read_synsets
from genfeat.data.wordnet_schema import RELATIONS, wordnet_schema

NOUNS = [  # wndb(5WN) lines with pointers: "p_cnt [symbol offset pos source/target]..."
    "00001 05 n 02 dog 0 hound 0 002 @ 00002 n 0000 #m 00004 n 0000 | a domesticated canine; "
    "\"the cat chased the dog\"",
    "00002 05 n 01 canine 0 001 ~ 00001 n 0000 | a carnivore",
    "00003 05 n 01 cat 0 001 @ 00002 n 0000 | a domesticated feline; \"the cat saw the dog\"",
    "00004 05 n 01 pack 0 001 %m 00001 n 0000 | a domesticated group of animals",
    "00005 05 n 01 feline 0 000 | a cat-like carnivore",
    "00006 05 n 01 carnivore 0 000 | a meat eater",
    "00007 05 n 01 group 0 000 | a number of things",
    "00008 05 n 01 animals 0 000 | beasts",
    "00009 05 n 01 runner 0 001 + 00101 v 0101 | a person who runs",
]
VERBS = ["00101 38 v 01 run 0 002 + 00009 n 0101 + 00001 n 0102 01 + 02 00 | move fast; "
         "\"she runs with the dog\""]  # derivations: run -> runner, run -> hound (the dog synset's second word)


@pytest.fixture
def wn(tmp_path):
    (tmp_path / "data.noun").write_text("\n".join(NOUNS) + "\n")
    (tmp_path / "data.verb").write_text("\n".join(VERBS) + "\n")
    for pos in ("adj", "adv"):
        (tmp_path / f"data.{pos}").write_text("")
    (tmp_path / "verb.exc").write_text("ran run\n")
    return tmp_path


def test_the_reader_keeps_the_pointers(wn):
    dog = read_synsets("noun", wn)[0]
    assert dog.pointers == (Pointer("hypernym", 2, "n", 0, 0), Pointer("member_holonym", 4, "n", 0, 0))
    run = read_synsets("verb", wn)[0]
    assert run.pointers == (Pointer("derivation", 9, "n", 1, 1), Pointer("derivation", 1, "n", 1, 2))  # lexical
    assert read_synsets("noun", wn)[4].pointers == ()


def test_wordnet_schema_builds_by_its_rules(wn):
    m = wordnet_schema(wn, seed=0, min_pairs=1, test_fraction=0.0, valid_fraction=0.0)
    pats = {name: {m.pair_names[j] for j in m.cells[m.cells[:, 0] == r, 1]} for r, name in enumerate(m.row_names)}
    assert pats["$ARG1 a domesticated $ARG2"] == {"dog\tcanine", "cat\tfeline", "pack\tgroup"}
    assert pats["$ARG1 chased the $ARG2"] == {"cat\tdog"}  # an example of dog's: another lemma, then dog
    assert pats["$ARG1 saw the $ARG2"] == {"cat\tdog"}
    assert pats["$ARG1 with the $ARG2"] == {"run\tdog"}  # "runs" is a form of run
    assert m.row_names[-len(RELATIONS):] == RELATIONS and (m.row_types[-len(RELATIONS):] == RELATION).all()
    assert pats["wordnet:hypernym"] == {"dog\tcanine"}  # cat -> canine is not in any text: not a column
    assert "pack\tgroup" not in pats["wordnet:member_meronym"]  # the pointer goes to dog, not to group
    assert "run\tdog" not in pats["wordnet:derivation"]  # a lexical pointer relates its two words only (run, hound)
    assert not any(p.startswith("hound") for p in m.pair_names)  # the definition's $ARG1 is the first lemma
    strict = wordnet_schema(wn, seed=0, min_pairs=2, test_fraction=0.0, valid_fraction=0.0)
    assert set(strict.row_names) - set(RELATIONS) == {"$ARG1 a domesticated $ARG2"}


def test_wordnet_schema_holds_out_heads(wn):
    m = wordnet_schema(wn, seed=0, min_pairs=1, test_fraction=0.34, valid_fraction=0.0)
    assert m.checksum() == wordnet_schema(wn, seed=0, min_pairs=1, test_fraction=0.34, valid_fraction=0.0).checksum()
    heads = {}
    for name, s in zip(m.pair_names, m.pair_split, strict=True):
        heads.setdefault(name.split("\t")[0], set()).add(int(s))
    assert all(len(v) == 1 for v in heads.values()) and {2} in heads.values() and {0} in heads.values()
