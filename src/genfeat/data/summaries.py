"""Documents with a human-written summary, for extractive summarisation (thesis C §3.2.2.4, Eq. 3.7):

    wiki_articles(path)     Wikipedia articles of a MediaWiki XML dump (offline: gensim's test dump, `genfeat data
                            fetch gensim-testdata`), each as its lead section (the reference summary, written by
                            the article's editors) and its body sentences (what a summariser selects from)
    cnn_dm_story(path)      a CNN / Daily Mail `.story` file (Hermann et al. 2015): the article's sentences and its
                            @highlight lines (the reference), as See et al.'s preprocessing reads them
    load_stsb(path)         an STS-B TSV file (GLUE layout): (sentence 1, sentence 2, score in [0, 5]) rows

Wikitext becomes plain text through `mwparserfromhell` (templates, references, files, categories and tables
dropped, link texts kept). The lead is everything before the first section heading; the body is every section
except the reference-list ones (`SKIP_SECTIONS`). Redirects, pages outside the article namespace, and articles
whose lead has fewer than `min_lead` sentences or whose body has fewer than `min_body` are left out.
"""

from __future__ import annotations

import bz2
import csv
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from genfeat.data.sentence_split import split_sentences
from genfeat.data.sources import require
from genfeat.errors import DataError

WIKI_DUMP = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
SKIP_SECTIONS = {"see also", "references", "external links", "further reading", "notes", "bibliography",
                 "sources", "citations", "footnotes", "notes and references"}


@dataclass(frozen=True)
class Article:
    title: str
    lead: list[str]  # the reference summary's sentences
    body: list[str]  # the candidate sentences, in order


def wikitext_to_text(wikitext: str) -> str:
    """Plain text of wikitext: templates, <ref>s, tables, files / categories dropped; link and bold text kept."""
    import mwparserfromhell

    code = mwparserfromhell.parse(wikitext)
    for node in code.filter_tags(recursive=False):
        if str(node.tag).lower() in ("ref", "table", "gallery"):
            code.remove(node)
    for link in code.filter_wikilinks():
        if re.match(r"(?i)(file|image|category|media):", str(link.title)):
            try:
                code.remove(link)
            except ValueError:  # already gone with its parent
                pass
    text = code.strip_code(normalize=True, collapse=True)
    return re.sub(r"\n{3,}", "\n\n", text)


def split_article(wikitext: str) -> tuple[str, str]:
    """(lead wikitext, body wikitext without the reference-list sections)."""
    parts = re.split(r"(?m)^(==+)\s*(.*?)\s*\1\s*$", wikitext)
    lead, body, skip = parts[0], [], False
    for level, title, text in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        if len(level) == 2:  # a top-level section decides for its subsections
            skip = title.strip().lower() in SKIP_SECTIONS
        if not skip:
            body.append(text)
    return lead, "\n\n".join(body)


def _sentences(wikitext: str) -> list[str]:
    return [s for s in split_sentences(wikitext_to_text(wikitext)) if len(s.split()) >= 3]


def wiki_articles(path: str | Path | None = None, min_lead: int = 2, min_body: int = 8) -> list[Article]:
    path = Path(path) if path is not None else require("gensim-testdata", WIKI_DUMP) / WIKI_DUMP
    out = []
    opener = bz2.open if path.suffix == ".bz2" else open
    try:
        with opener(path, "rb") as f:
            for _, el in ET.iterparse(f):
                if not el.tag.endswith("}page") and el.tag != "page":
                    continue
                ns = next((c.text for c in el if c.tag.endswith("ns")), "0")
                title = next((c.text for c in el if c.tag.endswith("title")), "")
                text = next((t.text for t in el.iter() if t.tag.endswith("text")), None) or ""
                el.clear()
                if ns != "0" or text.lstrip().upper().startswith("#REDIRECT"):
                    continue
                lead, body = split_article(text)
                lead_s, body_s = _sentences(lead), _sentences(body)
                if len(lead_s) >= min_lead and len(body_s) >= min_body:
                    out.append(Article(title, lead_s, body_s))
    except (ET.ParseError, OSError, EOFError) as e:
        raise DataError(f"{path}: not a readable MediaWiki XML dump ({e})") from None
    return out


def cnn_dm_story(path: str | Path) -> Article:
    """A `.story` file: paragraphs of the article, then "@highlight" followed by each highlight."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    parts = text.split("@highlight")
    body = [s for s in split_sentences(parts[0]) if s.strip()]
    highlights = [" ".join(h.split()) for h in parts[1:] if h.strip()]
    if not body or not highlights:
        raise DataError(f"{path}: a .story file needs article text and at least one @highlight")
    return Article(Path(path).stem, [h if h.endswith(".") else h + " ." for h in highlights], body)


def load_stsb(path: str | Path) -> list[tuple[str, str, float]]:
    """An STS-B TSV (GLUE: a header with sentence1, sentence2 and score columns; quotes are literal)."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or not {"sentence1", "sentence2", "score"} <= set(rows[0]):
        raise DataError(f"{path}: not an STS-B TSV (the header needs sentence1, sentence2 and score)")
    i1, i2, js = (rows[0].index(c) for c in ("sentence1", "sentence2", "score"))
    out = []
    for n, r in enumerate(rows[1:], 2):
        try:
            out.append((r[i1], r[i2], float(r[js])))
        except (IndexError, ValueError):
            raise DataError(f"{path}:{n}: expected sentence1, sentence2 and a numeric score") from None
    return out
