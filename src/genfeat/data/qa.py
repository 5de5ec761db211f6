"""Extractive QA examples over word tokens, for readers that are not a subword encoder (thesis Y §3.2: the
gated-attention reader and GDAN's question generator; spec gdan.md §2.1-§2.2, §4.2).

    QAExample(paragraph, question, span, article)   tokens; span = (j, k), inclusive token indices of the answer;
                                                    question None for an unlabelled (paragraph, answer) pair;
                                                    `candidates` for the cloze format (the answer is one of them)
    QAVocab.build(examples, out_vocab=...)          <pad> <unk> <bos> <eos> <d_true> <d_gen>, then the words by
                                                    frequency; the first `out_vocab` ids are a generator's output
                                                    vocabulary
    qa_rows(examples, vocab)                        right-padded tensors (below)
    context_question(paragraph, span, W)            the "Context" pseudo-question: W tokens either side of the answer
                                                    (a cloze set's placeholder between them)
    labelled_pool(examples, rate, n_original, rng)  the labelling-rate protocol: floor(rate · N_original) examples
    squad_word_examples(path)                       SQuAD v1.1 / v2.0 JSON (`data.squad`) as word-level examples:
                                                    lower-cased `data.facets` tokens, the first gold answer's
                                                    character span mapped to the tokens it overlaps, the article
                                                    title as the article; unanswerable questions are skipped

Rows: paragraph / paragraph_mask (N, T), question / question_mask (N, T'), start / end (N,), answer_mask (N, T)
(exactly tokens j..k), candidates (N, C) when the examples have them. Words outside the vocabulary are <unk>.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

PAD, UNK, BOS, EOS, D_TRUE, D_GEN = "<pad>", "<unk>", "<bos>", "<eos>", "<d_true>", "<d_gen>"
SPECIALS = (PAD, UNK, BOS, EOS, D_TRUE, D_GEN)


@dataclass(frozen=True)
class QAExample:
    paragraph: tuple[str, ...]
    question: tuple[str, ...] | None
    span: tuple[int, int]
    article: str = ""
    answer_type: str = ""
    qid: str = ""
    candidates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        j, k = self.span
        if not 0 <= j <= k < len(self.paragraph):
            raise ValueError(f"{self.qid or 'example'}: span {self.span} outside a paragraph of {len(self.paragraph)}")

    @property
    def answer(self) -> str:
        j, k = self.span
        return " ".join(self.paragraph[j:k + 1])


@dataclass(frozen=True)
class QAVocab:
    words: tuple[str, ...]
    index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {w: i for i, w in enumerate(self.words)})

    @classmethod
    def build(cls, examples: Sequence[QAExample], min_count: int = 1, questions_first: bool = False) -> QAVocab:
        """The specials, then every word of the examples' paragraphs and questions seen >= min_count times, most
        frequent first (ties alphabetical). `questions_first`: the words of the questions come before the others
        (so that a generator's output vocabulary, the first ids, holds the question words of a small labelled
        set)."""
        counts = Counter(w for e in examples for w in (*e.paragraph, *(e.question or ())))
        asked = Counter(w for e in examples for w in (e.question or ())) if questions_first else Counter()
        kept = sorted((w for w, c in counts.items() if c >= min_count and w not in SPECIALS),
                      key=lambda w: (-asked[w], -counts[w], w))
        return cls((*SPECIALS, *kept))

    def __len__(self) -> int:
        return len(self.words)

    def __getitem__(self, word: str) -> int:
        return self.index.get(word, 1)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return [self.index.get(w, 1) for w in tokens]

    def decode(self, ids: Sequence[int]) -> list[str]:
        return [self.words[i] for i in ids]


def context_question(paragraph: Sequence[str], span: tuple[int, int], window: int, placeholder: str | None = None
                     ) -> tuple[str, ...]:
    """p[j-W:j] + p[k+1:k+1+W], cut at the paragraph's edges (thesis Y §3.2.3, "Context"); a cloze set's
    `placeholder` ("xxxxx") stands between the two, where its questions hold it."""
    j, k = span
    return (*paragraph[max(0, j - window):j], *((placeholder,) if placeholder else ()),
            *paragraph[k + 1:k + 1 + window])


def _pad(seqs: Sequence[Sequence[int]], width: int | None = None) -> tuple[Tensor, Tensor]:
    width = width or max(1, max((len(s) for s in seqs), default=1))
    ids = torch.zeros(len(seqs), width, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(list(s)[:width], dtype=torch.long)
    lengths = torch.tensor([min(len(s), width) for s in seqs])
    return ids, torch.arange(width)[None, :] < lengths[:, None]


def qa_rows(examples: Sequence[QAExample], vocab: QAVocab) -> dict[str, Tensor]:
    """Right-padded rows of the examples (module docstring); an unlabelled example's question is one <unk>."""
    if not examples:
        raise ValueError("qa_rows: no examples")
    p, pm = _pad([vocab.encode(e.paragraph) for e in examples])
    q, qm = _pad([vocab.encode(e.question) if e.question else [1] for e in examples])
    start = torch.tensor([e.span[0] for e in examples])
    end = torch.tensor([e.span[1] for e in examples])
    pos = torch.arange(p.size(1))[None, :]
    rows = {"paragraph": p, "paragraph_mask": pm, "question": q, "question_mask": qm, "start": start, "end": end,
            "answer_mask": (pos >= start[:, None]) & (pos <= end[:, None])}
    if any(e.candidates for e in examples):
        rows["candidates"], _ = _pad([vocab.encode(e.candidates) for e in examples])
    return rows


