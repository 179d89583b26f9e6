"""The dialects keep our own routes' limits: a client that stops reading is dropped and frees its
engine slots; nothing of a closed connection keeps running."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import websockets

from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from tests.server.dialects.helpers import cartesia_request, elevenlabs_url, ws_base

LONG = "A long reply that nobody reads. " * 400


@pytest.mark.parametrize("dialect", ["elevenlabs", "cartesia", "deepgram"])
async def test_a_client_that_stops_reading_is_dropped(dialect: str) -> None:
    server = start_server(FakeEngine(seconds_per_char=0.0), send_timeout_s=0.5)
    try:
        if dialect == "elevenlabs":
            url = elevenlabs_url(server)
            frames = [
                json.dumps({"text": LONG, "context_id": "a"}),
                json.dumps({"context_id": "a", "close_context": True}),
            ]
        elif dialect == "cartesia":
            url = f"{ws_base(server)}/tts/websocket"
            frames = [cartesia_request("a", LONG, more=False)]
        else:
            url = f"{ws_base(server)}/v1/speak"
            frames = [json.dumps({"type": "Speak", "text": LONG}), json.dumps({"type": "Flush"})]
        async with websockets.connect(url, max_queue=1, max_size=None, close_timeout=1) as ws:
            for frame in frames:
                await ws.send(frame)
            started = time.monotonic()
            while server.runtime.sessions and time.monotonic() - started < 20:
                await asyncio.sleep(0.05)  # never read: the server's sends block, then it gives up
            assert not server.runtime.sessions  # dropped while the client is still connected
            scheduler = server.runtime.scheduler
            assert scheduler is not None and scheduler.queued == 0
    finally:
        server.stop()
