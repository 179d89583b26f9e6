"""The session core (``server/socket.py``) decides once for every protocol: our bidirectional
socket and the vendors' dialects are refused, closed on shutdown and told of a bad frame the same
way, each in its own error shape."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
import websockets

from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer
from tests.server.dialects.helpers import elevenlabs_url, ws_base


def _bidi(server: ThreadedServer) -> str:
    return server.ws_url


def _cartesia(server: ThreadedServer) -> str:
    return f"{ws_base(server)}/tts/websocket"


def _code(message: dict[str, Any]) -> str:
    """The error code in Cartesia's shape (``error_code``), ours (``code``) or ElevenLabs' (``error``)."""
    return str(message.get("error_code") or message.get("code") or message.get("error"))


PROTOCOLS: dict[str, Callable[[ThreadedServer], str]] = {
    "ours": _bidi,
    "elevenlabs": elevenlabs_url,
    "cartesia": _cartesia,
}


async def _until_closed(ws: Any) -> tuple[list[dict[str, Any]], int | None]:
    """The JSON messages until the server closes, and its close code."""
    messages = []
    try:
        while True:
            frame = await asyncio.wait_for(ws.recv(), 10)
            if isinstance(frame, str):
                messages.append(json.loads(frame))
    except websockets.ConnectionClosed as closed:
        return messages, closed.rcvd.code if closed.rcvd else None


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_session_past_the_maximum_is_told_why_and_closed_1013(protocol: str) -> None:
    server = start_server(FakeEngine(), max_sessions=1)
    url = PROTOCOLS[protocol](server)
    try:
        async with websockets.connect(url), websockets.connect(url) as second:
            messages, code = await _until_closed(second)
        assert code == 1013 and [_code(m) for m in messages] == ["overloaded"]
    finally:
        server.stop()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_server_stopping_tells_every_protocol_why_and_closes_1001(protocol: str) -> None:
    server = start_server(FakeEngine())
    try:
        async with websockets.connect(PROTOCOLS[protocol](server)) as ws:
            await asyncio.sleep(0.2)  # open (ours greets first)
            stopping = asyncio.create_task(asyncio.to_thread(server.stop))
            messages, code = await _until_closed(ws)
            await stopping
        assert code == 1001 and _code(messages[-1]) == "server_shutdown"
    finally:
        server.stop()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_frame_that_is_not_json_is_an_error_and_the_session_goes_on(protocol: str) -> None:
    server = start_server(FakeEngine())
    try:
        async with websockets.connect(PROTOCOLS[protocol](server)) as ws:
            await ws.send("{not json")
            while (message := json.loads(await asyncio.wait_for(ws.recv(), 10))).get("type") == "session_start":
                pass
            assert _code(message) == "invalid_json"
            await ws.ping()  # still open
    finally:
        server.stop()
