"""Shared fixtures: the real Kokoro engine and Whisper (loaded once), and real servers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from speakstream.bench.asr import Recognizer, recognizer
from speakstream.config import ServerConfig
from speakstream.engine.fake import FakeEngine
from speakstream.engine.kokoro import KokoroEngine
from speakstream.server.app import create_app
from speakstream.server.serve import ThreadedServer


@pytest.fixture(scope="session")
def kokoro() -> KokoroEngine:
    """The real model; `make test` fetches it first. A missing model fails loudly, never skips."""
    return KokoroEngine()


@pytest.fixture(scope="session")
def asr() -> Recognizer:
    return recognizer()


def start_server(engine: object, **config: object) -> ThreadedServer:
    settings = ServerConfig(**config)  # type: ignore[arg-type]
    return ThreadedServer(create_app(settings, engine_factory=lambda: engine)).start()  # type: ignore[arg-type,return-value]


@pytest.fixture
def fake_server() -> Iterator[ThreadedServer]:
    server = start_server(FakeEngine(seconds_per_char=0.001))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def kokoro_server(kokoro: KokoroEngine) -> Iterator[ThreadedServer]:
    server = start_server(kokoro)
    yield server
    server.stop()
