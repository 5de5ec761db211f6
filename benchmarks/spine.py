"""The spine before and after the move onto one paradigm layer (issue #55): recipe sizes, who imports a recipe,
wrong-way imports, repeated code and the default suite's time, for two commits of this repository.

    python -m benchmarks.spine [--base REV] [--head REV] [--suite]
    python -m benchmarks.spine --render-only        # the page again from spine.json (after editing the reading)

Each commit is checked out in a temporary git worktree and measured the same way:
- recipes: the lines of every `src/genfeat/recipes/*.py` (the run functions they define, `def run*`);
- imports: the modules of `src/genfeat` outside `recipes/`, `registry.py` and `cli.py` that import a recipe, the
  recipes that import another recipe, the benchmark files that import a recipe, the model families' modules that
  import `tasks`, `paradigms` or `recipes` (an AST walk over the files, as `tests/test_layers.py` reads them);
- repeated code: the `duplicates` command's pairs over `src/` and over `benchmarks/` (all, and those it does not mark
  as boilerplate), when the command is on PATH (the workplace's tool; the page says where it was not);
- with `--suite`: the default suite (`python -m pytest -q -p no:cacheprovider` with the checkout's `src` first on
  the path), its counts and wall time, the two commits one after the other on an otherwise idle machine.

`--base` defaults to the parent of the first commit that names #55; `--head` to HEAD. Writes
docs/results/spine.{md,json}.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import reading, render, write_results

ROOT = Path(__file__).resolve().parents[1]
NAME = "spine"


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def default_base() -> str:
    first = git("log", "--reverse", "--format=%H", "--grep=#55").splitlines()
    if not first:
        raise SystemExit("no commit names #55: give --base REV")
    return git("rev-parse", f"{first[0]}~1")


def imported(path: Path) -> set[str]:
    """The genfeat modules a file imports (`from genfeat.x import y` counts genfeat.x.y when that is a module)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("genfeat")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("genfeat"):
            out |= {f"{node.module}.{a.name}" for a in node.names} | {node.module}
    return out


def module(src: Path, path: Path) -> str:
    return ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")


def recipes_of(names: set[str]) -> set[str]:
    return {n for n in names if n.startswith("genfeat.recipes.") and n.count(".") == 2}


def structure(tree: Path) -> dict[str, Any]:
    src = tree / "src"
    recipe_files = sorted((src / "genfeat" / "recipes").glob("*.py"))
    recipes = {p.stem: len(p.read_text().splitlines()) for p in recipe_files if p.stem != "__init__"}
    runs = sum(len(re.findall(r"^def run\w*\(|^run = ", p.read_text(), re.M)) for p in recipe_files)
    library, recipe_to_recipe, family = [], [], []
    for path in sorted((src / "genfeat").rglob("*.py")):
        name, targets = module(src, path), imported(path)
        if name.startswith("genfeat.recipes."):
            recipe_to_recipe += [f"{name} -> {t}" for t in sorted(recipes_of(targets) - {name})]
        elif name not in ("genfeat.registry", "genfeat.cli") and recipes_of(targets):
            library.append(name)
        if name.startswith("genfeat.models.") and any(t.startswith(("genfeat.tasks", "genfeat.paradigms",
                                                                    "genfeat.recipes")) for t in targets):
            family.append(name)
    benches = sorted(p.name for p in (tree / "benchmarks").glob("*.py")
                     if recipes_of(imported(p)) or "genfeat.recipes" in imported(p))
    return {"recipes": recipes, "recipe_lines": sum(recipes.values()), "recipe_max": max(recipes.values()),
            "run_functions": runs, "library_imports_recipe": library, "recipe_imports_recipe": recipe_to_recipe,
            "benchmarks_import_recipe": benches, "families_import_above": family}


def repeated(tree: Path, folder: str) -> dict[str, Any] | None:
    if shutil.which("duplicates") is None:
        return None
    text = subprocess.run(["duplicates", "--repo", str(tree / folder), "--most", "200", "--seconds", "300"],
                          capture_output=True, text=True).stdout
    rows = [line for line in text.splitlines() if re.match(r"D\d+ ", line)]
    head = re.search(r"(\d+) pairs of places \((\d+) files read\)", text)
    return {"pairs": len(rows), "files": int(head.group(2)) if head else None,
            "not_boilerplate": sum("boilerplate" not in r for r in rows),
            "identical": sum(" shape" not in r for r in rows)}


def suite(tree: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider"], cwd=tree, env=env,
                         capture_output=True, text=True)
    wall = time.perf_counter() - t0
    last = (out.stdout.strip().splitlines() or [""])[-1]
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)", last)}
    failed = [line.split(" - ")[0].removeprefix("FAILED ") for line in out.stdout.splitlines()
              if line.startswith("FAILED ")]
    return {"wall_s": round(wall, 1), "counts": counts, "line": last, "returncode": out.returncode, "failed": failed}


