"""The metric names a real server exposes after a short load, for the checks of what the alerting
rules and the dashboard query."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import httpx
from prometheus_client.parser import text_string_to_metric_families

from speakstream.loadtest.servers import fake_server
from speakstream.server.serve import ThreadedServer

METRIC = re.compile(r"\b(speakstream_[a-z_]+)\b")
"""A raw metric's name in a query (recorded series, ``speakstream:...``, have colons)."""


def short_load(server: ThreadedServer) -> None:
    """A reply over HTTP and over the OpenAI route, and one refused for an unknown voice."""
    with httpx.Client(base_url=server.url, timeout=60) as client:
        assert client.post("/invocations", json={"text": "Hello there."}).status_code == 200
        body = {"model": "kokoro", "input": "Hi.", "voice": "af_heart", "response_format": "pcm"}
        assert client.post("/v1/audio/speech", json=body).status_code == 200
        assert client.post("/invocations", json={"text": "Hi.", "voice": "xx_nobody"}).status_code == 400


def exposed(server: ThreadedServer) -> set[str]:
    """Every series name ``/metrics`` has, with the ``_total``, ``_bucket``... of each family."""
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names |= {family.name, *(sample.name for sample in family.samples)}
        if family.type == "counter":
            names.add(family.name + "_total")
    return names


def queried(text: str) -> set[str]:
    return set(METRIC.findall(text))


@contextlib.contextmanager
def loaded_server() -> Iterator[ThreadedServer]:
    """A fake-engine server with the audio cache on (so its counters exist), after a short load."""
    running = fake_server(cache_mb=8)
    try:
        short_load(running)
        yield running
    finally:
        running.stop()
