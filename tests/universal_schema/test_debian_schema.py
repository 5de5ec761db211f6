"""The Debian universal-schema builder's rules (`data.debian_schema`) on a small archive in the real formats."""

import numpy as np
import pytest

from genfeat.data.debian_schema import RELATIONS, debian_schema
from genfeat.data.universal_schema import RELATION
from tests.test_citation import _write_lists

PACKAGES = [
    ("gedit", {"Maintainer": "a <a@x>", "Source": "gedit"}, "text editor", "edits text\n.\nit works with python3"),
    ("gedit-plugin-x", {"Maintainer": "a <a@x>", "Source": "gedit-plugins", "Enhances": "gedit"},
     "plugin for gedit", "adds x. Use it with python3 and gedit."),
    ("libfoo1", {"Maintainer": "b <b@x>", "Source": "foo"}, "the foo library", "does foo"),
    ("libfoo-dev", {"Maintainer": "b <b@x>", "Source": "foo", "Depends": "libfoo1 (= 1.0), dog | cat"},
     "development files for libfoo1", "headers"),
    ("python3", {"Maintainer": "c <c@x>", "Source": "python3-defaults", "Recommends": "libfoo1:any"},
     "interpreter", "python3 for dog lovers"),
    ("dog", {"Maintainer": "d <d@x>", "Source": "dog", "Conflicts": "gedit"}, "plugin for dog", "a dog tool"),
    ("oldfoo", {"Maintainer": "b <b@x>", "Source": "foo", "Depends": "libfoo1"}, "transitional package for libfoo1",
     "dummy"),
]


@pytest.fixture
def archive(tmp_path):
    _write_lists(tmp_path, PACKAGES)
    wn = tmp_path / "wn"
    wn.mkdir()
    (wn / "data.noun").write_text("00001 05 n 01 dog 0 000 | a canine\n00002 05 n 01 cat 0 000 | a feline\n")
    for pos in ("verb", "adj", "adv"):
        (wn / f"data.{pos}").write_text("")
    return tmp_path, wn


def test_debian_schema_builds_by_its_rules(archive):
    root, wn = archive
    m = debian_schema(root, wn, seed=0, test_fraction=0.0, valid_fraction=0.0)
    pats = {name: {m.pair_names[j] for j in m.cells[m.cells[:, 0] == r, 1]} for r, name in enumerate(m.row_names)}
    assert pats["$ARG1 plugin for $ARG2"] == {"gedit-plugin-x\tgedit"}  # "dog" is a common word: no mention
    assert "$ARG1 for $ARG2" not in pats  # "python3 for dog lovers"
    assert pats["$ARG1 development files for $ARG2"] == {"libfoo-dev\tlibfoo1"}
    assert pats["$ARG1 and $ARG2"] == {"python3\tgedit"}  # two mentions of one long-description sentence
    assert m.row_names[-len(RELATIONS):] == RELATIONS and (m.row_types[-len(RELATIONS):] == RELATION).all()
    assert pats["debian:enhances"] == {"gedit-plugin-x\tgedit"}
    assert pats["debian:depends"] == {"libfoo-dev\tlibfoo1"}  # the transitional oldfoo is gone; dog | cat too
    assert "libfoo-dev\tlibfoo1" in pats["debian:same-source"]
    assert not any("oldfoo" in p for p in m.pair_names)
    assert pats["debian:recommends"] == set()  # python3 -> libfoo1 never co-occurs in text: not a column
    assert len(m.held_out) == 0 and (m.pair_split == 0).all()


def test_held_out_heads_keep_their_text_and_lose_their_kb_cells(archive):
    root, wn = archive
    full = debian_schema(root, wn, seed=0, test_fraction=0.0, valid_fraction=0.0)
    m = debian_schema(root, wn, seed=5, test_fraction=0.5, valid_fraction=0.0)  # a seed that holds out a KB cell
    assert m.checksum() == debian_schema(root, wn, seed=5, test_fraction=0.5, valid_fraction=0.0).checksum()
    held = m.pair_split != 0
    assert held.any() and not held.all() and len(m.held_out) > 0
    heads = [n.split("\t")[0] for n in m.pair_names]
    assert len({h for h, s in zip(heads, m.pair_split, strict=True) if s}) >= 1
    is_kb = m.row_types[m.cells[:, 0]] == RELATION
    assert not held[m.cells[is_kb, 1]].any()  # no KB cell of a held-out pair trains
    assert held[m.cells[~is_kb, 1]].any()  # their text does
    kb_full = {tuple(c) for c in full.cells if full.row_types[c[0]] == RELATION}
    assert {tuple(c) for c in m.held_out} | {tuple(c) for c in m.cells[is_kb]} == kb_full
    assert np.all(m.pair_split[m.held_out[:, 1]] != 0)
    groups = {"gedit-plugin-x": "gedit-plugins", "libfoo-dev": "foo", "libfoo1": "foo"}
    by = {}
    for h, s in zip(heads, m.pair_split, strict=True):  # one source group, one split
        by.setdefault(groups.get(h, h), set()).add(int(s))
    assert all(len(v) == 1 for v in by.values())


@pytest.mark.parametrize("init", ["uschema", "random"])
def test_debian_recipe_extracts_relations_of_held_out_heads(archive, tmp_path, monkeypatch, init):
    import json

    from genfeat.cli import main
    from genfeat.data import schema_sources

    root, wn = archive
    monkeypatch.setattr(schema_sources, "debian_schema", lambda seed: debian_schema(root, wn, seed=5, test_fraction=0.5,
                                                                       valid_fraction=0.0))
    out = tmp_path / init
    assert main(["run", "universal_schema", "--preset", "debian", "--data.pair_init", init, "--data.vectors",
                 str(_vectors(tmp_path)), "--model.d_model", "8", "--model.d_target", "8", "--model.n_head", "2",
                 "--model.d_inner", "16", "--data.batch_size", "2", "--data.valid_share", "0.3",
                 "--train.max_steps", "4", "--train.eval_every", "2", "--uschema.max_steps", "2",
                 "--uschema.eval_every", "2", "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert {"test_re_p", "test_re_r", "test_re_f1", "valid_re_f1"} <= set(s)
    assert ("test_ensemble_re_f1" in s) == (init == "uschema")
    assert s["relation_extraction"]["test_gold"] == len(debian_schema(root, wn, seed=5, test_fraction=0.5,
                                                                      valid_fraction=0.0).held_out)


def _vectors(tmp_path):
    path = tmp_path / "vectors.txt"
    rng = np.random.default_rng(0)
    path.write_text("".join(f"{w} " + " ".join(f"{x:.3f}" for x in rng.standard_normal(8)) + "\n"
                            for w in ("plugin", "for", "development", "files", "and")))
    return path
