from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator

import httpx
import pytest
import websockets

from speakstream.agent.routes import agent_routes
from speakstream.client import stream_events
from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer


@pytest.fixture
def agent_server() -> Iterator[ThreadedServer]:
    server = start_server(FakeEngine(seconds_per_char=0.002), routes=agent_routes())
    yield server
    server.stop()


@pytest.mark.parametrize("mode", ["bidi", "batch"])
async def test_agent_sse(agent_server: ThreadedServer, mode: str) -> None:
    body = {"prompt": "Which plan?", "mode": mode, "reply_id": "weather", "tokens_per_s": 300}
    events = [e async for e in stream_events(f"{agent_server.url}/agent", body)]
    names = [e.event for e in events]
    assert names[0] == "agent_start" and names[-1] == "agent_done"
    audio = b"".join(base64.b64decode(e.json()["audio"]) for e in events if e.event == "audio_chunk")
    assert len(audio) == events[-1].json()["audio_bytes"] > 0


async def test_agent_sse_bad_requests(agent_server: ThreadedServer) -> None:
    async with httpx.AsyncClient(base_url=agent_server.url) as client:
        assert (await client.post("/agent", json={"prompt": ""})).status_code == 400
        bad_mode = await client.post("/agent", json={"prompt": "hi", "mode": "psychic"})
        assert bad_mode.json()["error"]["code"] == "invalid_mode"
        for body in (
            {"prompt": "hi " * 5000},
            {"prompt": "hi", "reply_id": "x" * 100},
            {"prompt": "hi", "reply": "a" * 30_000},
        ):
            too_long = await client.post("/agent", json=body)
            assert too_long.status_code == 400 and too_long.json()["error"]["code"] == "text_too_long"
        unknown = await client.post("/agent", json={"prompt": "hi", "reply_id": "nope"})
        assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "unknown_reply"
        for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""):
            form = await client.post("/agent", content=b'{"prompt": "hi"}', headers={"content-type": content_type})
            assert form.status_code == 415 and form.json()["error"]["code"] == "unsupported_media_type"
        plain_json = await client.post(
            "/agent", content=b'{"prompt": ""}', headers={"content-type": "Application/JSON"}
        )
        assert plain_json.status_code == 400  # JSON, any case: read (and this one is empty)


async def test_agent_websocket_with_barge_in(agent_server: ThreadedServer) -> None:
    url = agent_server.url.replace("http", "ws") + "/agent/ws"
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "prompt", "prompt": "Which plan?", "tokens_per_s": 100}))
        audio = 0
        while audio == 0:
            frame = await asyncio.wait_for(ws.recv(), 10)
            if isinstance(frame, bytes):
                audio += len(frame)
        await ws.send(json.dumps({"type": "interrupt"}))
        while True:
            frame = await asyncio.wait_for(ws.recv(), 10)
            if isinstance(frame, str) and json.loads(frame)["type"] == "agent_done":
                assert json.loads(frame)["interrupted"]["delivered_s"] > 0
                break
        await ws.send(json.dumps({"type": "prompt", "prompt": "Hi", "reply_id": "greeting", "tokens_per_s": 500}))
        while True:
            frame = await asyncio.wait_for(ws.recv(), 10)
            if isinstance(frame, str) and json.loads(frame)["type"] == "agent_done":
                assert json.loads(frame)["interrupted"] is None
                break


async def _until(ws: websockets.ClientConnection, kind: str) -> dict[str, object]:
    while True:
        frame = await asyncio.wait_for(ws.recv(), 10)
        if isinstance(frame, str) and (message := json.loads(frame))["type"] == kind:
            return message  # type: ignore[no-any-return]


async def test_agent_websocket_answers_every_interrupt(agent_server: ThreadedServer) -> None:
    url = agent_server.url.replace("http", "ws") + "/agent/ws"
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "interrupt"}))  # before any prompt
        assert (await _until(ws, "error"))["code"] == "nothing_to_interrupt"
        await ws.send(json.dumps({"type": "prompt", "prompt": "Hi", "reply_id": "greeting", "tokens_per_s": 500}))
        assert (await _until(ws, "agent_done"))["interrupted"] is None
        await ws.send(json.dumps({"type": "interrupt"}))  # after the reply ended
        assert (await _until(ws, "error"))["code"] == "nothing_to_interrupt"
        # a prompt right after `agent_done` is taken, and an interrupt right after a prompt acts on it
        await ws.send(json.dumps({"type": "prompt", "prompt": "Which plan?", "tokens_per_s": 100}))
        await ws.send(json.dumps({"type": "interrupt"}))
        done = await _until(ws, "agent_done")
        assert done["interrupted"] is not None


async def test_agent_websocket_after_its_speech_session_idled_out() -> None:
    """The agent's in-process speech session closes after ``idle_timeout_s`` without work; the
    next prompt is still answered (spoken, or an error), never left hanging."""
    server = start_server(FakeEngine(seconds_per_char=0.002), routes=agent_routes(), idle_timeout_s=0.3)
    try:
        async with websockets.connect(server.url.replace("http", "ws") + "/agent/ws") as ws:
            await asyncio.sleep(1.0)
            await ws.send(json.dumps({"type": "prompt", "prompt": "Hi", "reply_id": "greeting", "tokens_per_s": 500}))
            answer = await _until_any(ws, {"agent_done", "error"})
            await ws.send(json.dumps({"type": "prompt", "prompt": "Hi", "reply_id": "greeting", "tokens_per_s": 500}))
            again = await _until_any(ws, {"agent_done", "error"})
    finally:
        server.stop()
    assert answer["type"] in ("agent_done", "error") and again["type"] in ("agent_done", "error")


async def _until_any(ws: websockets.ClientConnection, kinds: set[str]) -> dict[str, object]:
    while True:
        frame = await asyncio.wait_for(ws.recv(), 10)
        if isinstance(frame, str) and (message := json.loads(frame))["type"] in kinds:
            return message  # type: ignore[no-any-return]
