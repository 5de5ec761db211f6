"""The import arrows of `src/genfeat` point down (DESIGN: a model family imports no task or recipe code; nothing but
the registry and the CLI imports a recipe), and no two modules import each other, directly or around a circle.

Every `import` / `from ... import` in a module counts, at any depth (a function-level import is an arrow too);
`from genfeat.pkg import name` is an arrow to `genfeat.pkg.name` when that is a module, else to `genfeat.pkg`.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).parents[1] / "src"

# layer -> the layers it must not import
FORBIDDEN = {
    "nn": {"heads", "models", "tasks", "paradigms", "recipes", "train", "losses", "data", "analysis"},
    "heads": {"models", "tasks", "paradigms", "recipes", "train", "data", "analysis"},
    "metrics": {"models", "tasks", "paradigms", "recipes", "train", "heads", "losses", "data"},
    "losses": {"models", "tasks", "paradigms", "recipes", "train", "data"},
    "data": {"models", "tasks", "paradigms", "recipes", "train", "losses", "heads", "nn", "analysis"},
    "models": {"tasks", "paradigms", "recipes"},
    "train": {"models", "tasks", "paradigms", "recipes", "heads", "losses", "analysis"},
    "tasks": {"paradigms", "recipes"},
    "paradigms": {"recipes"},
    "analysis": {"recipes", "paradigms"},
}
MAY_IMPORT_RECIPES = {"genfeat.registry", "genfeat.cli"}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")


def is_module(name: str) -> bool:
    p = SRC / Path(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted((SRC / "genfeat").rglob("*.py")):
        edges = graph.setdefault(module_name(path), set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name.startswith("genfeat.")}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("genfeat"):
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    edges.add(sub if is_module(sub) else node.module)
        edges.discard("genfeat")  # the package root imports nothing at import time (its API is lazy)
    return graph


def layer(module: str) -> str:
    """genfeat.models.gpt.model -> models; a top-level module (genfeat.cli) is its own layer."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_arrows_point_down():
    bad = []
    for mod, targets in import_graph().items():
        for t in sorted(targets):
            if layer(t) == "recipes" and mod not in MAY_IMPORT_RECIPES:  # a recipe's shared pieces are library code
                bad.append(f"{mod} -> {t} (only the registry and the CLI import recipes)")
            elif layer(t) in FORBIDDEN.get(layer(mod), ()):
                bad.append(f"{mod} -> {t} ({layer(mod)} must not import {layer(t)})")
    assert not bad, "wrong-way imports:\n" + "\n".join(bad)


def test_no_import_cycles():
    graph = import_graph()
    cycles, state, stack = [], {}, []

    def visit(u: str) -> None:
        state[u] = "open"
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == "open":
                cycles.append(" -> ".join(stack[stack.index(v):] + [v]))
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = "done"

    for u in sorted(graph):
        if u not in state:
            visit(u)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


BENCHMARKS = Path(__file__).parents[1] / "benchmarks"
# benchmarks that still reach into a recipe module for library code (#55, to move); a new one may not
STILL_IMPORT_RECIPES: set[str] = set()


def recipe_imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) and node.module else []
        out += [n for n in names if n.startswith("genfeat.recipes")]
    return out


def test_benchmarks_reach_recipes_through_the_registry():
    """A benchmark names a recipe and its presets through `genfeat.registry.RECIPES` and runs it with
    `run_recipe`; library code it needs lives in the library, not in a recipe module."""
    found = {p.stem: recipe_imports(p) for p in sorted(BENCHMARKS.glob("*.py"))}
    new = {k: v for k, v in found.items() if v and k not in STILL_IMPORT_RECIPES}
    assert not new, f"benchmarks importing recipe modules: {new}"
    moved = sorted(k for k in STILL_IMPORT_RECIPES if not found.get(k))
    assert not moved, f"no longer import a recipe: take them off STILL_IMPORT_RECIPES: {moved}"
