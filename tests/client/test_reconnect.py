"""The clients come back after the server goes away: the WebSocket session reconnects with
backoff and says so; the HTTP helpers send again what failed before its first byte."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from speakstream.bench.process import free_port
from speakstream.client import Backoff, ControlEvent, Reconnect, SpeechSession, fetch_audio, stream_audio
from speakstream.client.session import RECONNECTED
from speakstream.config import ServerConfig
from speakstream.engine.fake import FakeEngine
from speakstream.errors import SpeakstreamError
from speakstream.loadtest.servers import start_server
from speakstream.server.app import create_app
from speakstream.server.serve import ThreadedServer

QUICK = Backoff(attempts=30, first_s=0.05, max_s=0.3)
TEXT = "Hello there, this is a reconnecting session."


@pytest.fixture
def port() -> int:
    return free_port()


def serve_on(port: int) -> ThreadedServer:
    return start_server(FakeEngine(seconds_per_char=0.002), port=port)


def serve_slow_to_load(port: int, load_s: float = 1.0) -> ThreadedServer:
    """A server that listens at once but whose engine takes ``load_s`` to load: 503 until then."""

    def load() -> FakeEngine:
        time.sleep(load_s)
        return FakeEngine(seconds_per_char=0.002)

    return ThreadedServer(create_app(ServerConfig(), engine_factory=load), port=port).start()


@pytest.fixture
def servers(port: int) -> Iterator[list[ThreadedServer]]:
    started: list[ThreadedServer] = []
    yield started
    for server in started:
        server.stop()


async def read_until_closed(session: SpeechSession) -> None:
    while True:
        await session.receive()


async def collect_into(blocks: list[bytes], stream: AsyncIterator[bytes]) -> None:
    async for block in stream:
        blocks.append(block)


async def restart_later(
    port: int, servers: list[ThreadedServer], delay_s: float, serve: Callable[[int], ThreadedServer] = serve_on
) -> None:
    await asyncio.sleep(delay_s)
    servers.append(await asyncio.to_thread(serve, port))


async def test_session_reconnects_after_a_shutdown_and_says_so(port: int, servers: list[ThreadedServer]) -> None:
    servers.append(serve_on(port))
    heard: list[Reconnect] = []
    url = f"ws://127.0.0.1:{port}/invocations-bidirectional-stream"
    async with SpeechSession(url, reconnect=QUICK, on_reconnect=heard.append) as session:
        await session.configure(voice="am_adam")
        first_id = session.info["session_id"]
        assert (await session.say(TEXT)).final["type"] == "synthesis_complete"
        await asyncio.to_thread(servers.pop().stop)  # server_shutdown + 1001
        restart = asyncio.create_task(restart_later(port, servers, 0.3))
        kinds: list[str] = []
        async for event in session.events():
            kinds.append(event.type if isinstance(event, ControlEvent) else "audio")
            if isinstance(event, ControlEvent) and event.type == RECONNECTED:
                reconnected = event.message
                break
        await restart
        assert kinds[0] == "error"  # the server_shutdown frame came before the close
        assert reconnected["code"] == 1001 and reconnected["attempt"] >= 1
        assert [r.code for r in heard] == [1001]
        assert session.info["session_id"] != first_id
        result = await session.say(TEXT)
        assert result.final["type"] == "synthesis_complete" and len(result.audio) > 0
        start = next(m for m in result.messages if m["type"] == "synthesis_start")
        assert start.get("voice", "am_adam") == "am_adam", result.messages  # the config was sent again


async def test_say_speaks_again_when_the_session_is_lost_mid_request(port: int, servers: list[ThreadedServer]) -> None:
    servers.append(start_server(FakeEngine(seconds_per_char=0.05), port=port))
    url = f"ws://127.0.0.1:{port}/invocations-bidirectional-stream"
    async with SpeechSession(url, reconnect=QUICK) as session:
        stop = asyncio.create_task(asyncio.to_thread(servers.pop().stop))
        restart = asyncio.create_task(restart_later(port, servers, 0.5))
        result = await session.say("A long reply that is cut off while it is spoken. " * 3)
        await stop
        await restart
        assert result.final["type"] == "synthesis_complete"
        assert session.reconnects == 1


async def test_a_normal_close_is_not_reconnected(port: int, servers: list[ThreadedServer]) -> None:
    servers.append(serve_on(port))
    url = f"ws://127.0.0.1:{port}/invocations-bidirectional-stream"
    async with SpeechSession(url, reconnect=QUICK) as session:
        await session.send_raw('{"type": "close"}')
        with pytest.raises(SpeakstreamError) as caught:
            await read_until_closed(session)
        assert caught.value.code == "session_closed"
        assert session.reconnects == 0


async def test_the_session_gives_up_after_its_attempts(port: int, servers: list[ThreadedServer]) -> None:
    servers.append(serve_on(port))
    heard: list[Reconnect] = []
    url = f"ws://127.0.0.1:{port}/invocations-bidirectional-stream"
    few = Backoff(attempts=3, first_s=0.05, max_s=0.1)
    async with SpeechSession(url, reconnect=few, on_reconnect=heard.append) as session:
        await asyncio.to_thread(servers.pop().stop)
        with pytest.raises(SpeakstreamError) as caught:
            await read_until_closed(session)
        assert caught.value.code == "session_closed"
        assert heard == []  # nothing came back, so no reconnect was announced


async def test_http_waits_for_a_server_that_comes_back(port: int, servers: list[ThreadedServer]) -> None:
    heard: list[Reconnect] = []
    restart = asyncio.create_task(restart_later(port, servers, 0.5, serve_slow_to_load))
    result = await fetch_audio(f"http://127.0.0.1:{port}", TEXT, retry=QUICK, on_reconnect=heard.append)
    await restart
    assert len(result.audio) > 0
    # Connection refused while it is down, then 503 (Retry-After) while its engine loads, then served.
    codes = [r.code for r in heard]
    refused = codes.count(0)
    assert refused and codes == [0] * refused + [503] * (len(codes) - refused) and codes[-1] == 503, heard


async def test_http_without_retries_fails_at_once(port: int) -> None:
    with pytest.raises(SpeakstreamError) as caught:
        await fetch_audio(f"http://127.0.0.1:{port}", TEXT, retry=Backoff(attempts=0))
    assert caught.value.code == "connect_failed" and caught.value.retryable


class _Flaky:
    """A transport that answers 503 (with Retry-After), then breaks a stream after its first
    block, then serves: the three cases the helpers handle."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        if self.calls == 1:
            return httpx.Response(503, headers={"Retry-After": "0"}, json={"code": "not_ready"})
        if self.calls == 2:
            return httpx.Response(200, stream=_Broken())
        return httpx.Response(200, content=b"\x01\x02" * 100)


class _Broken(httpx.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"\x00" * 10
        raise httpx.ReadError("connection reset")


async def test_http_retries_503_and_starts_a_broken_fetch_over() -> None:
    heard: list[Reconnect] = []
    flaky = _Flaky()
    async with httpx.AsyncClient(transport=httpx.MockTransport(flaky)) as client:
        result = await fetch_audio("http://speech", TEXT, client=client, retry=QUICK, on_reconnect=heard.append)
    assert bytes(result.audio) == b"\x01\x02" * 100  # nothing of the broken attempt is kept
    assert [r.code for r in heard] == [503, 0]
    assert flaky.calls == 3


async def test_a_stream_that_broke_after_audio_began_is_not_sent_again() -> None:
    flaky = _Flaky()
    flaky.calls = 1  # next: the broken stream
    async with httpx.AsyncClient(transport=httpx.MockTransport(flaky)) as client:
        blocks: list[bytes] = []
        with pytest.raises(SpeakstreamError) as caught:
            await collect_into(blocks, stream_audio("http://speech", TEXT, client=client, retry=QUICK))
    assert caught.value.code == "stream_broken" and caught.value.retryable
    assert blocks == [b"\x00" * 10]