def labelled_pool(pool: Sequence[QAExample], rate: float, n_original: int, rng: np.random.Generator
                  ) -> list[QAExample]:
    """floor(rate · n_original) examples drawn without replacement from the training pool (thesis Y §3.2.5: rates
    are fractions of the original training set; the pool is what is left after the test articles)."""
    n = int(np.floor(rate * n_original + 1e-9))
    if not 0 < n <= len(pool):
        raise ValueError(f"labelling rate {rate} of {n_original} asks for {n} examples; the pool has {len(pool)}")
    return [pool[i] for i in sorted(rng.choice(len(pool), n, replace=False))]


def article_split(examples: Sequence[QAExample], fraction: float, rng: np.random.Generator
                  ) -> tuple[list[QAExample], list[QAExample]]:
    """(rest, held out): a random `fraction` of the articles with all their examples held out (the thesis's 10 %
    test split of SQuAD's training set, by article)."""
    articles = sorted({e.article for e in examples})
    n = max(1, int(round(fraction * len(articles))))
    held = set(np.asarray(articles, dtype=object)[rng.choice(len(articles), n, replace=False)].tolist())
    return [e for e in examples if e.article not in held], [e for e in examples if e.article in held]


def trim_rows(rows: dict[str, Tensor]) -> dict[str, Tensor]:
    """Rows cut to their longest paragraph and question (batches of a set padded to its longest)."""
    T, Q = int(rows["paragraph_mask"].sum(1).max()), int(rows["question_mask"].sum(1).max())
    out = dict(rows)
    for k in ("paragraph", "paragraph_mask", "answer_mask"):
        out[k] = rows[k][:, :T]
    for k in ("question", "question_mask"):
        out[k] = rows[k][:, :Q]
    return out


def squad_word_examples(source) -> list[QAExample]:
    """The answerable questions of a SQuAD JSON file (a path, or its `data.squad.load_squad_json` examples) as
    `QAExample`s (module docstring)."""
    from genfeat.data.facets import TOKEN

    out, cache = [], {}
    for ex in _squad_examples(source):
        if not ex.answers:
            continue
        if ex.context not in cache:
            cache[ex.context] = [(m.group(), m.start(), m.end()) for m in TOKEN.finditer(ex.context.lower())]
        toks = cache[ex.context]
        text, a0 = ex.answers[0]
        hit = [i for i, (_, b, e) in enumerate(toks) if e > a0 and b < a0 + len(text)]
        if not hit:
            continue  # an answer of no word characters
        out.append(QAExample(tuple(t for t, _, _ in toks), tuple(TOKEN.findall(ex.question.lower())),
                             (hit[0], hit[-1]), ex.title, qid=ex.qid))
    return out


def _squad_examples(source):
    from genfeat.data.squad import load_squad_json

    return load_squad_json(source) if isinstance(source, (str, Path)) else source


def squad_paragraphs(source) -> dict[str, str]:
    """Each paragraph (context) of a SQuAD JSON file (a path, or its examples) -> its article title."""
    return {ex.context: ex.title for ex in _squad_examples(source)}


def unlabelled_pairs(paragraphs: dict[str, str], type_freq: dict[str, float], per_paragraph: int,
                     rng: np.random.Generator) -> list[QAExample]:
    """(paragraph, answer) pairs without questions: up to `per_paragraph` rule-based candidates of each paragraph
    (`data.answer_extraction.extract_candidates`) subsampled to `type_freq` (thesis Y §3.2.5: five a paragraph)."""
    from genfeat.data.answer_extraction import extract_candidates, subsample_answers

    out = []
    for text, article in paragraphs.items():
        toks, cands = extract_candidates(text)
        for span, kind in subsample_answers(cands, type_freq, per_paragraph, rng):
            out.append(QAExample(tuple(toks), None, span, article, kind, f"u-{len(out)}"))
    return out


def truncate(example: QAExample, max_len: int) -> QAExample:
    """The example with its paragraph cut to a window of max_len tokens around the answer (spans shifted)."""
    n, (j, k) = len(example.paragraph), example.span
    if n <= max_len:
        return example
    if k - j + 1 > max_len:
        raise ValueError(f"{example.qid}: an answer of {k - j + 1} tokens does not fit max_len {max_len}")
    a = max(0, min((j + k) // 2 - max_len // 2, n - max_len))
    return QAExample(example.paragraph[a:a + max_len], example.question, (j - a, k - a), example.article,
                     example.answer_type, example.qid, example.candidates)
