"""Limits that hold under simultaneous arrivals: sessions per server, queued chunks per client."""

from __future__ import annotations

import asyncio
import json

import httpx

from speakstream.config import ServerConfig
from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.bidi import BidiSession
from speakstream.server.loopback import LoopbackSocket
from speakstream.server.runtime import Runtime


class SlowHandshake(LoopbackSocket):
    """A client whose handshake takes a moment: the server awaits its ``accept``."""

    async def accept(self) -> None:
        await asyncio.sleep(0.01)


async def _first_message_type(socket: LoopbackSocket) -> str:
    return str(json.loads(await asyncio.wait_for(socket.outgoing.get(), 10))["type"])


async def test_simultaneous_handshakes_cannot_overrun_the_session_limit() -> None:
    runtime = Runtime(ServerConfig(max_sessions=2, fake_engine=True), lambda: FakeEngine())
    await runtime.start()
    await runtime.wait_ready()  # a session on a loading engine is refused before the limit is counted
    sockets = [SlowHandshake() for _ in range(6)]
    runs = [asyncio.create_task(BidiSession(s, runtime).run()) for s in sockets]  # type: ignore[arg-type]
    try:
        kinds = await asyncio.gather(*(_first_message_type(s) for s in sockets))
        assert sorted(kinds) == ["error"] * 4 + ["session_start"] * 2
        assert len(runtime.sessions) == 2
    finally:
        for socket in sockets:
            socket.incoming.put_nowait({"type": "websocket.disconnect", "code": 1000})
        await asyncio.wait_for(asyncio.gather(*runs, return_exceptions=True), 10)
        await runtime.stop()
    assert not runtime.sessions


async def test_a_client_past_its_share_waits_for_one_of_its_replies_to_end() -> None:
    """By default a reply past its client's share waits (up to ``overload_wait_s``) instead of a
    503 its client would only ask again at once: it plays once the client's reply before ends."""
    server = start_server(FakeEngine(seconds_per_char=0.002), max_client_queue=3, queue_depth=64, cache_mb=0)
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            async with client.stream("POST", "/invocations", json={"text": "A first reply. " * 10}) as first:
                assert first.status_code == 200
                second = asyncio.create_task(client.post("/invocations", json={"text": "Another one."}))
                await asyncio.sleep(0.1)
                assert not second.done()  # waiting for room, not refused
                await first.aread()
            assert (await asyncio.wait_for(second, 10)).status_code == 200
    finally:
        server.stop()


async def test_one_client_is_held_to_its_share_of_the_queue() -> None:
    """With ``max_client_queue`` set, a client's extra replies get a retryable 503 while the
    server still has room (another address would get in), at once with ``overload: refuse`` (by
    default after waiting for one of its replies to end); its first reply is unaffected."""
    server = start_server(FakeEngine(seconds_per_char=0.005), max_client_queue=3, queue_depth=64, overload="refuse")
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            async with client.stream("POST", "/invocations", json={"text": "A long first reply. " * 20}) as first:
                assert first.status_code == 200
                second = await client.post("/invocations", json={"text": "Another one."})
                assert second.status_code == 503
                error = second.json()["error"]
                assert error["code"] == "client_limit" and error["retryable"]
                await first.aread()
            again = await client.post("/invocations", json={"text": "Now there is room."})
            assert again.status_code == 200
    finally:
        server.stop()
