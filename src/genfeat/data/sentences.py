"""Documents as ordered sentences, for the models trained on neighbouring sentences (Multi-CLS BERT's triples,
the multi-facet sentence model).

    split_sentences(text)   a sentence ends at . ! ? (followed by closing quotes / brackets) before whitespace and an
                            upper-case letter, digit or opening quote, or at a paragraph break; the abbreviations
                            Mr. Mrs. Ms. Dr. St. Mt. vs. e.g. i.e. etc. and single letters ("J.") do not end one.
                            A documented rule, not a trained splitter.
    bbc_documents(...)      the BBC News articles of the train / valid splits (the split every BBC recipe shares),
                            each a list of sentences; the test articles are never read
"""

from __future__ import annotations

import re

from genfeat.data.text_classification import load_bbc_news, stratified_split
from genfeat.errors import ConfigError

_END = re.compile(r"[.!?][\"')\]]*\s+(?=[A-Z0-9\"'(\[])")
_ABBREV = {"mr.", "mrs.", "ms.", "dr.", "st.", "mt.", "vs.", "e.g.", "i.e.", "etc."}


def split_sentences(text: str) -> list[str]:
    """The sentences of a text, in order (module docstring for the rule)."""
    out = []
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(para.split())
        start = 0
        for m in _END.finditer(para):
            word = para[:m.start() + 1].rsplit(" ", 1)[-1].lower()
            if word in _ABBREV or re.fullmatch(r"[a-z]\.", word):  # "Mr." or an initial "J."
                continue
            out.append(para[start: m.end()].strip())
            start = m.end()
        if para[start:].strip():
            out.append(para[start:].strip())
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
