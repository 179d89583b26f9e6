"""The Cartesia dialect on the wire (fake engine): contexts, timestamps, flush, cancel, errors."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx
import numpy as np
import pytest
import websockets

from speakstream.audio.decode import decode
from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer
from tests.server.dialects.helpers import cartesia_request, read_until, ws_base


def _url(server: ThreadedServer) -> str:
    return f"{ws_base(server)}/tts/websocket?cartesia_version=2025-04-16"


def _audio(messages: list[dict]) -> bytes:
    return b"".join(base64.b64decode(m["data"]) for m in messages if m["type"] == "chunk")


async def test_a_context_streams_chunks_timestamps_flush_done_and_done(fake_server: ThreadedServer) -> None:
    async with websockets.connect(_url(fake_server)) as ws:
        await ws.send(cartesia_request("c1", "Hello there, my friend. "))
        await ws.send(cartesia_request("c1", "How are you today? ", flush=True))
        await ws.send(cartesia_request("c1", "", more=False))
        messages = await read_until(ws, lambda m: m["type"] == "done")
    kinds = [m["type"] for m in messages]
    assert kinds[-1] == "done" and messages[-1]["done"] is True and {m["context_id"] for m in messages} == {"c1"}
    assert kinds.index("chunk") < kinds.index("timestamps") and kinds.count("flush_done") == 1
    assert "chunk" not in kinds[kinds.index("flush_done") :]  # all the text before the flush was spoken
    words = [w for m in messages if m["type"] == "timestamps" for w in m["word_timestamps"]["words"]]
    assert " ".join(words).replace(",", "").replace("?", "").split()[:3] == ["Hello", "there", "my"]
    ends = [e for m in messages if m["type"] == "timestamps" for e in m["word_timestamps"]["end"]]
    assert ends == sorted(ends) and abs(ends[-1] - len(_audio(messages)) / 2 / 24_000) < 0.1


async def test_contexts_are_independent_and_cancel_stops_one(fake_server: ThreadedServer) -> None:
    long = "This context talks for a long time. " * 20
    async with websockets.connect(_url(fake_server)) as ws:
        await ws.send(cartesia_request("long", long, more=False))
        await read_until(ws, lambda m: m["type"] == "chunk")
        await ws.send(json.dumps({"context_id": "long", "cancel": True}))
        await ws.send(cartesia_request("short", "A short one.", more=False))
        messages = await read_until(ws, lambda m: m["type"] == "done")
        assert messages[-1]["context_id"] == "short"
        await ws.send(cartesia_request("after", "And after.", more=False, add_timestamps=False))
        after = await read_until(ws, lambda m: m["type"] == "done")
    assert all(m["context_id"] != "long" for m in after) and "timestamps" not in [m["type"] for m in after]
    assert not any(m["type"] == "done" and m["context_id"] == "long" for m in messages)


@pytest.mark.parametrize(("encoding", "rate", "width"), [("pcm_f32le", 16_000, 4), ("pcm_mulaw", 8_000, 1)])
async def test_encodings(fake_server: ThreadedServer, encoding: str, rate: int, width: int) -> None:
    fmt = {"container": "raw", "encoding": encoding, "sample_rate": rate}
    async with websockets.connect(_url(fake_server)) as ws:
        await ws.send(cartesia_request("e", "Encoded speech here.", more=False, output_format=fmt))
        messages = await read_until(ws, lambda m: m["type"] == "done")
    audio = _audio(messages)
    ends = [e for m in messages if m["type"] == "timestamps" for e in m["word_timestamps"]["end"]]
    assert abs(len(audio) / width / rate - ends[-1]) < 0.1
    if encoding == "pcm_f32le":
        samples = np.frombuffer(audio, "<f4")
        assert np.all(np.abs(samples) <= 1.0) and np.abs(samples).max() > 0.01


async def test_buffered_text_is_spoken_after_the_buffer_delay(fake_server: ThreadedServer) -> None:
    async with websockets.connect(_url(fake_server)) as ws:
        await ws.send(cartesia_request("b", "No end mark and more may come", max_buffer_delay_ms=200))
        messages = await read_until(ws, lambda m: m["type"] == "chunk", timeout=5)
        assert messages[-1]["context_id"] == "b"
        await ws.send(cartesia_request("b", "", more=False))
        assert (await read_until(ws, lambda m: m["type"] == "done"))[-1]["done"] is True


async def test_bad_requests_get_cartesia_errors_and_the_socket_goes_on(fake_server: ThreadedServer) -> None:
    async with websockets.connect(_url(fake_server)) as ws:
        for bad, code in (
            ("{", "invalid_json"),
            (cartesia_request("v", "Hi.", voice={"mode": "embedding", "embedding": [0.1]}), "invalid_voice"),
            (cartesia_request("w", "Hi.", voice={"mode": "id", "id": "nobody"}), "unknown_voice"),
            (cartesia_request("f", "Hi.", output_format={"container": "mp3"}), "invalid_output_format"),
            (cartesia_request("s", "Hi.", generation_config={"speed": "warp"}), "invalid_speed"),
            (cartesia_request("d", "Hi.", max_buffer_delay_ms=99_999), "invalid_buffer_delay"),
            (cartesia_request("l", "Hi.", language="de"), "unsupported_language"),
        ):
            await ws.send(bad)
            [error] = await read_until(ws, lambda m: True)
            assert error["type"] == "error" and error["error_code"] == code and error["done"] is True, error
            assert error["status_code"] == 400 and error["message"]
        await ws.send(cartesia_request("ok", "Fine after all that.", more=False))
        assert (await read_until(ws, lambda m: m["type"] == "done"))[-1]["context_id"] == "ok"
        await ws.send(cartesia_request("ok2", "Once.", more=False))
        await ws.send(cartesia_request("ok2", "Twice?", more=False))
        messages = await read_until(ws, lambda m: m["type"] in ("done", "error"))
        while messages[-1]["type"] != "error":
            messages = await read_until(ws, lambda m: m["type"] == "error")
        assert messages[-1]["error_code"] == "request_closed"


async def test_a_closed_client_leaves_nothing_running(fake_server: ThreadedServer) -> None:
    async with websockets.connect(_url(fake_server)) as ws:
        await ws.send(cartesia_request("x", "Talk for a while. " * 30, more=False))
        await read_until(ws, lambda m: m["type"] == "chunk")
    for _ in range(100):
        if not fake_server.runtime.sessions and fake_server.runtime.scheduler.queued == 0:  # type: ignore[union-attr]
            break
        await asyncio.sleep(0.05)
    assert not fake_server.runtime.sessions
    assert fake_server.runtime.scheduler is not None and fake_server.runtime.scheduler.queued == 0


@pytest.mark.parametrize(
    ("output_format", "media_type"),
    [
        ({"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16_000}, "audio/pcm"),
        ({"container": "wav", "encoding": "pcm_s16le", "sample_rate": 24_000}, "audio/wav"),
        ({"container": "mp3", "sample_rate": 44_100, "bit_rate": 128_000}, "audio/mpeg"),
    ],
)
async def test_bytes_endpoint(fake_server: ThreadedServer, output_format: dict, media_type: str) -> None:
    body = {"transcript": "Hello over HTTP.", "voice": {"mode": "id", "id": "af_heart"}, "output_format": output_format}
    async with httpx.AsyncClient(base_url=fake_server.url) as http:
        response = await http.post("/tts/bytes", json=body)
    assert response.status_code == 200 and response.headers["content-type"].startswith(media_type)
    samples, rate = decode(response.content, {"audio/pcm": "pcm", "audio/wav": "wav", "audio/mpeg": "mp3"}[media_type])
    assert rate == output_format["sample_rate"] or media_type == "audio/pcm"
    assert len(samples) / output_format["sample_rate"] > 0.5


async def test_bytes_endpoint_errors(fake_server: ThreadedServer) -> None:
    async with httpx.AsyncClient(base_url=fake_server.url) as http:
        voice = await http.post("/tts/bytes", json={"transcript": "Hi.", "voice": {"mode": "id", "id": "nobody"}})
        container = await http.post(
            "/tts/bytes",
            json={
                "transcript": "Hi.",
                "voice": {"mode": "id", "id": "af_heart"},
                "output_format": {"container": "ogg"},
            },
        )
        empty = await http.post("/tts/bytes", json={"transcript": "", "voice": {"mode": "id", "id": "af_heart"}})
    assert voice.status_code == 400 and voice.json()["error_code"] == "unknown_voice"
    assert container.status_code == 400 and container.json()["error_code"] == "invalid_output_format"
    assert empty.status_code == 400


async def test_the_key_rides_in_x_api_key_or_the_query_and_origins_are_checked() -> None:
    server = start_server(FakeEngine(seconds_per_char=0.001), api_key="secret-key")
    url = f"{ws_base(server)}/tts/websocket"
    try:
        for headers, query in (({"X-API-Key": "secret-key"}, ""), ({}, "?api_key=secret-key")):
            async with websockets.connect(url + query, additional_headers=headers) as ws:
                await ws.send(cartesia_request("k", "Authorised.", more=False))
                assert (await read_until(ws, lambda m: m["type"] == "done"))[-1]["done"] is True
        for headers, query in (({"X-API-Key": "wrong"}, ""), ({}, "?api_key=wrong"), ({}, "")):
            with pytest.raises(websockets.InvalidStatus):
                async with websockets.connect(url + query, additional_headers=headers):
                    pass
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with websockets.connect(
                url, additional_headers={"X-API-Key": "secret-key", "Origin": "https://elsewhere.example"}
            ):
                pass
        assert refused.value.response.status_code == 403
    finally:
        server.stop()
