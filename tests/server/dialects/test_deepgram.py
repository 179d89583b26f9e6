"""The Deepgram dialect on the wire (fake engine): metadata, Speak/Flush/Clear/Close, sequence ids,
turns on one connection, warnings and errors, the HTTP route's formats, the key, Deepgram's voices."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import websockets

from speakstream.audio.decode import decode
from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.dialects.deepgram.voices import kokoro_voice
from speakstream.server.serve import ThreadedServer
from tests.server.dialects.helpers import ws_base


def _url(server: ThreadedServer, **query: str) -> str:
    params = {"model": "aura-2-thalia-en", "encoding": "linear16", "sample_rate": "24000", **query}
    return f"{ws_base(server)}/v1/speak?" + "&".join(f"{k}={v}" for k, v in params.items())


async def _until(ws: Any, kind: str, timeout: float = 30.0) -> tuple[bytes, list[dict[str, Any]]]:
    """Audio and messages until a message of ``kind`` (included)."""
    audio, messages = bytearray(), []
    while True:
        frame = await asyncio.wait_for(ws.recv(), timeout)
        if isinstance(frame, bytes):
            audio += frame
            continue
        messages.append(json.loads(frame))
        if messages[-1]["type"] == kind:
            return bytes(audio), messages


async def _until_closed(ws: Any) -> bytes:
    """Audio until the server closes the connection normally."""
    audio = bytearray()
    try:
        while True:
            frame = await asyncio.wait_for(ws.recv(), 30)
            audio += frame if isinstance(frame, bytes) else b""
    except websockets.ConnectionClosedOK:
        return bytes(audio)


async def _nothing_held(server: ThreadedServer) -> bool:
    scheduler = server.runtime.require_scheduler()
    for _ in range(100):
        if scheduler.admission.reserved == 0 and scheduler.admission.replies == 0:
            return True
        await asyncio.sleep(0.01)
    return False


def _speak(text: str) -> str:
    return json.dumps({"type": "Speak", "text": text})


FLUSH, CLEAR, CLOSE = (json.dumps({"type": kind}) for kind in ("Flush", "Clear", "Close"))


async def test_metadata_then_words_flushed_turn_after_turn_on_one_connection(fake_server: ThreadedServer) -> None:
    async with websockets.connect(_url(fake_server, mip_opt_out="false", tag="ignored")) as ws:
        metadata = json.loads(await ws.recv())
        assert metadata["type"] == "Metadata" and metadata["model_name"] == "aura-2-thalia-en"
        assert metadata["request_id"] and metadata["model_uuid"] and metadata["model_version"]
        for word in "Hello there, this is the first turn.".split():  # as LiveKit sends an LLM's words
            await ws.send(_speak(word + " "))
        await ws.send(FLUSH)
        first, messages = await _until(ws, "Flushed")
        assert await _nothing_held(fake_server)  # between turns the connection holds no reply
        await ws.send(_speak("And here is the second one."))
        await ws.send(FLUSH)
        second, more = await _until(ws, "Flushed")
    assert [m["sequence_id"] for m in messages + more] == [0, 1]
    assert len(first) / 2 / 24_000 > 1.0 and len(second) / 2 / 24_000 > 0.8  # the fake engine's 40 ms a char


async def test_a_flush_with_nothing_held_is_answered_at_once(fake_server: ThreadedServer) -> None:
    async with websockets.connect(_url(fake_server)) as ws:
        await ws.recv()
        await ws.send(FLUSH)
        audio, messages = await _until(ws, "Flushed", timeout=5)
    assert audio == b"" and messages == [{"type": "Flushed", "sequence_id": 0}]


async def test_clear_stops_the_audio_and_the_next_text_speaks(fake_server: ThreadedServer) -> None:
    async with websockets.connect(_url(fake_server)) as ws:
        await ws.recv()
        await ws.send(_speak("This turn talks for a long time before it is cleared. " * 20))
        await ws.send(FLUSH)
        while not isinstance(await ws.recv(), bytes):
            pass
        await ws.send(CLEAR)
        _, cleared = await _until(ws, "Cleared")
        await ws.send(_speak("After the clear."))
        await ws.send(FLUSH)
        audio, messages = await _until(ws, "Flushed")
    assert cleared[-1] == {"type": "Cleared", "sequence_id": 1}
    assert "Flushed" not in [m["type"] for m in cleared]  # the cleared turn's flush is never answered
    assert messages[-1]["sequence_id"] == 2 and 0.5 < len(audio) / 2 / 24_000 < 1.5  # only the new turn's


async def test_close_speaks_what_was_sent_then_closes(fake_server: ThreadedServer) -> None:
    async with websockets.connect(_url(fake_server)) as ws:
        await ws.recv()
        await ws.send(_speak("Say this before you close"))
        await ws.send(CLOSE)
        audio = await _until_closed(ws)
    assert len(audio) / 2 / 24_000 > 0.8


async def test_bad_messages_are_warnings_and_the_connection_goes_on(fake_server: ThreadedServer) -> None:
    async with websockets.connect(_url(fake_server)) as ws:
        await ws.recv()
        for bad, code in (
            ("{", "invalid_json"),
            ('{"type": "Sing"}', "invalid_type"),
            ('{"type": "Speak"}', "invalid_text"),
        ):
            await ws.send(bad)
            _, [warning] = await _until(ws, "Warning", timeout=5)
            assert warning["code"] == code and warning["description"], warning
        await ws.send(_speak("Fine after all that."))
        await ws.send(FLUSH)
        audio, _ = await _until(ws, "Flushed")
    assert audio


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({"encoding": "mp3"}, "invalid_encoding"),  # over HTTP only
        ({"model": "nobody"}, "unknown_voice"),
        ({"speed": "fast"}, "invalid_speed"),
    ],
)
async def test_a_bad_query_is_refused_at_the_handshake(fake_server: ThreadedServer, query: dict, code: str) -> None:
    async with websockets.connect(_url(fake_server, **query)) as ws:
        error = json.loads(await ws.recv())
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
    assert error["type"] == "Error" and error["code"] == code and closed.value.rcvd.code == 1008


@pytest.mark.parametrize("encoding", ["mulaw", "alaw"])
async def test_g711_at_8_khz(fake_server: ThreadedServer, encoding: str) -> None:
    async with websockets.connect(_url(fake_server, encoding=encoding, sample_rate="8000")) as ws:
        await ws.recv()
        await ws.send(_speak("Telephone speech."))
        await ws.send(FLUSH)
        audio, _ = await _until(ws, "Flushed")
    assert 0.5 < len(audio) / 8_000 < 1.2  # one byte a sample


@pytest.mark.parametrize(
    ("query", "media_type", "decoded_as"),
    [
        ({}, "audio/mpeg", "mp3"),
        ({"encoding": "linear16"}, "audio/wav", "wav"),
        ({"encoding": "linear16", "container": "none", "sample_rate": "16000"}, "audio/pcm", "pcm"),
        ({"encoding": "opus"}, "audio/ogg", "opus"),
        ({"encoding": "flac", "model": "af_heart"}, "audio/flac", "flac"),
    ],
)
async def test_the_http_route_speaks_in_deepgrams_formats(
    fake_server: ThreadedServer, query: dict, media_type: str, decoded_as: str
) -> None:
    async with httpx.AsyncClient(base_url=fake_server.url) as http:
        response = await http.post(
            "/v1/speak", params={"model": "aura-2-zeus-en", **query}, json={"text": "Hello over HTTP."}
        )
    assert response.status_code == 200 and response.headers["content-type"].startswith(media_type)
    assert response.headers["dg-request-id"] and response.headers["dg-char-count"] == "16"
    samples, rate = decode(response.content, decoded_as)
    assert len(samples) / (rate or 16_000) > 0.5


async def test_http_errors_in_deepgrams_shape(fake_server: ThreadedServer) -> None:
    async with httpx.AsyncClient(base_url=fake_server.url) as http:
        empty = await http.post("/v1/speak", json={"text": ""})
        container = await http.post("/v1/speak", params={"encoding": "mp3", "container": "wav"}, json={"text": "Hi."})
        rate = await http.post("/v1/speak", params={"sample_rate": "fast"}, json={"text": "Hi."})
    assert empty.status_code == 400 and empty.json()["err_code"] == "empty_text"
    assert container.status_code == 400 and container.json()["err_code"] == "invalid_container"
    assert rate.status_code == 400 and rate.json()["err_code"] == "invalid_sample_rate"


async def test_the_key_rides_as_deepgrams_token() -> None:
    server = start_server(FakeEngine(seconds_per_char=0.001), api_key="secret-key")
    try:
        async with httpx.AsyncClient(base_url=server.url) as http:
            good = await http.post("/v1/speak", headers={"Authorization": "Token secret-key"}, json={"text": "Hi."})
            bad = await http.post("/v1/speak", headers={"Authorization": "Token wrong"}, json={"text": "Hi."})
        async with websockets.connect(_url(server), additional_headers={"Authorization": "Token secret-key"}) as ws:
            assert json.loads(await ws.recv())["type"] == "Metadata"
    finally:
        server.stop()
    assert good.status_code == 200 and bad.status_code == 401


@pytest.mark.parametrize(
    ("model", "voice"),
    [
        ("aura-2-thalia-en", "af_heart"),
        ("aura-2-zeus-en", "am_michael"),
        ("aura-orion-en", "am_michael"),
        ("aura-2-celeste-es", "ef_dora"),
        ("aura-2-javier-es", "em_alex"),
        ("aura-2-julius-de", None),  # a language Kokoro does not speak: the server's default voice
        ("bm_george", "bm_george"),
        (None, None),
    ],
)
def test_deepgrams_voices_are_read_by_a_kokoro_voice_of_their_language_and_gender(
    model: str | None, voice: str | None
) -> None:
    assert kokoro_voice(model) == voice
