"""Candidate answers from unlabelled text and their subsampling to a target answer-type distribution (thesis Y
§3.2.5; spec gdan.md §4.1): `extract_candidates` finds them, `subsample_answers` keeps `k` candidates of a
paragraph so that their types follow `type_freq` (the labelled set's, or SQuAD's).

The thesis uses the Stanford POS tagger, a constituency grammar and Stanford NER; none is available offline, so
`extract_candidates` is a documented rule-based substitute over the text's lower-cased `data.facets` tokens (the
tokens `data.qa.squad_word_examples` gives), reading case from the original text:

    date                a month name with an adjacent day and / or year, or a year 1000-2099 alone
    other_numeric       a run of numbers (digits, with inner , or .) and a following percent / % / unit word
    entity              a maximal run of capitalised tokens (with "of" / "the" / "and" / "de" between two of them),
                        not a lone stop word at a sentence's start: SQuAD's Person, Location and Other Entity
                        together (no NER tells them apart here)
    common_noun_phrase  the non-stop lower-case words (1-3) after a determiner (the, a, an, this, his, ...)

`SUBSTITUTE_TYPES` is SQuAD's answer-type distribution over these four types (Date, Other Numeric, Person +
Location + Other Entity, Common Noun Phrase), renormalised; the types no rule finds (adjective and verb phrases,
clauses, other) are dropped.

Each candidate of type t is drawn with probability ∝ type_freq[t] / (the paragraph's number of candidates of
type t), without replacement, so a paragraph's draws follow type_freq over the types it has; types of frequency 0
are never drawn.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

SQUAD_TYPES = {"date": 0.089, "other_numeric": 0.109, "person": 0.129, "location": 0.044, "other_entity": 0.153,
               "common_noun_phrase": 0.318, "adjective_phrase": 0.039, "verb_phrase": 0.055, "clause": 0.037,
               "other": 0.027}  # Rajpurkar et al. 2016, Table 2


MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"}
UNITS = {"percent", "%", "million", "billion", "thousand", "hundred", "km", "miles", "kilometres", "kilometers",
         "metres", "meters", "feet", "years", "dollars", "people"}
DETERMINERS = {"the", "a", "an", "this", "that", "these", "those", "his", "her", "its", "their", "our", "my"}
LINKS = {"of", "the", "and", "de"}
_merged = {"date": SQUAD_TYPES["date"], "other_numeric": SQUAD_TYPES["other_numeric"],
           "entity": SQUAD_TYPES["person"] + SQUAD_TYPES["location"] + SQUAD_TYPES["other_entity"],
           "common_noun_phrase": SQUAD_TYPES["common_noun_phrase"]}
SUBSTITUTE_TYPES = {k: v / sum(_merged.values()) for k, v in _merged.items()}


def _number(t: str) -> bool:
    return bool(re.fullmatch(r"\d+(?:[.,]\d+)*", t))


def extract_candidates(text: str) -> tuple[list[str], list[tuple[tuple[int, int], str]]]:
    """(lower-cased tokens, [((start, end) inclusive token span, type)]) of one paragraph, in text order."""
    from genfeat.data.facets import TOKEN
    from genfeat.data.stop_words import is_stop, stop_list

    stops = stop_list("english")
    found = [(m.group(), m.start()) for m in TOKEN.finditer(text.lower())]
    toks = [t for t, _ in found]
    cap = [text[b].isupper() for _, b in found]
    starts = {0} | {i + 1 for i, t in enumerate(toks) if t in (".", "!", "?")}
    out: list[tuple[tuple[int, int], str]] = []
    used = [False] * len(toks)

    def add(a: int, b: int, kind: str) -> None:
        if not any(used[a:b + 1]):
            out.append(((a, b), kind))
            used[a:b + 1] = [True] * (b - a + 1)

    for i, t in enumerate(toks):  # dates first: "May 5, 1990" is not a number and an entity
        if t in MONTHS and cap[i]:
            a, b = i, i
            if i + 1 < len(toks) and _number(toks[i + 1]):
                b = i + 1
                if b + 2 < len(toks) and toks[b + 1] == "," and re.fullmatch(r"\d{4}", toks[b + 2]):
                    b += 2
            if i > 0 and re.fullmatch(r"\d{1,2}", toks[i - 1]):
                a = i - 1
            if b > a:
                add(a, b, "date")
        elif re.fullmatch(r"1\d{3}|20\d{2}", t):
            add(i, i, "date")
    i = 0
    while i < len(toks):
        if _number(toks[i]) and not used[i]:
            j = i
            while j + 1 < len(toks) and _number(toks[j + 1]):
                j += 1
            if j + 1 < len(toks) and toks[j + 1] in UNITS:
                j += 1
            add(i, j, "other_numeric")
            i = j + 1
            continue
        if cap[i] and toks[i].isalpha() and not (i in starts and is_stop(toks[i], stops)):
            j = i
            while True:
                if j + 1 < len(toks) and cap[j + 1] and toks[j + 1].isalpha():
                    j += 1
                elif j + 2 < len(toks) and toks[j + 1] in LINKS and cap[j + 2] and toks[j + 2].isalpha():
                    j += 2
                else:
                    break
            add(i, j, "entity")
            i = j + 1
            continue
        if toks[i] in DETERMINERS and not cap[i] or (toks[i] in DETERMINERS and i in starts):
            j = i
            while j + 1 < len(toks) and j - i < 3 and toks[j + 1].isalpha() and not cap[j + 1] \
                    and not is_stop(toks[j + 1], stops):
                j += 1
            if j > i:
                add(i + 1, j, "common_noun_phrase")
            i = j + 1
            continue
        i += 1
    return toks, sorted(out)


def type_distribution(types: Sequence[str]) -> dict[str, float]:
    counts = Counter(types)
    return {t: c / len(types) for t, c in counts.items()}


def subsample_answers(candidates: Sequence[tuple[tuple[int, int], str]], type_freq: Mapping[str, float], k: int,
                      rng: np.random.Generator) -> list[tuple[tuple[int, int], str]]:
    """candidates: ((start, end), type) of one paragraph -> at most k of them, in paragraph order."""
    n_type = Counter(t for _, t in candidates)
    w = np.array([type_freq.get(t, 0.0) / n_type[t] for _, t in candidates], dtype=float)
    if not len(candidates) or w.sum() <= 0:
        return []
    n = min(k, int((w > 0).sum()))
    pick = rng.choice(len(candidates), n, replace=False, p=w / w.sum())
    return [candidates[i] for i in sorted(pick)]
