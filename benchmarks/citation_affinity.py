"""Reviewer-paper affinity time (`genfeat affinity`) for 1,000 submissions x 100 reviewers on this machine;
records docs/results/citation_affinity.{md,json}.

    python -m benchmarks.citation_affinity --run runs/bench_citation/k5-seed0 [--repeats 3]

The venue is built from the Debian citation graph in openreview-expertise's layout: the 100 maintainers with the
most packages are the reviewers, each archive up to 10 of their packages (title = synopsis, abstract = the long
description), and 1,000 other packages the submissions. Each method's wall time covers the whole command:
reading the venue, tokenising, the facets or SIF vectors, scoring and writing the CSV; the median of the repeats.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import render, result_args, write_results
from genfeat.cli import main as genfeat
from genfeat.data.debian_citations import debian_citations
from genfeat.data.debian_sections import described_packages, description_parts
from genfeat.data.sources import require

NAME = "citation_affinity"
METHODS = ("max-facet", "cbow-max", "mixture")


def venue(root: Path, n_reviewers: int = 100, per_reviewer: int = 10, n_submissions: int = 1000) -> None:
    data = debian_citations()
    described = described_packages(require("debian-packages", "Packages", "Translation-en"))
    text = {n: description_parts(described[n][1]) for n in data.paper_names}
    owner = {}
    for p, a in data.authorship.tolist():
        owner.setdefault(a, []).append(data.paper_names[p])
    top = sorted(owner, key=lambda a: (-len(owner[a]), a))[:n_reviewers]
    used = set()
    (root / "archives").mkdir(parents=True)
    for a in top:
        papers = owner[a][:per_reviewer]
        used |= set(papers)
        (root / "archives" / f"{data.author_names[a]}.jsonl").write_text("".join(
            json.dumps({"content": {"title": text[n][0], "abstract": text[n][1]}}) + "\n" for n in papers))
    subs = [n for n in data.paper_names if n not in used][:n_submissions]
    (root / "submissions.json").write_text(json.dumps(
        {n: {"content": {"title": text[n][0], "abstract": text[n][1]}} for n in subs}))


def measure(run: str, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        venue(root)
        times = {}
        for method in METHODS:
            ts = []
            for _ in range(repeats):
                t = time.perf_counter()
                assert genfeat(["affinity", run, "--archives", str(root / "archives"), "--submissions",
                                str(root / "submissions.json"), "--out", str(root / "out.csv"), "--method",
                                method]) == 0
                ts.append(time.perf_counter() - t)
            times[method] = {"median_s": statistics.median(ts), "all_s": ts}
        rows = sum(1 for _ in open(root / "out.csv"))
    return {"run": run, "rows": rows, "threads": torch.get_num_threads(), "methods": times}


def markdown(record: dict[str, Any]) -> str:
    r = record["results"]
    lines = [f"| {m} | {r['methods'][m]['median_s']:.1f} |" for m in METHODS]
    return f"""# Reviewer-paper affinity time

{{header}}`genfeat affinity` on a venue of 1,000 submissions x 100 reviewers (10 archive papers each) built from
the Debian citation graph, with the model of `{r['run']}` (trained on the Debian graph, so the reviewers are scored
as is: through the facets of their archive papers); {r['rows']:,} rows written, {r['threads']} torch threads.
Each time is the whole command (reading, tokenising, encoding, scoring, writing), median of
{len(r['methods'][METHODS[0]]['all_s'])} runs.

| method | seconds |
|---|---|
{chr(10).join(lines)}
"""


def run_main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default="runs/bench_citation/k5-seed0")
    ap.add_argument("--repeats", type=int, default=3)
    result_args(ap, [])
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    print(write_results(NAME, measure(args.run, args.repeats), markdown, device="cpu"))


if __name__ == "__main__":
    run_main()
