"""The engine and scheduler stay readable: small modules, short functions, and imports that only
go from the scheduler to the engine, never back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "src" / "speakstream"
WING = sorted([*(PACKAGE / "engine").rglob("*.py"), *(PACKAGE / "scheduler").rglob("*.py")])
LIMITS = {"file": 400, "class": 250, "function": 60}


def _sizes(path: Path) -> list[tuple[str, str, int]]:
    """(kind, name, lines) of the file and of every class and function in it."""
    source = path.read_text()
    found = [("file", str(path.relative_to(PACKAGE)), source.count("\n") + 1)]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            found.append((kind, f"{path.name}:{node.name}", (node.end_lineno or node.lineno) - node.lineno + 1))
    return found


@pytest.mark.parametrize("path", WING, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_file_class_or_function_of_the_engine_or_scheduler_is_too_long_to_read_at_once(path: Path) -> None:
    over = [(kind, name, lines) for kind, name, lines in _sizes(path) if lines > LIMITS[kind]]
    assert not over, over


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    return names | {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}


def test_the_engine_imports_nothing_to_its_right() -> None:
    """The scheduler uses the engine; the engine knows nothing of the scheduler, the server or the
    client (the load reaches it as data, ``types.Load``)."""
    right = ("speakstream.scheduler", "speakstream.server", "speakstream.client", "speakstream.agent")
    for path in sorted((PACKAGE / "engine").rglob("*.py")):
        assert not [m for m in _imports(path) if m.startswith(right)], path
