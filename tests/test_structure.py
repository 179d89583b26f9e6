"""The package stays readable: small modules, short functions and classes, and imports that only go
from a stage to the stages on its left (text -> engine -> scheduler -> encoder -> transport ->
client), never back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "src" / "speakstream"
MODULES = sorted(PACKAGE.rglob("*.py"))
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


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_file_class_or_function_is_too_long_to_read_at_once(path: Path) -> None:
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


LAYERS = {
    "types": 0,
    "errors": 0,
    "data": 1,
    "storage": 1,
    "text": 2,
    "engine": 3,
    "audio": 4,
    "config": 4,
    "scheduler": 4,
    "protocol": 5,
    "channel": 5.5,
    "server": 6,
    "client": 6,
    "agent": 7,
    "web": 7,
    "bench": 8,
    "loadtest": 8.5,
    "cli": 9,
    "__init__": 10,
    "__main__": 10,
}
"""Each top-level module's place in the flow: it may import only from those before it (the client
and the server, side by side, share only the protocol; the tools on the right use everything)."""


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_imports_only_from_its_left(path: Path) -> None:
    own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    targets = {m.split(".")[1] for m in _imports(path) if m.startswith("speakstream.")}
    assert not [t for t in targets if t != own and LAYERS[t] >= LAYERS[own]], (own, targets)


def test_every_top_level_module_has_its_place() -> None:
    tops = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in MODULES}
    assert tops == set(LAYERS)
