"""Sentence splitting by a documented rule, not a trained splitter: a sentence ends at . ! ? (followed by closing
quotes / brackets) before whitespace and an upper-case letter, digit or opening quote, or at a paragraph break; the
abbreviations Mr. Mrs. Ms. Dr. St. Mt. vs. e.g. i.e. etc. and single letters ("J.") do not end one."""

from __future__ import annotations

import re

_END = re.compile(r"[.!?][\"')\]]*\s+(?=[A-Z0-9\"'(\[])")
_ABBREV = {"mr.", "mrs.", "ms.", "dr.", "st.", "mt.", "vs.", "e.g.", "i.e.", "etc."}


def split_sentences(text: str) -> list[str]:
    """The sentences of a text, in order (the rule: module docstring)."""
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
