"""Documents as ordered sentences, for the models trained on neighbouring sentences (Multi-CLS BERT's triples,
the multi-facet sentence model); sentences are cut by `data.sentence_split.split_sentences`.

    bbc_documents(...)      the BBC News articles of the train / valid splits (the split every BBC recipe shares),
                            each a list of sentences; the test articles are never read
    documents(corpus, ...)  the same for any offline prose, "+"-joined: bbc-news; wiki (the Wikipedia articles
                            of gensim's dump, lead and body, `data.summaries`); any line corpus of
                            `data.corpora` (austen, kjv, shakespeare, python-doc, linux-doc, dir:PATH), its
                            train / valid lines cut into documents of `lines_per_doc` lines. Sentences are
                            deduplicated deterministically: a sentence (lower-cased, whitespace collapsed) seen
                            earlier, in corpus order then document order, is dropped; empty documents too
"""

from __future__ import annotations

from genfeat.data.sentence_split import split_sentences
from genfeat.data.text_classification import load_bbc_news, stratified_split
from genfeat.errors import ConfigError


def _line_documents(name: str, lines_per_doc: int) -> dict[str, list[list[str]]]:
    from genfeat.data.corpora import load_corpus

    splits = load_corpus(name)
    return {k: [split_sentences("\n".join(splits[k][a: a + lines_per_doc]).replace("\n", " "))
                for a in range(0, len(splits[k]), lines_per_doc)] for k in ("train", "valid")}


def _wiki_documents(split_seed: int) -> dict[str, list[list[str]]]:
    import numpy as np

    from genfeat.data.summaries import wiki_articles

    docs = [a.lead + a.body for a in wiki_articles()]
    valid = set(np.random.default_rng(split_seed).permutation(len(docs))[: max(1, len(docs) // 10)].tolist())
    return {"train": [d for i, d in enumerate(docs) if i not in valid],
            "valid": [d for i, d in enumerate(docs) if i in valid]}


def documents(corpus: str = "bbc-news", split_seed: int = 0, limit_docs: int = 0, lines_per_doc: int = 40,
              dedupe: bool = True) -> dict[str, list[list[str]]]:
    """{"train", "valid"}: the documents of every "+"-joined corpus as lists of sentences, deduplicated unless
    `dedupe` is off (module docstring); `limit_docs` > 0: the first N of each corpus and split."""
    out: dict[str, list[list[str]]] = {"train": [], "valid": []}
    for name in corpus.split("+"):
        if name == "bbc-news":
            part = bbc_documents(split_seed, limit_docs)
        elif name == "wiki":
            part = _wiki_documents(split_seed)
        else:
            part = _line_documents(name, lines_per_doc)
        for k in out:
            out[k] += part[k][:limit_docs] if limit_docs else part[k]
    if not dedupe:
        return out
    seen: set[str] = set()
    for k in ("train", "valid"):
        kept = []
        for doc in out[k]:
            new = []
            for sent in doc:
                key = " ".join(sent.lower().split())
                if key not in seen:
                    seen.add(key)
                    new.append(sent)
            if new:
                kept.append(new)
        out[k] = kept
    return out


def bbc_documents(split_seed: int = 0, limit_docs: int = 0, corpus: str = "bbc-news") -> dict[str, list[list[str]]]:
    """{"train", "valid"}: the articles of those splits as lists of sentences (`limit_docs` > 0: the first N)."""
    if corpus != "bbc-news":
        raise ConfigError(f"data.corpus: only bbc-news has documents here, got {corpus!r}")
    docs = load_bbc_news()
    split = stratified_split(docs.labels, split_seed)
    out = {}
    for k in ("train", "valid"):
        idx = split[k][:limit_docs] if limit_docs else split[k]
        out[k] = [split_sentences(docs.texts[i]) for i in idx]
    return out
