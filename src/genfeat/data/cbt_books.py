"""Cloze questions in the Children's Book Test protocol (Hill et al. 2016; the cloze format of thesis Y §3.2 and
its gated-attention reader) built from the offline books and news: `genfeat data build cbt-books`.

    units       Austen's six novels (`austen`), the King James Bible's 66 books (`kjv`, a verse is a sentence), the
                BBC News articles (`bbc-news`); a unit is never in two splits:
                  Austen   valid Northanger Abbey, test Persuasion, train the other four
                  KJV      the books at canonical positions 5, 15, ... valid, 10, 20, ... test, the rest train
                  BBC      the topic-classification task's article split (60 / 20 / 20 %, `stratified_split`)
    passages    windows of 21 consecutive sentences starting every `stride` (5) sentences (`data.sentence_split`;
                headings of capitals only are dropped): sentences 1-20 the passage, sentence 21 the question (CBT
                slides its window over every sentence; a stride keeps the set CPU-sized)
    word types  per unit, on the original case (no tagger offline; a documented substitute for CBT's Stanford
                tagger and NER):
                  NE  a word (two letters or more, not a stop word or a title such as "mr") whose occurrences
                      after a sentence's first token are capitalised at least 90 % of the time
                  CN  a word lower-case at least 90 % of the time whose WordNet noun senses outnumber its verb +
                      adjective + adverb senses (plural and irregular forms mapped to their noun lemma), not a
                      stop word, a numeral or an archaic pronoun ("thou", "ye")
    questions   for each passage and type: the question's words of that type that occur in the passage, one of
                them drawn as the answer (every occurrence in the question replaced by `xxxxx`) when the passage
                holds at least 10 distinct words of the type; candidates = the answer and 9 other distinct words of
                the type drawn from the passage, in alphabetical order; the answer's span is its last occurrence
                in the passage

Examples are `data.qa.QAExample`s over lower-cased `data.facets` tokens (qid "unit:window:type", article = the
unit, answer_type NE / CN). `ClozeSet.checksum` is the sha256 of the splits (order, passages, questions, spans,
candidates) as canonical JSON; the seed draws the answers and candidates, the splits are fixed.
`unlabelled_answers` gives the (passage, answer) pairs of GDAN's unlabelled data: typed words of passages no
question of which is labelled.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from genfeat.config import atomic_write_text
from genfeat.data.qa import QAExample
from genfeat.data.sentence_split import split_sentences
from genfeat.errors import DataError

SPLITS = ("train", "valid", "test")
TYPES = ("NE", "CN")
PLACEHOLDER = "xxxxx"
TITLES = frozenset({"mr", "mrs", "ms", "miss", "dr", "st", "sir", "madam"})
NOT_NOUNS = frozenset({"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                       "twelve", "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "million",
                       "thou", "thee", "thy", "thine", "ye"})  # numerals and the KJV's pronouns: not CN
SOURCES = ("austen", "kjv", "bbc-news")


@dataclass(frozen=True)
class Unit:
    name: str  # "austen/emma", "kjv/Ge", "bbc/business/001"
    split: str
    sentences: tuple[str, ...]


def austen_units() -> list[Unit]:
    from genfeat.data.corpora import austen_novels

    split = {"northangerabbey": "valid", "persuasion": "test"}
    out = []
    for name, lines in austen_novels().items():
        paragraphs = [p for p in "\n".join(lines).split("\n\n") if p.strip() and not p.strip().isupper()]
        sents = tuple(s for p in paragraphs for s in split_sentences(p))
        out.append(Unit(f"austen/{name}", split.get(name, "train"), sents))
    return out


def kjv_units() -> list[Unit]:
    from genfeat.data.corpora import kjv_books

    books = kjv_books()
    if len(books) != 66:
        raise DataError(f"the KJV dump has {len(books)} books, not 66; run `genfeat data fetch kjv --force`")
    return [Unit(f"kjv/{b}", "valid" if (i + 1) % 10 == 5 else "test" if (i + 1) % 10 == 0 else "train",
                 tuple(verses)) for i, (b, verses) in enumerate(books.items())]


def bbc_units() -> list[Unit]:
    from genfeat.data.text_classification import load_bbc_news, stratified_split

    docs = load_bbc_news()
    where = {int(i): s for s, idx in stratified_split(docs.labels, 0).items() for i in idx}
    return [Unit(f"bbc/{docs.classes[docs.labels[i]]}/{i}", where[i], tuple(split_sentences(docs.texts[i])))
            for i in sorted(where)]


def _tokens(sentence: str) -> list[str]:
    """The sentence's `data.facets` tokens in their original case."""
    from genfeat.data.facets import WORD

    return WORD.findall(sentence)


