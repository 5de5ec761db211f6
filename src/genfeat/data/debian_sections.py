"""Debian package sections from package descriptions: a real topic-classification task built offline from the
archive's own package lists (`genfeat data fetch debian-packages`, after `apt-get update -o
Acquire::Languages=en`).

Each binary package of the lists has a `Section` (admin, devel, games, libs, python, science, ...; the archive
area prefix such as `contrib/` removed) in `Packages` and a description in `Translation-en`, joined on (Package,
Description-md5). The text is the synopsis, a full stop, and the long description (its " ." paragraph lines as
breaks, whitespace collapsed); the label is the section. The build is deterministic:

1. one record per package name (the first in list order: the lists are read in file-name order);
2. identical texts: kept once (the first package by name) when all their packages share a section, dropped when
   they disagree (e.g. a transitional package described identically in two sections);
3. sections with at least `min_count` packages are kept (the issue's threshold: 200);
4. packages sorted by name, then `built_task.sized_split` (class-stratified, fixed by the seed): n_valid
   validation and n_test test packages, the rest training.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from genfeat.data.built_task import BuiltTask, labelled_splits
from genfeat.data.sources import require
from genfeat.errors import DataError


def read_deb822(path: str | Path) -> Iterator[dict[str, str]]:
    """The paragraphs of a Debian control-format file (Packages, Translation-*): field -> value, continuation
    lines joined to their field's value with newlines (their one leading space removed)."""
    para: dict[str, str] = {}
    last = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                if para:
                    yield para
                para, last = {}, None
            elif line[0] in " \t":
                if last is None:
                    raise DataError(f"{path}: a continuation line with no field before it: {line[:60]!r}")
                para[last] += "\n" + line[1:]
            else:
                key, sep, value = line.partition(":")
                if not sep:
                    raise DataError(f"{path}: not a 'Field: value' line: {line[:60]!r}")
                last = key.strip()
                para[last] = value.strip()
    if para:
        yield para


def description_parts(description: str) -> tuple[str, str]:
    """(synopsis, long description), each one line (" ." paragraph marks removed, whitespace collapsed)."""
    first, _, rest = description.partition("\n")
    body = " ".join(w for line in rest.split("\n") if line.strip() != "." for w in line.split())
    return " ".join(first.split()), body


def description_text(description: str) -> str:
    """Synopsis + long description as one line of prose: "synopsis. long text"."""
    first, body = description_parts(description)
    return f"{first}. {body}" if body else first


def described_packages(base: Path) -> dict[str, tuple[dict[str, str], str]]:
    """{package: (its first paragraph in Packages, its Description-en from Translation-en)} for the packages whose
    description is there (joined on Package and Description-md5), in Packages' order."""
    described = {}
    for p in read_deb822(base / "Translation-en"):
        if "Package" in p and "Description-en" in p:
            described.setdefault((p["Package"], p.get("Description-md5", "")), p["Description-en"])
    out: dict[str, tuple[dict[str, str], str]] = {}
    for p in read_deb822(base / "Packages"):
        name = p.get("Package")
        if name and name not in out and (d := described.get((name, p.get("Description-md5", "")))) is not None:
            out[name] = (p, d)
    if not out:
        raise DataError(f"{base}: no package of Packages has a description in Translation-en (were the English "
                        "translation lists fetched? `apt-get update -o Acquire::Languages=en`)")
    return out


def debian_sections(root: str | Path | None = None, seed: int = 0, min_count: int = 200, n_valid: int = 1000,
                    n_test: int = 2000) -> BuiltTask:
    base = Path(root) if root is not None else require("debian-packages", "Packages", "Translation-en")
    rows = {name: (description_text(d), p["Section"].rsplit("/", 1)[-1])
            for name, (p, d) in described_packages(base).items() if "Section" in p}
    by_text: dict[str, list[str]] = {}
    for name in sorted(rows):
        by_text.setdefault(rows[name][0], []).append(name)
    kept, conflicting, duplicates = [], 0, 0
    for names in by_text.values():
        secs = {rows[n][1] for n in names}
        if len(secs) > 1:
            conflicting += len(names)
            continue
        duplicates += len(names) - 1
        kept.append(names[0])
    counts = Counter(rows[n][1] for n in kept)
    kept = sorted(n for n in kept if counts[rows[n][1]] >= min_count)
    splits, classes = labelled_splits([(rows[n][0], None) for n in kept], [rows[n][1] for n in kept], seed,
                                      n_valid, n_test)
    return BuiltTask("debian-sections", splits, classes, "debian-packages", notes={
        "packages_described": len(rows), "dropped_duplicate_texts": duplicates,
        "dropped_conflicting_texts": conflicting, "min_count": min_count,
        "dropped_small_sections": sum(1 for s, c in counts.items() if c < min_count)})
