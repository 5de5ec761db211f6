"""The tasks built from offline sources (`genfeat data build`): sizes, classes, what the build dropped, the
sha256 of the splits and of the source files they came from; records docs/results/data_tasks.{md,json}.

    genfeat data fetch debian-packages wordnet        # after `apt-get update -o Acquire::Languages=en`
    python -m benchmarks.data_tasks [--split-seed 0]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from benchmarks.common import reading, render, result_args, write_results
from genfeat.data import sources as S
from genfeat.data.built_tasks import BUILDERS, build_task

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

{{header}}`genfeat data build TASK --split-seed S` prints the same numbers (and `--out DIR` writes the splits as
TSV). The sha256 covers the three splits' order, texts and labels (`data.built_task.splits_checksum`); a run of
`multi_cls_classify --task TASK` records it as `data_sha256`.

| task | source | classes | train | valid | test | split seed | sha256 |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

{chr(10).join(details)}

{reading(NAME)}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split-seed", type=int, default=0)
    ap.add_argument("--tasks", nargs="+", default=list(BUILDERS))
    result_args(ap, [])
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    tasks = [describe(name, args.split_seed) for name in args.tasks]
    print(write_results(NAME, {"tasks": tasks}, markdown, device="cpu"))


if __name__ == "__main__":
    main()