def last_occurrence(passage: Sequence[str], word: str) -> int:
    """The index of `word`'s last occurrence in `passage` (an answer's span)."""
    return len(passage) - 1 - passage[::-1].index(word)


@dataclass(frozen=True)
class NounLexicon:
    """WordNet's noun-dominance test for CN (module docstring)."""

    noun: dict[str, int]  # surface form -> the senses of the noun lemma it inflects
    other: dict[str, int]  # surface form -> verb + adjective + adverb senses of the lemmas it may inflect

    @classmethod
    def load(cls, root: str | Path | None = None) -> NounLexicon:
        from genfeat.data.wordnet import exceptions, inflections, sense_counts

        noun, other = {}, Counter()
        exc = exceptions("noun", root)
        for lemma, n in sense_counts("noun", root).items():
            if " " not in lemma:
                for f in inflections(lemma, "noun", exc):
                    noun[f] = max(noun.get(f, 0), n)
        exc = exceptions("verb", root)
        for lemma, n in sense_counts("verb", root).items():
            if " " not in lemma:
                for f in inflections(lemma, "verb", exc):
                    other[f] += n
        for pos in ("adj", "adv"):
            for lemma, n in sense_counts(pos, root).items():
                other[lemma] += n
        return cls(noun, dict(other))

    def is_common_noun(self, word: str) -> bool:
        return self.noun.get(word, 0) > self.other.get(word, 0)


def word_types(sentences: Sequence[Sequence[str]], lexicon: NounLexicon) -> dict[str, str]:
    """lower-cased word -> "NE" / "CN" for one unit's tokenised sentences (original case), by the module's rules."""
    from genfeat.data.stop_words import stop_list

    stops = stop_list("english")
    upper, seen = Counter(), Counter()
    for toks in sentences:
        for t in toks[1:]:
            if t.isalpha():
                seen[t.lower()] += 1
                upper[t.lower()] += t[0].isupper()
    out = {}
    for w, n in seen.items():
        if len(w) < 2 or w in stops or w in TITLES:
            continue
        if upper[w] >= 0.9 * n:
            out[w] = "NE"
        elif upper[w] < 0.1 * n and w not in NOT_NOUNS and lexicon.is_common_noun(w):
            out[w] = "CN"
    return out


def unit_questions(unit: Unit, lexicon: NounLexicon, seed: int, window: int = 20, n_candidates: int = 10,
                   stride: int = 5) -> list[QAExample]:
    """The cloze questions of one unit (module docstring), drawn with a generator seeded by (seed, the unit)."""
    toks = [_tokens(s) for s in unit.sentences]
    toks = [t for t in toks if t]
    types = word_types(toks, lexicon)
    rng = np.random.default_rng([seed, zlib.crc32(unit.name.encode())])
    out = []
    for w0 in range(0, len(toks) - window, stride):
        passage = tuple(t.lower() for s in toks[w0:w0 + window] for t in s)
        query = [t.lower() for t in toks[w0 + window]]
        in_passage = set(passage)
        for kind in TYPES:
            pool = sorted({w for w in in_passage if types.get(w) == kind})
            asked = sorted({w for w in query if types.get(w) == kind and w in in_passage})
            if len(pool) < n_candidates or not asked:
                continue
            answer = asked[rng.integers(len(asked))]
            others = [w for w in pool if w != answer]
            cands = sorted([answer, *(others[i] for i in rng.choice(len(others), n_candidates - 1, replace=False))])
            j = last_occurrence(passage, answer)
            question = tuple(PLACEHOLDER if w == answer else w for w in query)
            out.append(QAExample(passage, question, (j, j), unit.name, kind, f"{unit.name}:{w0}:{kind}",
                                 tuple(cands)))
    return out


