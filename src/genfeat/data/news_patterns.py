"""A universal-schema matrix from news text (thesis C §3.3.2.2's pattern co-occurrence, after Verga et al. 2016's
columns; spec multi-facet-universal-schema.md §3), built deterministically from offline prose with no NER or
entity linking (documented rules instead):

    sentences   `data.sentences.documents` (BBC News train + valid articles, the Wikipedia articles of gensim's
                dump; the BBC test articles are never read), cut by `data.sentence_split`
    tokens      `TOKEN`: words (with inner hyphens, ampersands and apostrophes: "don't"), the possessive "'s" on its
                own ("Blair 's"), and single punctuation marks
    entities    maximal runs of capitalised tokens (first letter upper case) that do not start the sentence (a run
                at position 0 loses its first token); "I" and tokens of one letter never start or join one
    patterns    for every two entity mentions of a sentence in order, the tokens between them, lower-cased, as
                "$ARG1 ... $ARG2" (at least one token between; at most `max_tokens` = 20 tokens with the
                placeholders, the reference's limit); the entity pair is (first mention, second mention)
    matrix      rows = patterns with at least `min_pairs` (1: all, as the reference) distinct entity pairs,
                columns = their pairs, a cell per distinct (pattern, pair); no KB rows (the entailment model learns
                from text alone)
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from genfeat.data.universal_schema import PATTERN, SPECIALS, SchemaMatrix

TOKEN = re.compile(r"'s\b|[A-Za-z0-9]+(?:[-&][A-Za-z0-9]+|'(?!s\b)[A-Za-z]+)*|[^\w\s]")


def tokens(sentence: str) -> list[str]:
    return TOKEN.findall(sentence.replace("\u2019", "'"))


def _capitalised(t: str) -> bool:
    return len(t) > 1 and t[0].isupper()


def mentions(toks: list[str]) -> list[tuple[int, int]]:
    """(start, end) token spans of the entity mentions of a sentence (module docstring)."""
    spans, i = [], 0
    while i < len(toks):
        if _capitalised(toks[i]):
            j = i
            while j < len(toks) and _capitalised(toks[j]):
                j += 1
            a = i + 1 if i == 0 else i  # the sentence's first word may be capitalised for its position alone
            if a < j:
                spans.append((a, j))
            i = j
        else:
            i += 1
    return spans


def sentence_patterns(sentence: str, max_tokens: int = 20) -> list[tuple[str, str, str]]:
    """(pattern, first entity, second entity) of every ordered mention pair of one sentence."""
    toks = tokens(sentence)
    spans = mentions(toks)
    out = []
    for x, (a1, b1) in enumerate(spans):
        for a2, b2 in spans[x + 1:]:
            between = toks[b1:a2]
            if not between or len(between) + 2 > max_tokens:
                continue
            out.append(("$ARG1 " + " ".join(t.lower() for t in between) + " $ARG2", " ".join(toks[a1:b1]),
                        " ".join(toks[a2:b2])))
    return out


def news_patterns(corpus: str = "bbc-news+wiki", min_pairs: int = 1, max_tokens: int = 20) -> SchemaMatrix:
    from genfeat.data.sentences import documents

    docs = documents(corpus)
    pairs_of: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for split in ("train", "valid"):
        for doc in docs[split]:
            for sentence in doc:
                for pattern, e1, e2 in sentence_patterns(sentence, max_tokens):
                    pairs_of[pattern].add((e1, e2))
    kept = sorted(p for p, ps in pairs_of.items() if len(ps) >= min_pairs)
    pair_names = sorted({f"{a}\t{b}" for p in kept for a, b in pairs_of[p]})
    pair_id = {n: i for i, n in enumerate(pair_names)}
    words = sorted({w for p in kept for w in p.split()})
    vocab = [*SPECIALS, *words]
    tok = {w: i for i, w in enumerate(vocab)}
    cells = sorted((r, pair_id[f"{a}\t{b}"]) for r, p in enumerate(kept) for a, b in pairs_of[p])
    return SchemaMatrix(name=f"news patterns ({corpus})", vocab=vocab,
                        rows=[tuple(tok[w] for w in p.split()) for p in kept],
                        row_types=np.full(len(kept), PATTERN, dtype=np.int64), row_names=kept,
                        pair_names=pair_names, cells=np.asarray(cells, dtype=np.int64).reshape(-1, 2))
