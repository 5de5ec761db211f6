"""The tasks built from offline sources (`genfeat data build`): sizes, classes, what the build dropped, the
sha256 of the splits and of the source files they came from; records docs/results/data_tasks.{md,json}.

    genfeat data fetch debian-packages wordnet        # after `apt-get update -o Acquire::Languages=en`
    python -m benchmarks.data_tasks [--split-seed 0]
    python -m benchmarks.data_tasks --tasks cbt-books  # rebuild some: the others' recorded rows are kept
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
from typing import Any

import numpy as np

from benchmarks.common import command, load_result, reading, render, result_args, write_results
from genfeat.data import sources as S
from genfeat.data.built_tasks import BUILDERS, CLOZES, GRAPHS, SCHEMAS, build, build_task

NAME = "data_tasks"


def describe(name: str, seed: int) -> dict[str, Any]:
    task = build_task(name, seed)
    manifest = json.loads((S.source_dir(task.source) / S.MANIFEST).read_text())
    train_counts = np.bincount(task.splits["train"][1], minlength=len(task.classes))
    read = ("data.noun", "data.verb", "noun.exc", "verb.exc", "Packages", "Translation-en")  # what the builds read
    files = {f: h for f, h in manifest["files"].items() if f.endswith(read)}
    return task.describe() | {"split_seed": seed, "source_files": files,
                              "largest_classes": [[task.classes[i], int(train_counts[i])]
                                                  for i in np.argsort(-train_counts)[:5]],
                              "smallest_classes": [[task.classes[i], int(train_counts[i])]
                                                   for i in np.argsort(train_counts)[:3]],
                              "example": task.splits["train"][0][0]}


def describe_graph(name: str, seed: int) -> dict[str, Any]:
    graph = build(name, seed)
    manifest = json.loads((S.source_dir(graph.source) / S.MANIFEST).read_text())
    return graph.describe() | {"source_files": {f: h for f, h in manifest["files"].items()},
                               "snapshot": manifest.get("fetched", "")}


def source_digests(names: tuple[str, ...]) -> dict[str, str]:
    """Each source's sha256 of its file manifest."""
    out = {}
    for src in names:
        manifest = json.loads((S.source_dir(src) / S.MANIFEST).read_text())
        out[src] = hashlib.sha256(json.dumps(manifest["files"], sort_keys=True).encode()).hexdigest()
    return out


SCHEMA_SOURCES = {"news-patterns": ("bbc-news", "gensim-testdata"), "debian-schema": ("debian-packages", "wordnet"),
                  "wordnet-schema": ("wordnet",)}


def describe_schema(name: str, seed: int) -> dict[str, Any]:
    return build(name, seed).describe() | {"name": name, "sources": source_digests(SCHEMA_SOURCES[name])}


CLOZE_SOURCES = {"cbt-books": ("austen", "kjv", "bbc-news", "wordnet")}


def describe_cloze(name: str, seed: int) -> dict[str, Any]:
    return build(name, seed).describe() | {"split_seed": seed, "sources": source_digests(CLOZE_SOURCES[name])}


def builds(record: dict[str, Any]) -> str:
    """A line for each build that made rows of the page: its date, command and the rows."""
    made: dict[tuple[str, str], list[str]] = {}
    for rows in record["results"].values():
        for r in rows:
            b = r.get("built", {"command": record["command"], "date": record["date"]})
            made.setdefault((b["date"], b["command"]), []).append(r.get("name") or r["task"])
    return "\n".join(f"Rows {', '.join(names)}: `{cmd}` on {date}." for (date, cmd), names in sorted(made.items()))


def sources_cell(entry: dict[str, Any]) -> str:
    return ", ".join(f"`{k}` {h[:12]}…" for k, h in entry["sources"].items())


def cloze_rows(record: dict[str, Any]) -> list[str]:
    rows = []
    for c in record["results"].get("clozes", []):
        z = c["sizes"]
        rows.append(f"| {c['task']} | {sources_cell(c)} | {z['train']:,} ({z['train_NE']:,} / {z['train_CN']:,}) | "
                    f"{z['valid']:,} ({z['valid_NE']:,} / {z['valid_CN']:,}) | {z['test']:,} ({z['test_NE']:,} / "
                    f"{z['test_CN']:,}) | {z['train_units']:,} / {z['valid_units']:,} / {z['test_units']:,} | "
                    f"{z['passage_tokens_mean']} ({z['passage_tokens_max']:,}) | {c['split_seed']} | "
                    f"`{c['sha256'][:16]}…` |")
    return rows


