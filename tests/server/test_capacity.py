"""Admission by capacity through the server: past ``max_load`` of what the engine makes, a new
reply is refused retryable (HTTP 503 with Retry-After; a WebSocket error and close 1013), or, with
``overload: queue``, waits for room; capacity and load are on /ping and /metrics."""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import pytest

from speakstream.client import SpeechSession
from speakstream.config import ServerConfig
from speakstream.engine.fake import FakeEngine
from speakstream.errors import InvalidInput
from speakstream.loadtest.servers import start_server
from speakstream.server.reply import Reply
from speakstream.server.serve import ThreadedServer

LONG = "This reply is long enough to keep the engine busy for a while, sentence after sentence. " * 3


def _slow_engine() -> FakeEngine:
    """3 audio seconds a second on one lane: 0.8 of it admits two listeners."""
    return FakeEngine(seconds_per_char=0.02)


@contextlib.asynccontextmanager
async def _speaking(server: ThreadedServer, count: int) -> object:
    """``count`` sessions each in the middle of a long reply."""
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(count):
            session = await stack.enter_async_context(SpeechSession(server.ws_url))
            request = await session.speak(LONG)
            event = await asyncio.wait_for(session.receive(), 10)
            while getattr(event, "type", None) != "synthesis_start":
                event = await asyncio.wait_for(session.receive(), 10)
            del request
        await asyncio.sleep(0.1)  # admitted and speaking
        yield server


async def test_past_the_capacity_http_is_refused_with_retry_after_and_ping_says_why() -> None:
    server = start_server(_slow_engine())
    try:
        async with _speaking(server, 2), httpx.AsyncClient(timeout=10) as client:
            ping = (await client.get(f"{server.url}/ping")).json()
            assert ping["load_audio_s_per_s"] == 2 and ping["capacity_audio_s_per_s"] == pytest.approx(3.0)
            assert ping["utilization"] == pytest.approx(2 / 3, abs=0.01)
            refused = await client.post(f"{server.url}/invocations", json={"text": "Hello there."})
            assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
            assert refused.json()["error"]["code"] == "overloaded" and refused.json()["error"]["retryable"]
            metrics = (await client.get(f"{server.url}/metrics")).text
            assert "speakstream_capacity_audio_seconds_per_second 3.0" in metrics
            assert "speakstream_load_audio_seconds_per_second 2.0" in metrics
            assert "speakstream_admission_refused_total 1.0" in metrics
        async with httpx.AsyncClient(timeout=10) as client:  # the others done: room again
            assert (await client.post(f"{server.url}/invocations", json={"text": "Hello there."})).status_code == 200
    finally:
        server.stop()


async def test_a_refused_reply_s_text_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Admission comes before the text is chunked: a client asking again the moment it is refused
    (the abuse suite's flood: hundreds of times a second) costs the server no text work."""
    read: list[str] = []
    speak = Reply.speak

    async def recorded(reply: Reply, text: str) -> None:
        read.append(text)
        await speak(reply, text)

    monkeypatch.setattr(Reply, "speak", recorded)
    server = start_server(_slow_engine())
    try:
        async with _speaking(server, 2), httpx.AsyncClient(timeout=10) as client:
            refused = await client.post(f"{server.url}/invocations", json={"text": "Not read."})
            assert refused.status_code == 503 and "Not read." not in read
        async with httpx.AsyncClient(timeout=10) as client:
            assert (await client.post(f"{server.url}/invocations", json={"text": "Not read."})).status_code == 200
            assert "Not read." in read
    finally:
        server.stop()


async def test_past_the_capacity_a_websocket_request_gets_an_error_and_the_socket_1013() -> None:
    server = start_server(_slow_engine())
    try:
        async with _speaking(server, 2), SpeechSession(server.ws_url) as third:
            result = await third.collect(await third.speak("Hello there."))
            assert result.final is not None and result.final["code"] == "overloaded" and result.final["retryable"]
            event = await asyncio.wait_for(third.receive(), 10)  # the client reconnects, as to another replica
            assert event.type == "reconnected" and event.message["code"] == 1013
    finally:
        server.stop()


async def test_queued_a_reply_waits_for_room_and_plays() -> None:
    server = start_server(_slow_engine(), overload="queue", overload_wait_s=30.0)
    text = "A reply of a couple of sentences. It keeps the engine busy for a moment."
    try:
        async with contextlib.AsyncExitStack() as stack:
            sessions = [await stack.enter_async_context(SpeechSession(server.ws_url)) for _ in range(3)]
            first = [asyncio.create_task(s.collect(await s.speak(text))) for s in sessions[:2]]
            await asyncio.sleep(0.2)  # both admitted
            third = await asyncio.wait_for(sessions[2].collect(await sessions[2].speak("Hello there.")), 60)
            await asyncio.wait_for(asyncio.gather(*first), 60)
        assert third.final is not None and third.final["type"] == "synthesis_complete"
        assert third.final["timings"]["admission_wait_s"] > 0.1  # it waited for one of the first two
    finally:
        server.stop()


def test_overload_takes_refuse_or_queue() -> None:
    with pytest.raises(InvalidInput, match="refuse or queue"):
        ServerConfig(overload="drop")