@dataclass(frozen=True)
class ClozeSet:
    name: str
    splits: dict[str, list[QAExample]]
    units: dict[str, int] = field(default_factory=dict)  # units per split
    source: str = "+".join(SOURCES)

    def stats(self) -> dict[str, int]:
        out = {s: len(v) for s, v in self.splits.items()} | {f"{s}_units": self.units.get(s, 0) for s in SPLITS}
        for s, v in self.splits.items():
            for kind in TYPES:
                out[f"{s}_{kind}"] = sum(e.answer_type == kind for e in v)
        lengths = [len(e.paragraph) for v in self.splits.values() for e in v]
        out["passage_tokens_mean"] = int(round(float(np.mean(lengths)))) if lengths else 0
        out["passage_tokens_max"] = max(lengths, default=0)
        return out

    @property
    def checksum(self) -> str:
        h = hashlib.sha256()
        for s in SPLITS:
            rows = [[e.qid, list(e.paragraph), list(e.question or ()), list(e.span), list(e.candidates)]
                    for e in self.splits[s]]
            h.update(json.dumps([s, rows], ensure_ascii=False, separators=(",", ":")).encode())
        return h.hexdigest()

    def describe(self) -> dict:
        first = self.splits["train"][0]
        return {"task": self.name, "source": self.source, "sizes": self.stats(), "sha256": self.checksum,
                "example": {"question": " ".join(first.question or ()), "answer": first.answer,
                            "candidates": list(first.candidates), "unit": first.article}}

    def write(self, out: str | Path) -> list[Path]:
        """{split}.jsonl: one question a line (qid, unit, type, passage, question, answer, span, candidates)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for s in SPLITS:
            atomic_write_text(out / f"{s}.jsonl", "".join(json.dumps({
                "qid": e.qid, "unit": e.article, "type": e.answer_type, "passage": " ".join(e.paragraph),
                "question": " ".join(e.question or ()), "answer": e.answer, "span": list(e.span),
                "candidates": list(e.candidates)}, ensure_ascii=False) + "\n" for e in self.splits[s]))
            paths.append(out / f"{s}.jsonl")
        return paths

    def summary(self) -> str:
        z = self.stats()
        return (f"{self.name}: {z['train']:,} / {z['valid']:,} / {z['test']:,} questions from "
                f"{z['train_units']} / {z['valid_units']} / {z['test_units']} units, passages of "
                f"{z['passage_tokens_mean']} tokens on average")


def cbt_books(seed: int = 0, window: int = 20, n_candidates: int = 10, stride: int = 5,
              wordnet_root: str | Path | None = None) -> ClozeSet:
    """The cloze set over every unit (module docstring)."""
    lexicon = NounLexicon.load(wordnet_root)
    units = [*austen_units(), *kjv_units(), *bbc_units()]
    splits: dict[str, list[QAExample]] = {s: [] for s in SPLITS}
    for u in units:
        splits[u.split] += unit_questions(u, lexicon, seed, window, n_candidates, stride)
    return ClozeSet("cbt-books", splits, dict(Counter(u.split for u in units)))


def unlabelled_answers(examples: Sequence[QAExample], asked: set[tuple[str, ...]], per_passage: int,
                       type_freq: Mapping[str, float], rng: np.random.Generator) -> list[QAExample]:
    """(passage, answer) pairs without questions from the passages of `examples` outside `asked` (the labelled
    passages): up to `per_passage` of the passage's typed words (the candidates of its questions), subsampled to
    `type_freq` (`data.answer_extraction.subsample_answers`); each answer's span is its last occurrence, its
    candidates those of the question it came from."""
    from genfeat.data.answer_extraction import subsample_answers

    by_passage: dict[tuple[str, ...], list[QAExample]] = {}
    for e in examples:
        if e.paragraph not in asked:
            by_passage.setdefault(e.paragraph, []).append(e)
    out = []
    for passage, qs in by_passage.items():
        words = {w: q for q in qs for w in q.candidates}
        spans = [((last_occurrence(passage, w),) * 2, words[w].answer_type) for w in sorted(words)]
        for span, kind in subsample_answers(spans, type_freq, per_passage, rng):
            q = words[passage[span[0]]]
            out.append(QAExample(passage, None, span, q.article, kind, f"u-{len(out)}", q.candidates))
    return out
