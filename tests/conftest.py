"""Shared fixtures: the real Kokoro engine and Whisper (loaded once), and real servers."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import settings

from speakstream.bench.asr import Recognizer, multilingual_recognizer, recognizer
from speakstream.engine.fake import FakeEngine
from speakstream.engine.kokoro import KokoroEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer

# `make test` is deterministic: each property test replays the same examples every run, so a
# commit cannot turn CI red by drawing a new one. `make fuzz` draws fresh examples, many times.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("fuzz", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# What servers keep (pronunciation dictionaries) goes to a folder of this run, never the user's.
_DATA_HOME = tempfile.mkdtemp(prefix="speakstream-tests-")
os.environ["XDG_DATA_HOME"] = _DATA_HOME


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's folder goes with the run (every run left one in /tmp before)."""
    shutil.rmtree(_DATA_HOME, ignore_errors=True)


_MARKS_BY_FIXTURE = {"kokoro": "model", "kokoro_server": "model", "asr": "asr", "multilingual_asr": "asr"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses the real model or Whisper carries that marker, so ``make test-fast``
    (``-m "not model and not asr ..."``) can never load them by accident."""
    for item in items:
        for fixture, mark in _MARKS_BY_FIXTURE.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(mark)


@pytest.fixture(scope="session")
def kokoro() -> KokoroEngine:
    """The real model; `make test` fetches it first. A missing model fails loudly, never skips."""
    return KokoroEngine()


@pytest.fixture(scope="session")
def asr() -> Recognizer:
    return recognizer()


@pytest.fixture(scope="session")
def multilingual_asr() -> Recognizer:
    """Whisper base, multilingual (joined from its two PyPI parts on first use)."""
    return multilingual_recognizer()


@pytest.fixture
def fake_server() -> Iterator[ThreadedServer]:
    server = start_server(FakeEngine(seconds_per_char=0.001))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def kokoro_server(kokoro: KokoroEngine) -> Iterator[ThreadedServer]:
    """The real engine served without the audio cache (the tests that share it speak the same
    sentences, and each must see the engine at work; ``tests/server/test_cache.py`` has its own) and
    without admission by capacity: they check words and protocols, two or three replies at once,
    and in a slow stretch of this machine (capacity read 2.1 audio s/s, 2026-12-06) the second was
    refused; admission has its own tests and servers."""
    server = start_server(kokoro, cache_mb=0, max_load=0)
    yield server
    server.stop()
