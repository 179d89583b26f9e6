"""Secrets stay out of logs; nothing reads files by a name a client chose."""

from __future__ import annotations

import httpx
import pytest

from speakstream.bench.process import ServerProcess

KEY = "not-in-any-log-9f2c"


@pytest.mark.slow
def test_api_key_never_reaches_the_log() -> None:
    with ServerProcess("--fake-engine", "--api-key", KEY) as server:
        for key in ("wrong", KEY):
            httpx.post(f"{server.url}/invocations", json={"text": "Hi."}, headers={"Authorization": f"Bearer {key}"})
        httpx.get(f"{server.url}/metrics?token={KEY}")
        log = server.log.read_text()
    assert KEY not in log
    assert "Uvicorn running" in log or "Application startup complete" in log


@pytest.mark.parametrize(
    "path",
    [
        "/static/../pyproject.toml",
        "/static/%2e%2e/%2e%2e/pyproject.toml",
        "/static/..%2f..%2fpyproject.toml",
        "/static//etc/passwd",
    ],
)
def test_static_files_cannot_escape(path: str) -> None:
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from speakstream.web import web_routes

    with TestClient(Starlette(routes=web_routes())) as client:
        response = client.get(path)
    assert response.status_code == 404
    assert "[project]" not in response.text and "root:" not in response.text