def measure(rev: str, with_suite: bool) -> dict[str, Any]:
    sha = git("rev-parse", rev)
    # beside this checkout, so that tests reading ../shared/ find it as they do here
    with tempfile.TemporaryDirectory(dir=ROOT.parent, prefix=".spine-", ignore_cleanup_errors=True) as tmp:
        tree = Path(tmp)
        git("worktree", "add", "--detach", "--force", str(tree), sha)
        try:
            out = {"commit": sha[:10], "date": git("show", "-s", "--format=%cs", sha),
                   **structure(tree), "repeated_src": repeated(tree, "src"),
                   "repeated_benchmarks": repeated(tree, "benchmarks")}
            if with_suite:
                out["suite"] = suite(tree)
        finally:
            git("worktree", "remove", "--force", str(tree))
    return out


def markdown(record: dict[str, Any]) -> str:
    r = record["results"]
    b, h = r["base"], r["head"]

    def rep(x: dict[str, Any] | None) -> str:
        if x is None:
            return "not measured (no `duplicates` here)"
        return f"{x['pairs']} pairs ({x['not_boilerplate']} not boilerplate, {x['identical']} identical) in " \
            f"{x['files']} files"

    rows = [("recipe files", len(b["recipes"]), len(h["recipes"])),
            ("recipe lines (all files)", f"{b['recipe_lines']:,}", f"{h['recipe_lines']:,}"),
            ("largest recipe file", b["recipe_max"], h["recipe_max"]),
            ("run functions", b["run_functions"], h["run_functions"]),
            ("library modules importing a recipe (not registry / CLI)", len(b["library_imports_recipe"]),
             len(h["library_imports_recipe"])),
            ("recipes importing a recipe", len(b["recipe_imports_recipe"]), len(h["recipe_imports_recipe"])),
            ("benchmark files importing a recipe", len(b["benchmarks_import_recipe"]),
             len(h["benchmarks_import_recipe"])),
            ("model-family modules importing tasks / paradigms / recipes", len(b["families_import_above"]),
             len(h["families_import_above"])),
            ("repeated code, src/", rep(b["repeated_src"]), rep(h["repeated_src"])),
            ("repeated code, benchmarks/", rep(b["repeated_benchmarks"]), rep(h["repeated_benchmarks"]))]
    if "suite" in b and "suite" in h:
        rows.append(("default suite", f"{b['suite']['line']} ({b['suite']['wall_s'] / 60:.1f} min)",
                     f"{h['suite']['line']} ({h['suite']['wall_s'] / 60:.1f} min)"))
    table = "\n".join(f"| {a} | {x} | {y} |" for a, x, y in rows)
    failed = [f"- {which}: `{t}`" for which, rec in (("before", b), ("after", h))
              for t in rec.get("suite", {}).get("failed", [])]
    if failed:
        table += "\n\nFailed in the suite:\n\n" + "\n".join(failed)
    sizes = sorted(set(b["recipes"]) | set(h["recipes"]))
    per = "\n".join(f"| {n} | {b['recipes'].get(n, '–')} | {h['recipes'].get(n, '–')} |" for n in sizes)

    def listed(key: str) -> str:
        items = [f"- before: {', '.join(b[key]) or 'none'}", f"- after: {', '.join(h[key]) or 'none'}"]
        return "\n".join(items)

    text = (f"# The spine before and after issue #55\n\n{{header}}"
            f"Before: commit {b['commit']} ({b['date']}), the parent of the first commit naming #55; after: "
            f"commit {h['commit']} ({h['date']}). The resume and 2-rank matrix is its own page "
            "([reliability.md](reliability.md)); each move's tiny runs were compared before and after in its "
            "commit.\n\n| | before | after |\n|---|---|---|\n" + table +
            "\n\n## Recipe files (lines)\n\n| recipe file | before | after |\n|---|---|---|\n" + per +
            "\n\n## Imports that point the wrong way\n\nLibrary modules importing a recipe:\n\n"
            + listed("library_imports_recipe") + "\n\nRecipes importing a recipe:\n\n" + listed("recipe_imports_recipe")
            + "\n\nBenchmark files importing a recipe:\n\n" + listed("benchmarks_import_recipe")
            + "\n\nModel-family modules importing tasks, paradigms or recipes:\n\n" + listed("families_import_above"))
    note = reading(NAME)
    return text + ("\n\n## Reading\n\n" + note if note else "") + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None, help="the commit before (default: the parent of the first #55 commit)")
    ap.add_argument("--head", default="HEAD")
    ap.add_argument("--suite", action="store_true", help="also time the default suite at both commits (minutes)")
    ap.add_argument("--render-only", action="store_true", help="rewrite the page from the recorded JSON")
    args = ap.parse_args()
    if args.render_only:
        print(render(NAME, markdown))
        return
    base = args.base or default_base()
    results = {"base": measure(base, args.suite), "head": measure(args.head, args.suite)}
    print(write_results(NAME, results, markdown))


if __name__ == "__main__":
    main()
