"""A universal-schema matrix from the Debian archive (`genfeat data build debian-schema`; thesis C §3.3's distant
supervision transferred to a KB anyone can download): package pairs as entity pairs, the archive's relations as
KB rows, the words between two package mentions in a description as sentence patterns. Deterministic for a given
archive snapshot, WordNet and seed.

    entities    binary packages described in Translation-en (`debian_sections.described_packages`), one record
                per name (Packages' first), transitional / dummy packages dropped
    mentions    a token of a description (lower-cased; `TOKEN`) that equals another package's name, unless the
                name is a common word: a stop word or a WordNet 3.0 lemma, and without a digit or one of "+ . -"
                ("time", "file", "make", "and" never mention a package; "python3", "libxml2", "gcc" do)
    patterns    in the synopsis, the described package P is $ARG1 at its start: "development files for libfoo"
                -> "$ARG1 development files for $ARG2" with the pair (P, libfoo); in the long description, every two
                mentions Q1 ... Q2 of one sentence -> "$ARG1 <words between> $ARG2" with (Q1, Q2) (at least one
                word between); at most `max_tokens` (20) tokens with the placeholders (the reference's limit)
    relations   debian:depends (with Pre-Depends), debian:recommends, debian:suggests, debian:conflicts,
                debian:breaks, debian:replaces, debian:provides, debian:enhances (P's field names Q; versions,
                architectures and alternatives as `debian_citations.dependency_names`), debian:same-source (P and Q
                built from one Source, both orders)
    columns     the entity pairs that co-occur with a pattern; a KB cell for each of their relations
    split       held-out heads as TAC slot filling's queries: `test_fraction` (10 %) and `valid_fraction` (10 %)
                of the packages, drawn by Source group (a library and its -dev package stay together); a pair whose
                head is held out is a valid / test pair: its KB cells are kept out of the training cells
                (`held_out`) and its text cells stay (what the extractor reads at test time)
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from genfeat.data.debian_citations import _DUMMY, dependency_names
from genfeat.data.debian_sections import described_packages, description_parts
from genfeat.data.sentence_split import split_sentences
from genfeat.data.sources import require
from genfeat.data.stop_words import stop_list
from genfeat.data.universal_schema import SchemaMatrix, held_out_split, kb_matrix

TOKEN = re.compile(r"[a-z0-9][a-z0-9+.-]*[a-z0-9+]|[a-z0-9]|[^\sa-z0-9]")
FIELDS = {"depends": ("Depends", "Pre-Depends"), "recommends": ("Recommends",), "suggests": ("Suggests",),
          "conflicts": ("Conflicts",), "breaks": ("Breaks",), "replaces": ("Replaces",),
          "provides": ("Provides",), "enhances": ("Enhances",)}
RELATIONS = [*(f"debian:{r}" for r in FIELDS), "debian:same-source"]
_MARKED = re.compile(r"[0-9+.-]")


def common_words(wordnet_root: str | Path | None = None) -> set[str]:
    """Stop words and WordNet 3.0's lemmas (one-word ones, lower case)."""
    from genfeat.data.wordnet import read_synsets

    lemmas = {lem for pos in ("noun", "verb", "adj", "adv") for s in read_synsets(pos, wordnet_root)
              for lem in s.lemmas if " " not in lem}
    return lemmas | set(stop_list("english"))


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


def debian_schema(root: str | Path | None = None, wordnet_root: str | Path | None = None, seed: int = 0,
                  max_tokens: int = 20, test_fraction: float = 0.1, valid_fraction: float = 0.1) -> SchemaMatrix:
    base = Path(root) if root is not None else require("debian-packages", "Packages", "Translation-en")
    described = described_packages(base)
    names = [n for n in sorted(described) if not _DUMMY.search(description_parts(described[n][1])[0])]
    known = set(names)
    common = common_words(wordnet_root)
    nameable = {n for n in names if _MARKED.search(n) or n not in common}

    def mentions(toks: list[str], own: str) -> list[int]:
        return [i for i, t in enumerate(toks) if t in nameable and t != own]

    pairs_of: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for p in names:
        synopsis, body = description_parts(described[p][1])
        toks = tokens(synopsis)
        for i in mentions(toks, p):
            if 1 <= i and i + 2 <= max_tokens:
                pairs_of["$ARG1 " + " ".join(toks[:i]) + " $ARG2"].add((p, toks[i]))
        for sentence in split_sentences(body):
            toks = tokens(sentence)
            at = mentions(toks, "")
            for x, a in enumerate(at):
                for b in at[x + 1:]:
                    if b - a >= 2 and b - a + 1 <= max_tokens and toks[a] != toks[b]:
                        pairs_of["$ARG1 " + " ".join(toks[a + 1: b]) + " $ARG2"].add((toks[a], toks[b]))
    kb: dict[tuple[str, str], set[str]] = defaultdict(set)
    source = {n: described[n][0].get("Source", n).split(" ", 1)[0] for n in names}
    by_source: dict[str, list[str]] = defaultdict(list)
    for n in names:
        by_source[source[n]].append(n)
        para = described[n][0]
        for rel, fields in FIELDS.items():
            for f in fields:
                for q in dependency_names(para.get(f, "")):
                    if q in known and q != n:
                        kb[n, q].add(f"debian:{rel}")
    for members in by_source.values():
        for a in members:
            for b in members:
                if a != b:
                    kb[a, b].add("debian:same-source")

    group_split = held_out_split(list(by_source), test_fraction, valid_fraction, seed)
    pairs = {pq for ps in pairs_of.values() for pq in ps}
    return kb_matrix("debian-schema", pairs_of, kb, RELATIONS, {(p, q): group_split[source[p]] for p, q in pairs})
