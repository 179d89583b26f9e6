"""The alerting and recording rules in ``deploy/prometheus``: checked and unit-tested by the real
``promtool``, and every metric they read exists on a real server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from speakstream.server.serve import ThreadedServer
from tests.deploy.metrics_in_use import exposed, loaded_server, queried

RULES = Path(__file__).parents[2] / "deploy" / "prometheus"


def promtool() -> str:
    """The promtool ``make test`` puts beside the virtual environment's Python, else PATH's."""
    here = Path(sys.executable).parent / "promtool"
    found = str(here) if here.exists() else shutil.which("promtool")
    assert found, "promtool not found: `make test` fetches it (deploy/prometheus/get-promtool.sh)"
    return found


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *args], cwd=RULES, capture_output=True, text=True, timeout=120, env={**os.environ}
    )


def test_the_rules_are_valid() -> None:
    result = _run("check", "rules", "rules.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_fires_and_stays_silent_as_its_unit_tests_say() -> None:
    result = _run("test", "rules", "tests.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    tested = set((RULES / "tests.yml").read_text().split("alertname: ")[1:])
    alerts = {
        line.split("alert: ")[1].strip() for line in (RULES / "rules.yml").read_text().splitlines() if "alert: " in line
    }
    assert alerts <= {t.split()[0] for t in tested}, "an alert without a unit test"


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with loaded_server() as running:
        yield running


def test_every_metric_the_rules_read_exists_on_a_real_server(server: ThreadedServer) -> None:
    missing = queried((RULES / "rules.yml").read_text()) - exposed(server)
    assert not missing, missing


def test_every_alert_has_a_runbook_line() -> None:
    """Each alert's ``runbook`` points at a heading of docs/operate.md."""
    doc = Path(__file__).parents[2] / "docs" / "operate.md"
    headings = {line.lstrip("#").strip().lower() for line in doc.read_text().splitlines() if line.startswith("#")}
    for line in (RULES / "rules.yml").read_text().splitlines():
        if "runbook:" in line:
            target = line.split("runbook:", 1)[1].strip().strip('"')
            assert target.startswith("docs/operate.md#") and target.split("#", 1)[1] in headings, target
