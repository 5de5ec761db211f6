"""The documents XLNet pretraining reads (thesis Y §2.2; spec xlnet.md §2.13): the articles of the BBC News training
split (their labels unused; the split is the classifier's, so no test article is seen), or any genfeat LM corpus cut
into 200-line documents, or several joined with "+" (bbc-news+ptb); and one token stream of them, each document's
lines followed by <eod>.

    pretrain_documents(corpus, split_seed=0, limit_docs=0) -> {"train", "valid"} -> [document text]
    encode_documents(tok, docs) -> int64 stream
"""

from __future__ import annotations

import numpy as np

from genfeat.data.corpora import load_corpus
from genfeat.data.text_classification import load_bbc_news, stratified_split
from genfeat.data.tokenizers import SentencePieceTokenizer

LM_DOCUMENT_LINES = 200  # an LM corpus (one text per split) is cut into documents of this many lines


def pretrain_documents(corpus: str, split_seed: int = 0, limit_docs: int = 0) -> dict[str, list[str]]:
    """{"train", "valid"} -> documents (each a text with newlines), corpus by corpus of `corpus` ("+"-joined);
    `limit_docs` > 0 keeps the first that many of each corpus's split."""
    out: dict[str, list[str]] = {"train": [], "valid": []}
    for name in corpus.split("+"):
        if name == "bbc-news":
            docs = load_bbc_news()
            split = stratified_split(docs.labels, split_seed)
            part = {k: [docs.texts[i] for i in split[k]] for k in out}
        else:
            splits = load_corpus(name)
            part = {k: ["\n".join(splits[k][i: i + LM_DOCUMENT_LINES])
                        for i in range(0, len(splits[k]), LM_DOCUMENT_LINES)] for k in out}
        for k in out:
            out[k] += part[k][: limit_docs] if limit_docs else part[k]
    return out


def encode_documents(tok: SentencePieceTokenizer, docs: list[str]) -> np.ndarray:
    """One stream: each document's non-empty lines encoded, then <eod>."""
    eod = tok.ids["<eod>"]
    parts = []
    for doc in docs:
        lines = [line for line in doc.split("\n") if line.strip()]
        parts.append(tok.encode_lines(lines))
        parts.append(np.array([eod]))
    return np.concatenate(parts)
