"""Soak: one session sending thousands of messages, and hundreds of sessions opened and closed in
sequence, against a server process whose memory and file descriptors are read before and after."""

from __future__ import annotations

from typing import Any

from speakstream.bench.process import ServerProcess
from speakstream.client import SpeechSession

RSS_BOUND_MB = 25.0
FD_BOUND = 4
NO_CACHE = {"SPEAKSTREAM_CACHE_MB": "0"}
"""The audio cache keeps distinct texts' audio up to its bound (64 MB), which a soak of distinct
messages would read as growth; its bound has tests of its own (tests/scheduler/test_cache.py)."""


async def _messages(url: str, count: int) -> None:
    async with SpeechSession(url) as session:
        for i in range(count):
            result = await session.collect(await session.speak(f"Message number {i}."))
            if (result.final or {}).get("type") != "synthesis_complete":
                raise RuntimeError(f"message {i} failed: {result.final}")


async def _sessions(url: str, count: int) -> None:
    for i in range(count):
        async with SpeechSession(url) as session:
            await session.collect(await session.speak(f"Session {i}."))


def _snapshot(server: ServerProcess) -> dict[str, float]:
    return {"rss_mb": round(server.rss_mb(), 1), "fds": server.fds()}


async def run_soak(*, messages: int = 2000, sessions: int = 500) -> dict[str, Any]:
    with ServerProcess("--fake-engine", env=NO_CACHE) as server:
        await _messages(server.ws_url, 100)  # warm caches and allocator pools first
        await _sessions(server.ws_url, 20)
        start = _snapshot(server)
        await _messages(server.ws_url, messages)
        mid = _snapshot(server)
        await _sessions(server.ws_url, sessions)
        end = _snapshot(server)
    return {
        "messages": {
            "count": messages,
            "before": start,
            "after": mid,
            "flat": mid["rss_mb"] - start["rss_mb"] < RSS_BOUND_MB and mid["fds"] - start["fds"] <= FD_BOUND,
        },
        "sessions": {
            "count": sessions,
            "before": mid,
            "after": end,
            "flat": end["rss_mb"] - mid["rss_mb"] < RSS_BOUND_MB and end["fds"] - mid["fds"] <= FD_BOUND,
        },
        "bounds": {"rss_mb": RSS_BOUND_MB, "fds": FD_BOUND},
    }
