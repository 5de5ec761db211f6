"""A universal-schema matrix from WordNet 3.0 (`genfeat data build wordnet-schema`; thesis C §3.3's distant
supervision with WordNet as the KB): lemma pairs as entity pairs, WordNet's pointer types as KB rows, the words
of glosses and example sentences between two lemma mentions as sentence patterns. Deterministic for the
database files and seed.

    entities    one-word noun and verb lemmas of three or more letters that are not stop words
    relations   every pointer type between two such lemmas (`wordnet.POINTERS`: wordnet:hypernym, wordnet:part_meronym,
                wordnet:derivation, ...): a semantic pointer relates every lemma of one synset to every lemma of
                the other, a lexical one its two words
    patterns    in a noun or verb synset's definition, the synset's first lemma is $ARG1 at its start and each
                later entity token is $ARG2: "a domesticated canine" -> "$ARG1 a domesticated $ARG2" with (dog,
                canine); in an example sentence, a form of one of the synset's lemmas (`wordnet.inflections`) and
                another entity token in either order, the words between them; at least one word between, at most
                `max_tokens` (20) tokens with the placeholders; patterns seen with fewer than `min_pairs` (2)
                distinct pairs are dropped (most definitions are unique word sequences)
    columns     the entity pairs of the kept patterns; a KB cell for each of their relations
    split       held-out heads (`test_fraction` 10 %, `valid_fraction` 10 % of the head lemmas, seeded): their
                pairs' KB cells are the gold (`held_out`), their text cells stay
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from genfeat.data.stop_words import stop_list
from genfeat.data.universal_schema import SchemaMatrix, held_out_split, kb_matrix
from genfeat.data.wordnet import POINTERS, POS_FILES, Synset, exceptions, inflections, read_synsets

TOKEN = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*|[^\sa-z0-9]")
RELATIONS = sorted(f"wordnet:{name}" for name in set(POINTERS.values()))


def wordnet_schema(root: str | Path | None = None, seed: int = 0, max_tokens: int = 20, min_pairs: int = 2,
                   test_fraction: float = 0.1, valid_fraction: float = 0.1) -> SchemaMatrix:
    stop = set(stop_list("english"))
    synsets: dict[tuple[str, int], Synset] = {}
    for pos in ("noun", "verb", "adj", "adv"):
        for s in read_synsets(pos, root):
            synsets[pos, s.offset] = s

    def entity(lemma: str) -> bool:
        return " " not in lemma and len(lemma) >= 3 and lemma.isalpha() and lemma not in stop

    entities = {lem for (pos, _), s in synsets.items() if pos in ("noun", "verb") for lem in s.lemmas if entity(lem)}

    kb: dict[tuple[str, str], set[str]] = defaultdict(set)
    for s in synsets.values():
        for p in s.pointers:
            t = synsets.get((POS_FILES[p.pos], p.offset))
            if t is None:
                continue
            heads = s.lemmas if not p.source else s.lemmas[p.source - 1: p.source]
            tails = t.lemmas if not p.target else t.lemmas[p.target - 1: p.target]
            for a in heads:
                for b in tails:
                    if a != b and a in entities and b in entities:
                        kb[a, b].add(f"wordnet:{p.relation}")

    irregular = {pos: exceptions(pos, root) for pos in ("noun", "verb")}
    pairs_of: dict[str, set[tuple[str, str]]] = defaultdict(set)

    def add(toks: list[str], a: int, b: int, first: str, second: str) -> None:
        if b - a >= 2 and b - a + 1 <= max_tokens and first != second:
            pairs_of["$ARG1 " + " ".join(toks[a + 1: b]) + " $ARG2"].add((first, second))

    for (pos, _), s in sorted(synsets.items()):
        own = [lem for lem in s.lemmas if lem in entities]
        if pos not in ("noun", "verb") or not own:
            continue
        toks = ["$ARG1", *TOKEN.findall(s.definition.lower())]
        for i, t in enumerate(toks[1:], 1):
            if t in entities and t not in s.lemmas:
                add(toks, 0, i, own[0], t)
        forms = {f: lem for lem in own for f in inflections(lem, pos, irregular[pos])}
        for example in s.examples:
            toks = TOKEN.findall(example.lower())
            at_own = [(i, forms[t]) for i, t in enumerate(toks) if t in forms]
            at_other = [(i, t) for i, t in enumerate(toks) if t in entities and t not in forms]
            for i, lem in at_own:
                for j, other in at_other:
                    add(toks, min(i, j), max(i, j), *((lem, other) if i < j else (other, lem)))

    kept = {p: ps for p, ps in pairs_of.items() if len(ps) >= min_pairs}
    pairs = {pq for ps in kept.values() for pq in ps}
    head_split = held_out_split(list({a for a, _ in pairs}), test_fraction, valid_fraction, seed)
    return kb_matrix("wordnet-schema", kept, kb, RELATIONS, {pq: head_split[pq[0]] for pq in pairs})
