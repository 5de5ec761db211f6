"""WordNet 3.0 from its database files (`genfeat data fetch wordnet`: Debian `wordnet-base`), and the two tasks
built from it (`data/built_tasks.py`).

Reader (the format of wndb(5WN)): each synset line of `data.{noun,verb,adj,adv}` is

    offset lex_filenum ss_type w_cnt [word lex_id]*w_cnt p_cnt [pointer]*p_cnt [frames] | gloss

with each pointer "symbol offset pos source/target" (`Synset.pointers`, `POINTERS` names the symbols)

with w_cnt in hexadecimal; the gloss is a definition followed by example sentences in double quotes ("; "
separated). Lexicographer file numbers name the synset's coarse class (lexnames(5WN); `LEXNAMES` below:
noun.animal, verb.motion, ...). Inflected forms: the `*.exc` exception lists plus the regular suffixes.

Tasks:

- **wordnet-lexnames**: a noun or verb synset's gloss (definition and examples, as written) -> its lexicographer
  file; files with at least `min_count` synsets are kept (of the 25 noun and 15 verb files this drops noun.Tops
  and noun.motive); glosses shared by synsets of different files are dropped, repeated ones kept once.
- **wordnet-wic**: word in context built the way WiC (Pilehvar & Camacho-Collados 2019) was built from WordNet:
  two example sentences that both contain a noun or verb lemma (or an inflected form of it), labelled "same" when
  they illustrate the same synset and "different" when they illustrate two senses of that lemma. Every same-sense
  pair is kept (at most `max_pairs_per_lemma` per lemma); as many different-sense pairs are drawn per lemma
  (seeded), so the classes balance. Splits are by lemma (no lemma in two splits). The input is
  ("lemma: sentence 1", "sentence 2"), as genfeat's SuperGLUE WiC reader gives it.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genfeat.data.built_task import BuiltTask, labelled_splits
from genfeat.data.sources import require
from genfeat.errors import DataError

LEXNAMES = [
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute",
    "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
    "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant",
    "noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state",
    "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication",
    "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
]  # lexnames(5WN): the lexicographer file of each number
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
WORDNET_DIR = "usr/share/wordnet"


POINTERS = {  # wninput(5WN)'s pointer symbols
    "!": "antonym", "@": "hypernym", "@i": "instance_hypernym", "~": "hyponym", "~i": "instance_hyponym",
    "#m": "member_holonym", "#s": "substance_holonym", "#p": "part_holonym", "%m": "member_meronym",
    "%s": "substance_meronym", "%p": "part_meronym", "=": "attribute", "+": "derivation", ";c": "domain_topic",
    "-c": "member_of_domain_topic", ";r": "domain_region", "-r": "member_of_domain_region", ";u": "domain_usage",
    "-u": "member_of_domain_usage", "*": "entailment", ">": "cause", "^": "also_see", "$": "verb_group",
    "&": "similar_to", "<": "participle", "\\": "pertainym",
}


@dataclass(frozen=True)
class Pointer:
    """One relation of a synset: `relation` (POINTERS' name) to the synset at `offset` of part of speech `pos`;
    `source` / `target` are 1-based word numbers of a lexical pointer (between two words), 0 / 0 for a semantic
    one (between the synsets)."""

    relation: str
    offset: int
    pos: str
    source: int
    target: int


@dataclass(frozen=True)
class Synset:
    offset: int
    pos: str  # n, v, a, s, r
    lexname: str
    lemmas: tuple[str, ...]  # lower case, spaces for underscores, adjective markers removed
    definition: str
    examples: tuple[str, ...]
    pointers: tuple[Pointer, ...] = ()

    @property
    def gloss(self) -> str:
        return "; ".join([self.definition, *(f'"{e}"' for e in self.examples)])


def wordnet_dir(root: str | Path | None = None) -> Path:
    if root is not None:
        return Path(root)
    return require("wordnet", f"{WORDNET_DIR}/data.noun", f"{WORDNET_DIR}/data.verb") / WORDNET_DIR


def parse_gloss(gloss: str) -> tuple[str, tuple[str, ...]]:
    """(definition, example sentences): the examples are the double-quoted parts."""
    examples = tuple(e.strip() for e in re.findall(r'"([^"]+)"', gloss) if e.strip())
    definition = gloss.split('"', 1)[0].strip().rstrip(";").strip()
    return definition, examples


def read_synsets(pos: str, root: str | Path | None = None) -> list[Synset]:
    """Every synset of `data.<pos>` (pos: noun, verb, adj, adv), in file order."""
    path = wordnet_dir(root) / f"data.{pos}"
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("  "):  # the licence header
                continue
            head, bar, gloss = line.partition(" | ")
            fields = head.split()
            try:
                w_cnt = int(fields[3], 16)
                words = fields[4: 4 + 2 * w_cnt: 2]
                lexnum = int(fields[1])
                at = 4 + 2 * w_cnt
                p_cnt = int(fields[at]) if len(fields) > at else 0
                pointers = tuple(Pointer(POINTERS.get(sym, sym), int(off), pos_, int(st[:2], 16), int(st[2:], 16))
                                 for sym, off, pos_, st in (fields[at + 1 + 4 * i: at + 5 + 4 * i]
                                                            for i in range(p_cnt)))
                out.append(Synset(int(fields[0]), fields[2], LEXNAMES[lexnum],
                                  tuple(re.sub(r"\([a-z]+\)$", "", w).replace("_", " ").lower() for w in words),
                                  *parse_gloss(gloss.strip() if bar else ""), pointers=pointers))
            except (IndexError, ValueError) as e:
                raise DataError(f"{path}:{n}: not a WordNet synset line ({e})") from None
    return out


def sense_counts(pos: str, root: str | Path | None = None) -> dict[str, int]:
    """lemma (lower case, spaces for underscores) -> its number of synsets of part of speech `pos` (noun, verb, adj,
    adv), from `index.<pos>` ("lemma pos synset_cnt ..." lines)."""
    out: dict[str, int] = {}
    path = wordnet_dir(root) / f"index.{pos}"
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if line.startswith("  "):  # the licence header
            continue
        fields = line.split()
        try:
            out[fields[0].replace("_", " ")] = int(fields[2])
        except (IndexError, ValueError):
            raise DataError(f"{path}:{n}: not a WordNet index line") from None
    return out


def exceptions(pos: str, root: str | Path | None = None) -> dict[str, set[str]]:
    """lemma -> its irregular inflected forms (`<pos>.exc`: "form lemma ..." lines)."""
    out: dict[str, set[str]] = {}
    path = wordnet_dir(root) / f"{pos}.exc"
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            form, *lemmas = line.split()
            for lemma in lemmas:
                out.setdefault(lemma.replace("_", " "), set()).add(form.replace("_", " "))
    return out


def inflections(lemma: str, pos: str, irregular: dict[str, set[str]]) -> set[str]:
    """The forms a noun (plural) or verb (-s, -ed, -ing) lemma takes: regular suffixes, spelling rules and the
    exception list; for a multi-word lemma the first word inflects (`look up` -> `looked up`)."""
    head, _, tail = lemma.partition(" ")
    forms = {head, head + "s", head + "es"}
    if head.endswith("y") and len(head) > 1 and head[-2] not in "aeiou":
        forms |= {head[:-1] + "ies", head[:-1] + "ied"}
    if pos == "verb":
        stem = head[:-1] if head.endswith("e") else head
        forms |= {head + "ed", head + "d", stem + "ing", stem + "ed"}
        if len(head) > 2 and head[-1] not in "aeiouwxy" and head[-2] in "aeiou" and head[-3] not in "aeiou":
            forms |= {head + head[-1] + "ed", head + head[-1] + "ing"}  # stop -> stopped, stopping
    forms |= {f.partition(" ")[0] for f in irregular.get(lemma, ())} | irregular.get(head, set())
    return {f"{f} {tail}".strip() for f in forms}


def mentions(sentence: str, forms: set[str]) -> bool:
    s = f" {' '.join(re.findall(r'[a-z0-9-]+', sentence.lower()))} "
    return any(f" {f} " in s for f in forms)


def lexname_task(root: str | Path | None = None, seed: int = 0, min_count: int = 200, n_valid: int = 1000,
                 n_test: int = 2000) -> BuiltTask:
    synsets = read_synsets("noun", root) + read_synsets("verb", root)
    files: dict[str, set[str]] = {}
    for s in synsets:
        files.setdefault(s.gloss, set()).add(s.lexname)
    seen: set[str] = set()
    rows, conflicting = [], 0
    for s in synsets:
        if len(files[s.gloss]) > 1:
            conflicting += 1
        elif s.gloss not in seen:
            seen.add(s.gloss)
            rows.append((s.gloss, s.lexname))
    counts = Counter(name for _, name in rows)
    rows = [(g, name) for g, name in rows if counts[name] >= min_count]
    splits, classes = labelled_splits([(g, None) for g, _ in rows], [name for _, name in rows], seed, n_valid,
                                      n_test)
    return BuiltTask("wordnet-lexnames", splits, classes, "wordnet", notes={
        "synsets": len(synsets), "dropped_conflicting_glosses": conflicting,
        "dropped_repeated_glosses": len(synsets) - conflicting - len(seen),
        "dropped_files": sorted(n for n, c in counts.items() if c < min_count), "min_count": min_count})


def wic_pairs(root: str | Path | None = None, seed: int = 0, max_pairs_per_lemma: int = 4
              ) -> list[tuple[str, str, str, int]]:
    """(lemma, sentence 1, sentence 2, same sense 1 / 0), grouped by lemma in sorted lemma order."""
    rng = np.random.default_rng(seed)
    out = []
    for pos in ("noun", "verb"):
        irregular = exceptions(pos, root)
        senses: dict[str, list[list[str]]] = {}
        for s in read_synsets(pos, root):
            for lemma in s.lemmas:
                forms = inflections(lemma, pos, irregular)
                ex = [e for e in s.examples if mentions(e, forms)]
                if ex:
                    senses.setdefault(lemma, []).append(ex)
        for lemma in sorted(senses):
            groups = senses[lemma]
            if len(groups) < 2:
                continue
            same = [p for g in groups for p in itertools.combinations(g, 2)][:max_pairs_per_lemma]
            diff = [(a, b) for g1, g2 in itertools.combinations(groups, 2) for a in g1 for b in g2]
            take = rng.permutation(len(diff))[: len(same)]
            out += [(lemma, a, b, 1) for a, b in same] + [(lemma, *diff[i], 0) for i in sorted(take)]
    return out


def wic_task(root: str | Path | None = None, seed: int = 0, valid_share: float = 0.1, test_share: float = 0.15
             ) -> BuiltTask:
    pairs = wic_pairs(root, seed)
    lemmas = sorted({p[0] for p in pairs})
    order = np.random.default_rng(seed).permutation(len(lemmas))
    n_te, n_va = round(test_share * len(lemmas)), round(valid_share * len(lemmas))
    part = {lemmas[i]: ("test" if r < n_te else "valid" if r < n_te + n_va else "train") for r, i in enumerate(order)}
    splits = {}
    for k in ("train", "valid", "test"):
        rows = [p for p in pairs if part[p[0]] == k]
        splits[k] = ([(f"{lemma}: {a}", b) for lemma, a, b, _ in rows], np.array([y for *_, y in rows], np.int64))
    return BuiltTask("wordnet-wic", splits, ["different", "same"], "wordnet", notes={
        "lemmas": len(lemmas), "split_by": "lemma"})


@dataclass(frozen=True)
class PhraseItem:
    """A Turney (2012)-style item: a two-word noun lemma, its one-word synonym (same synset) and distractors."""

    bigram: str
    answer: str
    distractors: tuple[str, ...]  # a synonym of the modifier, a synonym of the head, then random one-word nouns


def phrase_items(root: str | Path | None = None, seed: int = 0, n_items: int = 2000, n_random: int = 2,
                 vocabulary: set[str] | None = None) -> list[PhraseItem]:
    """Noun synsets with a two-word lemma of letters ("smash hit") and a one-word lemma that is neither of its
    words ("blockbuster"): the bigram, that unigram as the answer, and 4 distractors as in Turney's (2012) 5-choice
    set (his 7 choices without the modifier and the head themselves): a one-word synonym of the modifier and one of
    the head (another lemma of a noun synset holding the word; a random noun where there is none) and `n_random`
    random one-word noun lemmas, all outside the answer's synset (seeded); `n_items` items drawn (seeded) from the
    eligible synsets in file order. `vocabulary`: every word of an item (the bigram's, the answer, the distractors)
    is in it (the words the evaluated models know)."""
    synsets = read_synsets("noun", root)
    known = (lambda w: w in vocabulary) if vocabulary is not None else (lambda w: True)
    pool = sorted({lemma for s in synsets for lemma in s.lemmas if lemma.isalpha() and known(lemma)})
    synonyms: dict[str, list[str]] = {}
    for s in synsets:
        one_word = [lemma for lemma in s.lemmas if lemma.isalpha() and known(lemma)]
        for w in one_word:
            synonyms.setdefault(w, []).extend(x for x in one_word if x != w)
    rng = np.random.default_rng(seed)
    eligible = []
    for s in synsets:
        bigrams = [lemma for lemma in s.lemmas if len(lemma.split()) == 2 and lemma.replace(" ", "").isalpha()
                   and all(known(w) for w in lemma.split())]
        for bigram in bigrams[:1]:
            words = bigram.split()
            answers = [lemma for lemma in s.lemmas if lemma.isalpha() and lemma not in words and known(lemma)]
            if answers:
                eligible.append((bigram, answers[0], set(s.lemmas)))
    out = []
    for i in sorted(rng.choice(len(eligible), min(n_items, len(eligible)), replace=False).tolist()):
        bigram, answer, own = eligible[i]
        taken = own | set(bigram.split())
        picks: list[str] = []
        for w in bigram.split():
            cands = sorted(set(synonyms.get(w, [])) - taken - set(picks))
            if cands:
                picks.append(cands[int(rng.integers(len(cands)))])
        while len(picks) < 2 + n_random:
            w = pool[int(rng.integers(len(pool)))]
            if w not in taken and w not in picks:
                picks.append(w)
        out.append(PhraseItem(bigram, answer, tuple(picks)))
    return out
