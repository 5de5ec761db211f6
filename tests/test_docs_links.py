"""Every relative link in README.md and docs/ points at a file of the repository, and every #anchor at a heading of
its target (GitHub's slug: lower case, punctuation other than '-' and '_' dropped, spaces to '-')."""

from __future__ import annotations

import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]*?)(?:#([^)\s]+))?\)")  # [text](target#anchor), inline links only
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.M)


def slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@functools.cache
def prose(path: Path) -> str:
    """A markdown file's text without its fenced code blocks (no links or headings there)."""
    return re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    return frozenset(slug(h) for h in HEADING.findall(prose(path)))


def broken_links(path: Path) -> list[str]:
    """The links of one markdown file that do not resolve, as 'target#anchor' strings."""
    bad = []
    for target, anchor in LINK.findall(prose(path)):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        dest = (path.parent / target).resolve() if target else path
        if not dest.exists():
            bad.append(target + (f"#{anchor}" if anchor else ""))
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}#{anchor}")
    return bad


def test_slug_follows_github() -> None:
    assert slug("Multi-CLS BERT on real tasks") == "multi-cls-bert-on-real-tasks"
    assert slug("Table 5.2: ablations (K = 5)") == "table-52-ablations-k--5"


def test_a_missing_file_and_a_missing_anchor_are_reported(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Top\n\n## Some part\n", encoding="utf-8")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md) [ok](a.md#some-part) [no](a.md#other) [no](c.md) [web](https://x.org/c.md)\n"
                    "```\n[in code](d.md)\n## Not a heading\n```\n"
                    "[self](#here) [no](#not-a-heading)\n\n## Here\n", encoding="utf-8")
    assert broken_links(page) == ["a.md#other", "c.md", "#not-a-heading"]


def test_links_resolve() -> None:
    bad = {str(p.relative_to(ROOT)): b for p in markdown_files() if (b := broken_links(p))}
    assert bad == {}, f"links to what does not exist: {bad}"


def test_every_results_page_is_in_the_index() -> None:
    """docs/results/README.md's index links every page (a `.reading.md` is part of its page)."""
    results = ROOT / "docs" / "results"
    index = prose(results / "README.md").split("## Digest")[0]
    linked = {target for target, _ in LINK.findall(index)}
    pages = {p.name for p in results.glob("*.md") if p.name != "README.md" and not p.name.endswith(".reading.md")}
    assert pages <= linked, f"add to docs/results/README.md's index: {sorted(pages - linked)}"


def test_the_readme_quotes_numbers_its_result_pages_hold() -> None:
    """Every number in the README's table of systems is on a page under docs/results of that row's system, up to
    the README's rounding (the pages render their JSON; a number typed by hand that no page holds fails)."""
    readme = prose(ROOT / "README.md")
    table = readme.split("## The systems", 1)[1].split("\n## ", 1)[0]
    results = ROOT / "docs" / "results"
    index = prose(results / "README.md")
    checked = 0
    for row in (line for line in table.splitlines() if line.startswith("| ") and "docs/results/README.md#" in line):
        anchor = re.search(r"docs/results/README\.md#([\w\-]+)", row).group(1)
        section = next(s for s in index.split("\n### ")[1:] if slug(s.splitlines()[0]) == anchor)
        pages = " ".join(prose(results / t) for t, _ in LINK.findall(section) if (results / t).is_file())
        on_pages = [float(x) for x in re.findall(r"\d+\.\d+", pages.replace(",", ""))]
        headline = row.split(" | ")[3]
        for number in re.findall(r"\d+\.\d+", headline):
            half = 0.5 * 10 ** -len(number.split(".")[1]) + 1e-9
            assert any(abs(p - float(number)) <= half for p in on_pages), \
                f"{number} ({headline[:60]}...) is on no page of {anchor}"
            checked += 1
    assert checked >= 15
