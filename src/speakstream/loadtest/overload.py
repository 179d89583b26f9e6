"""Overload: beyond the session and queue limits new work is refused fast and retryably, the
admitted sessions keep their latency, and the server recovers when load drops."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from speakstream.bench.stats import summary
from speakstream.client import SpeechSession
from speakstream.data import replies
from speakstream.engine.fake import FakeEngine
from speakstream.errors import SpeakstreamError
from speakstream.loadtest.servers import fake_server, settled

TEXT = replies()["long"]["text"]


async def _speakers(url: str, count: int) -> list[float]:
    async def one() -> float:
        async with SpeechSession(url) as session:
            started = time.perf_counter()
            result = await session.collect(await session.speak(TEXT), sent_at=started)
            return (result.ttfa_s or 0.0) * 1000

    return list(await asyncio.gather(*(one() for _ in range(count))))


async def _admitted_again(url: str, attempts: int = 50) -> bool:
    """Whether a new session is served once the load is gone. Slots free as the server finishes
    closing the old sessions, a moment after their clients saw the close: a refused client
    retries, as ``retryable`` tells it to."""
    for _ in range(attempts):
        try:
            return bool(await _speakers(url, 1))
        except SpeakstreamError as exc:
            if not exc.retryable:
                raise
            await asyncio.sleep(0.1)
    return False


async def _refused(url: str, attempts: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _ in range(attempts):
        started = time.perf_counter()
        try:
            async with SpeechSession(url):
                out.append({"refused": False})
        except SpeakstreamError as exc:
            out.append(
                {
                    "refused": True,
                    "code": exc.code,
                    "retryable": exc.retryable,
                    "ms": (time.perf_counter() - started) * 1000,
                }
            )
        await asyncio.sleep(0.05)
    return out


async def _http_burst(base: str, requests: int) -> list[tuple[int, str | None, float]]:
    """Concurrent long requests; (status, Retry-After, seconds to the status line) of each."""

    async def one(client: httpx.AsyncClient) -> tuple[int, str | None, float]:
        started = time.perf_counter()
        async with client.stream("POST", "/invocations", json={"text": TEXT}) as response:
            answered = time.perf_counter() - started
            await response.aread()
            return response.status_code, response.headers.get("retry-after"), answered

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        return list(await asyncio.gather(*(one(client) for _ in range(requests))))


async def _served_again(base: str, attempts: int = 50) -> bool:
    """Whether a request is served once the burst is over (a 503 is retried, as it asks)."""
    for _ in range(attempts):
        if (await _http_burst(base, 1))[0][0] == 200:
            return True
        await asyncio.sleep(0.1)
    return False


async def run_overload(*, max_sessions: int = 4, queue_depth: int = 4) -> dict[str, Any]:
    engine = FakeEngine(seconds_per_char=0.0015)
    server = fake_server(engine, max_sessions=max_sessions)
    try:
        quiet = await _speakers(server.ws_url, max_sessions)
        await settled(server, 1 << 30)  # the quiet sessions' slots are free again before the next wave
        pressured_task = asyncio.create_task(_speakers(server.ws_url, max_sessions))
        await asyncio.sleep(0.3)
        refused = await _refused(server.ws_url, 20)
        pressured = await pressured_task
        recovered = await _admitted_again(server.ws_url)
    finally:
        server.stop()
    server = fake_server(engine, queue_depth=queue_depth)
    try:
        http = await _http_burst(server.url, 8)
        after = await _served_again(server.url)
    finally:
        server.stop()
    refusals = [r for r in refused if r["refused"]]
    busy = [h for h in http if h[0] == 503]
    return {
        "limits": {"max_sessions": max_sessions, "queue_depth": queue_depth},
        "refused": f"{len(refusals)}/{len(refused)}",
        "refusal_ms": summary([r["ms"] for r in refusals]),
        "refusal_codes": sorted({f"{r['code']} (retryable={r['retryable']})" for r in refusals}),
        "http_503_with_retry_after": sum(1 for h in busy if h[1]),
        "http_503_ms": summary([1000 * h[2] for h in busy]),
        "http_attempts": len(http),
        "admitted_ttfa_ms_quiet": summary(quiet),
        "admitted_ttfa_ms_under_pressure": summary(pressured),
        "recovered": recovered and after,
    }
