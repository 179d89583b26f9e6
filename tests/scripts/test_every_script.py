"""Every script in ``scripts/`` is a tool that still runs: each imports what it names and parses its
arguments (``--help``), so a module renamed under it fails here rather than for whoever runs it
next; and each says in its docstring how it is run. Measurement scripts run for minutes on the
real model, so their figures are checked where docs/design.md cites them, not here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).parents[2] / "scripts").glob("*.py"))


def test_there_are_scripts() -> None:
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_the_script_imports_and_parses_its_arguments(script: Path) -> None:
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:"), done.stdout[:200]


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_the_script_says_how_it_is_run(script: Path) -> None:
    docstring = script.read_text().split('"""')[1]
    assert f"python scripts/{script.name}" in docstring, script.name