def markdown(record: dict[str, Any]) -> str:
    rows, details = [], []
    for t in record["results"]["tasks"]:
        s = t["sizes"]
        rows.append(f"| {t['task']} | `{t['source']}` | {t['classes']} | {s['train']:,} | {s['valid']:,} | "
                    f"{s['test']:,} | {t['split_seed']} | `{t['sha256'][:16]}…` |")
        dropped = ", ".join(f"{k} {v}" for k, v in t.items() if k.startswith("dropped_"))
        files = ", ".join(f"`{f}` {h[:12]}…" for f, h in sorted(t["source_files"].items()))
        a, b = t["example"]
        details.append(f"- **{t['task']}**: largest training classes "
                       f"{', '.join(f'{c} ({n:,})' for c, n in t['largest_classes'])}; smallest "
                       f"{', '.join(f'{c} ({n:,})' for c, n in t['smallest_classes'])}. Dropped: {dropped or '–'}. "
                       f"Source files: {files}. Full split sha256 `{t['sha256']}`. First training example: "
                       f"\"{a[:160]}{'…' if len(a) > 160 else ''}\"" + (f" / \"{b[:100]}\"" if b else ""))
    return f"""# Tasks built from offline sources

{{header}}{builds(record)}

`genfeat data build TASK --split-seed S` prints the same numbers (and `--out DIR` writes the splits as
TSV). The sha256 covers the three splits' order, texts and labels (`data.built_task.splits_checksum`); a run of
`multi_cls_classify --task TASK` records it as `data_sha256`.

| task | source | classes | train | valid | test | split seed | sha256 |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

{chr(10).join(details)}

Graphs for cold-start ranking (`genfeat data build debian-citations`; `--out DIR` writes citations.npz and
citations.json); the sha256 covers the papers' ids, the splits, the pairs and every name (`CitationData.checksum`):

| graph | source | papers (train / valid / test) | authors (pairs) | citers (pairs) | words | split seed | sha256 |
|---|---|---|---|---|---|---|---|
{chr(10).join(graph_rows(record)[0])}

{chr(10).join(graph_rows(record)[1])}

Universal-schema matrices (`genfeat data build news-patterns`, `debian-schema`, `wordnet-schema`; `--out DIR`
writes schema.npz and schema.json); the sha256 covers the vocabulary, every row and pair name, the row types, the
cells and the held-out split (`SchemaMatrix.checksum`); the sources' column is the sha256 of each source's file
manifest:

| matrix | sources | patterns | KB relations | entity pairs | cells | tokens | sha256 |
|---|---|---|---|---|---|---|---|
{chr(10).join(schema_rows(record))}

Cloze question sets (`genfeat data build cbt-books`; `--out DIR` writes {{train,valid,test}}.jsonl); questions
as all (NE / CN); units are books, Bible books and articles, never in two splits; the sha256 covers every
question's id, passage, question, span and candidates (`ClozeSet.checksum`); the seed draws answers and candidates:

| set | sources | train | valid | test | units (train / valid / test) | passage tokens, mean (max) | seed | sha256 |
|---|---|---|---|---|---|---|---|---|
{chr(10).join(cloze_rows(record))}

{reading(NAME)}
"""


def graph_rows(record: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the graphs' table rows, their detail lines)."""
    rows, details = [], []
    for g in record["results"].get("graphs", []):
        z = g["sizes"]
        dropped = ", ".join(f"{k.removeprefix('dropped_')} {v}" for k, v in g.items() if k.startswith("dropped_"))
        files = ", ".join(f"`{f}` {h[:12]}…" for f, h in sorted(g["source_files"].items()))
        rows.append(f"| {g['task']} | `{g['source']}` | {z['papers']:,} ({z['train_papers']:,} / "
                    f"{z['valid_papers']:,} / {z['test_papers']:,}) | {z['authors']:,} ({z['authorship_pairs']:,}) | "
                    f"{z['citers']:,} ({z['citation_pairs']:,}) | {z['vocab']:,} | {g['split_seed']} | "
                    f"`{g['sha256'][:16]}…` |")
        details.append(f"- **{g['task']}**: dropped {dropped or '–'}; {g['test_eligible']:,} packages with >= 5 "
                    f"citing packages (test eligible), {g['source_groups']:,} source groups. Source files: {files}. "
                    f"Full sha256 `{g['sha256']}`.")
    return rows, details


def schema_rows(record: dict[str, Any]) -> list[str]:
    rows = []
    for m in record["results"].get("schemas", []):
        z = m["sizes"]
        rows.append(f"| {m['name']} | {sources_cell(m)} | {z['patterns']:,} | {z['relations']:,} | {z['pairs']:,} | "
                    f"{z['cells']:,} | {z['vocab']:,} | `{m['sha256'][:16]}…` |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split-seed", type=int, default=0)
    ap.add_argument("--tasks", nargs="+", default=[*BUILDERS, *GRAPHS, *SCHEMAS, *CLOZES])
    result_args(ap, [])
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    built = {"tasks": [describe(name, args.split_seed) for name in args.tasks if name in BUILDERS],
             "graphs": [describe_graph(name, args.split_seed) for name in args.tasks if name in GRAPHS],
             "schemas": [describe_schema(name, args.split_seed) for name in args.tasks if name in SCHEMAS],
             "clozes": [describe_cloze(name, args.split_seed) for name in args.tasks if name in CLOZES]}
    kept = (load_result(NAME) or {}).get("results", {})
    stamp = {"command": command(), "date": datetime.date.today().isoformat()}  # which build made each row
    results = {k: [r for r in kept.get(k, []) if (r.get("name") or r["task"]) not in args.tasks]
               + [r | {"built": stamp} for r in v] for k, v in built.items()}
    print(write_results(NAME, results, markdown, device="cpu"))


if __name__ == "__main__":
    main()
