"""Text classification tasks built from offline sources (no GLUE here): deterministic, with fixed splits and a
checksum, so a result names exactly the data it was measured on.

    debian-sections    Debian package description -> archive section (`data/debian_sections.py`)
    wordnet-lexnames   WordNet gloss -> lexicographer file (noun.animal, verb.motion, ...) (`data/wordnet.py`)
    wordnet-wic        WiC-style word in context: two example sentences of one lemma, same sense or not

one graph for cold-start ranking (`GRAPHS`, `data.citations.CitationData`):

    debian-citations   Debian packages as papers, maintainers as authors, reverse dependencies as citing papers
                       (`data/debian_citations.py`)

and universal-schema matrices (`SCHEMAS`, `data.universal_schema.SchemaMatrix`; the seed draws the held-out
heads of debian-schema and wordnet-schema):

    news-patterns      patterns between capitalised mentions of BBC News and the Wikipedia dump, their entity
                       pairs (`data/news_patterns.py`)
    debian-schema      package pairs, the archive's relations as KB rows, description patterns, held-out heads
                       (`data/debian_schema.py`)
    wordnet-schema     lemma pairs, WordNet's pointer types as KB rows, gloss and example patterns, held-out heads
                       (`data/wordnet_schema.py`)

and cloze question sets (`CLOZES`, `data.cbt_books.ClozeSet`; the seed draws the answers and candidates, the
book-disjoint splits are fixed):

    cbt-books          Children's Book Test-style questions from Austen, the KJV and BBC News (`data/cbt_books.py`)

`build_task(name, split_seed)` returns a `BuiltTask` (`data/built_task.py`): {"train", "valid", "test"} ->
((text_a, text_b | None) pairs, labels), the class names, and `checksum`, the sha256 of the splits (their order,
texts and labels, as canonical JSON). The same source files and seed give the same checksum;
`docs/results/data_tasks.md` records them. `build(name, seed)` builds either kind (`genfeat data build`).
"""

from __future__ import annotations

from collections.abc import Callable

from genfeat.data.built_task import BuiltTask
from genfeat.data.cbt_books import ClozeSet, cbt_books
from genfeat.data.citations import CitationData
from genfeat.data.debian_citations import debian_citations
from genfeat.data.debian_schema import debian_schema
from genfeat.data.debian_sections import debian_sections
from genfeat.data.news_patterns import news_patterns
from genfeat.data.universal_schema import SchemaMatrix
from genfeat.data.wordnet import lexname_task, wic_task
from genfeat.data.wordnet_schema import wordnet_schema
from genfeat.errors import ConfigError

BUILDERS: dict[str, Callable[[int], BuiltTask]] = {
    "debian-sections": lambda seed: debian_sections(seed=seed),
    "wordnet-lexnames": lambda seed: lexname_task(seed=seed),
    "wordnet-wic": lambda seed: wic_task(seed=seed)}


GRAPHS: dict[str, Callable[[int], CitationData]] = {"debian-citations": lambda seed: debian_citations(seed=seed)}
SCHEMAS: dict[str, Callable[[int], SchemaMatrix]] = {"news-patterns": lambda seed: news_patterns(),
                                                     "debian-schema": lambda seed: debian_schema(seed=seed),
                                                     "wordnet-schema": lambda seed: wordnet_schema(seed=seed)}


CLOZES: dict[str, Callable[[int], ClozeSet]] = {"cbt-books": lambda seed: cbt_books(seed=seed)}


def build_task(name: str, split_seed: int = 0) -> BuiltTask:
    if name not in BUILDERS:
        hint = f" ({name} is a graph: `genfeat data build {name}`)" if name in GRAPHS else ""
        raise ConfigError(f"unknown built task {name!r}{hint}; built tasks: {', '.join(BUILDERS)}")
    return BUILDERS[name](split_seed)


def build(name: str, split_seed: int = 0) -> BuiltTask | CitationData | SchemaMatrix | ClozeSet:
    """A built task, graph, universal-schema matrix or cloze set by name."""
    if name in CLOZES:
        return CLOZES[name](split_seed)
    if name in GRAPHS:
        return GRAPHS[name](split_seed)
    if name in SCHEMAS:
        return SCHEMAS[name](split_seed)
    if name not in BUILDERS:
        known = ", ".join([*BUILDERS, *GRAPHS, *SCHEMAS, *CLOZES])
        raise ConfigError(f"unknown built dataset {name!r}; built: {known}")
    return BUILDERS[name](split_seed)
