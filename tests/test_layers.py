"""The layers point down only: every module is parsed, imports inside functions included, and an arrow that
points up or sideways fails.

    mount  ->  query  ->  ranking, scope            evals -> query, ranking, scope
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

LAYERS = ("mount", "query", "ranking", "scope", "evals")
# What each layer may import from the others (itself always).
ALLOWED = {
    "ranking": set(),
    "scope": set(),
    "query": {"ranking", "scope"},
    "mount": {"query", "ranking", "scope"},  # evals adds its command through an entry point, not an import
    "evals": {"query", "ranking", "scope"},
}


def imported_layers(path: Path) -> list[tuple[int, str]]:
    """(line, layer) for every `recallfs.<layer>` this module imports, at any depth of the code."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if len(parts) > 1 and parts[0] == "recallfs" and parts[1] in LAYERS:
                found.append((node.lineno, parts[1]))
    return found


def modules() -> list[tuple[str, Path]]:
    return [(layer, p) for layer in LAYERS for p in sorted((REPO / layer).rglob("*.py"))]


def test_every_layer_has_modules() -> None:
    assert {layer for layer, _ in modules()} == set(LAYERS)


def _id(value: object) -> str:
    return str(value.relative_to(REPO)) if isinstance(value, Path) else str(value)


@pytest.mark.parametrize(("layer", "path"), modules(), ids=_id)
def test_imports_point_down(layer: str, path: Path) -> None:
    wrong = [f"{path.relative_to(REPO)}:{line} imports recallfs.{other}"
             for line, other in imported_layers(path) if other != layer and other not in ALLOWED[layer]]
    assert wrong == []


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from recallfs.mount import cli\n    import recallfs.evals.harness\n")
    assert imported_layers(module) == [(2, "mount"), (2, "mount"), (3, "evals")]
