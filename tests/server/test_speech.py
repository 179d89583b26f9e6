"""Every HTTP route goes into a reply one way (``server/speech.py``): the same fault gets the same
code on each, whatever its wire format, and a good request is spoken and counted by its route."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from speakstream.loadtest.servers import fake_server
from speakstream.server.serve import ThreadedServer

LIMIT = 200


def _routes(text: object, voice: str = "af_heart") -> dict[str, tuple[str, dict[str, Any]]]:
    """Each route's path and body asking for ``text`` in ``voice``."""
    cartesia = {"transcript": text, "voice": {"mode": "id", "id": voice}, "output_format": {"container": "raw"}}
    return {
        "http": ("/invocations", {"text": text, "voice": voice, "format": "pcm"}),
        "openai": ("/v1/audio/speech", {"input": text, "voice": voice, "response_format": "pcm"}),
        "elevenlabs": (f"/v1/text-to-speech/{voice}?output_format=pcm_24000", {"text": text}),
        "cartesia": ("/tts/bytes", {**cartesia, "model_id": "sonic-2"}),
    }


def _code(route: str, body: dict[str, Any]) -> str:
    """The error code in each route's own error body."""
    if route == "elevenlabs":
        return str(body["detail"]["status"])
    if route == "cartesia":
        return str(body["error_code"])
    return str(body["error"]["code"])


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    server = fake_server(max_text_chars=LIMIT)
    yield server
    server.stop()


@pytest.mark.parametrize("route", ["http", "openai", "elevenlabs", "cartesia"])
@pytest.mark.parametrize(
    ("text", "voice", "status", "code"),
    [
        (None, "af_heart", 400, "invalid_text"),
        ("   ", "af_heart", 400, "empty_text"),
        ("Hello there. " * 20, "af_heart", 400, "text_too_long"),  # within the body limit
        ("Hello there.", "zz_nobody", 400, "unknown_voice"),
    ],
)
def test_each_route_answers_a_fault_with_the_same_code(
    server: ThreadedServer, route: str, text: object, voice: str, status: int, code: str
) -> None:
    path, body = _routes(text, voice)[route]
    response = httpx.post(server.url + path, json=body, timeout=10)
    assert response.status_code == status and _code(route, response.json()) == code


def test_each_route_speaks_a_good_request_and_counts_it_by_name(server: ThreadedServer) -> None:
    for route, (path, body) in _routes("Hello there.").items():
        response = httpx.post(server.url + path, json=body, timeout=10)
        assert response.status_code == 200 and len(response.content) > 1000, route
    metrics = httpx.get(server.url + "/metrics", timeout=10).text
    for route in ("http", "openai", "elevenlabs", "cartesia"):
        assert f'transport="{route}"' in metrics and _requests(metrics, route) >= 1


def _requests(metrics: str, route: str) -> float:
    for line in metrics.splitlines():
        if line.startswith("speakstream_requests_total") and f'transport="{route}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0
