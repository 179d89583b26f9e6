"""SSML through the routes on the fake engine: a break is silence of its length, each span is read
in its own voice and speed, malformed SSML is refused with its position (a 400 before any audio,
an error frame that leaves the session going on), and tags split across appends."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import numpy as np
import pytest
import websockets

from speakstream.engine.cancel import CancelToken
from speakstream.engine.fake import FakeEngine
from speakstream.errors import InvalidInput
from speakstream.loadtest.servers import start_server
from speakstream.scheduler import Scheduler
from speakstream.server.reply import Reply, ReplySettings
from speakstream.server.serve import ThreadedServer
from speakstream.types import AudioChunk
from tests.server.dialects.helpers import elevenlabs_url

RATE = 24_000


class VoiceRecorder(FakeEngine):
    """Records the voice and speed each chunk is spoken with."""

    def __init__(self) -> None:
        super().__init__(seconds_per_char=0.0002)
        self.spoken: list[tuple[str, str, float]] = []

    def synthesize(
        self, text: str, *, voice: str = "af_heart", speed: float = 1.0, cancel: CancelToken | None = None
    ) -> AudioChunk:
        self.spoken.append((text, voice, speed))
        return super().synthesize(text, voice=voice, speed=speed, cancel=cancel)


@pytest.fixture
async def scheduler() -> AsyncIterator[Scheduler]:
    running = Scheduler(VoiceRecorder(), max_queue=8)
    await running.start()
    yield running
    await running.stop()


@pytest.fixture
def server() -> Iterator[ThreadedServer]:
    running = start_server(FakeEngine(seconds_per_char=0.0002), cache_mb=0)
    yield running
    running.stop()


def _silences_s(pcm: bytes) -> list[float]:
    """Lengths of the runs of digital silence longer than 10 ms (the fake's tone is never silent)."""
    silent = np.frombuffer(pcm, dtype=np.int16) == 0
    edges = np.flatnonzero(np.diff(np.concatenate([[0], silent.astype(np.int8), [0]])))
    runs = (edges[1::2] - edges[::2]) / RATE
    return [round(float(run), 3) for run in runs if run > 0.01]


async def test_each_span_is_spoken_in_its_voice_and_speed_and_a_break_is_silence(scheduler: Scheduler) -> None:
    settings = ReplySettings(voice="af_heart", speed=1.2)
    reply = Reply(scheduler, session_id="s", request_id="r", settings=settings)
    await reply.speak(
        '<speak>Hello there. <break time="750ms"/><lang xml:lang="es-ES">Hola amigos.</lang>'
        '<prosody rate="x-fast">Quick words.</prosody></speak>'
    )
    outs = [out async for out in reply.outputs()]
    engine = scheduler.engine
    assert isinstance(engine, VoiceRecorder)
    assert engine.spoken == [
        ("Hello there.", "af_heart", 1.2),
        ("Hola amigos.", "af_heart@es-ES", 1.2),
        ("Quick words.", "af_heart", pytest.approx(1.8)),
    ]
    pause = next(out for out in outs if not out.text and out.duration_s > 0.5)
    assert pause.duration_s == pytest.approx(0.75) and pause.words == ()
    spoken = [out for out in outs if out.text]
    assert spoken[1].offset_s == pytest.approx(pause.offset_s + 0.75)  # the words after it count it


async def test_a_span_in_a_language_its_voice_cannot_read_is_refused_before_audio(scheduler: Scheduler) -> None:
    reply = Reply(scheduler, session_id="s", request_id="r", settings=ReplySettings())
    with pytest.raises(InvalidInput) as error:
        await reply.speak("<speak>Hello. 你好。</speak>")
    assert error.value.code == "unsupported_text"
    reply = Reply(scheduler, session_id="s", request_id="r2", settings=ReplySettings())
    with pytest.raises(InvalidInput) as error:
        await reply.speak('<speak>Hello. <lang xml:lang="klingon">Qapla</lang></speak>')
    assert error.value.code == "unsupported_language"


def test_a_break_over_http_is_silence_of_its_length(server: ThreadedServer) -> None:
    body = {"text": '<speak>One. <break time="1.25s"/> Two.</speak>', "format": "pcm"}
    answer = httpx.post(f"{server.url}/invocations", json=body, timeout=30)
    assert answer.status_code == 200
    assert _silences_s(answer.content) == [1.25]
    plain = httpx.post(f"{server.url}/invocations", json={**body, "text_type": "text"}, timeout=30)
    assert _silences_s(plain.content) == []  # read as text: no break


@pytest.mark.parametrize("route", ["/invocations", "/v1/audio/speech"])
def test_malformed_ssml_is_a_400_with_its_position(server: ThreadedServer, route: str) -> None:
    text = "<speak>Hello <emphasis>there</speak>"
    body = {"text": text, "input": text, "model": "kokoro", "voice": "af_heart", "response_format": "pcm"}
    answer = httpx.post(f"{server.url}{route}", json=body, timeout=30)
    assert answer.status_code == 400, answer.text
    assert "invalid_ssml" in answer.text and "line 1, column 31" in answer.text, answer.text


async def test_tags_split_across_appends_and_a_bad_document_leaves_the_session_going_on(
    server: ThreadedServer,
) -> None:
    fragments = ["Fi", "rst <bre", 'ak time="0.', '5s"/> sec', "ond <sub al", 'ias="third">', "3rd</sub>."]
    async with websockets.connect(server.ws_url) as ws:
        await ws.send(json.dumps({"type": "config", "text_type": "ssml", "format": "pcm"}))
        for fragment in fragments:
            await ws.send(json.dumps({"type": "append", "text": fragment, "request_id": "a"}))
        await ws.send(json.dumps({"type": "flush", "request_id": "a"}))
        messages, audio = await _until_done(ws)
        texts = [m["text"] for m in messages if m["type"] == "word_timestamps"]
        assert texts == ["First", "second third."] and _silences_s(audio) == [0.5]
        await ws.send(json.dumps({"type": "text", "text": "<speak>Oops <b>x</speak>", "request_id": "b"}))
        messages, _ = await _until_done(ws)
        assert messages[-1]["code"] == "invalid_ssml" and "column" in messages[-1]["message"], messages
        await ws.send(json.dumps({"type": "text", "text": "Still here.", "request_id": "c"}))
        messages, audio = await _until_done(ws)
        assert messages[-1]["type"] == "synthesis_complete" and messages[-1]["request_id"] == "c" and audio


async def _until_done(ws: websockets.ClientConnection) -> tuple[list[dict[str, Any]], bytes]:
    """Control messages up to a request's end (complete or error), and the audio before it."""
    messages, audio = [], bytearray()
    async for frame in ws:
        if isinstance(frame, bytes):
            audio += frame
            continue
        messages.append(json.loads(frame))
        if messages[-1]["type"] in ("synthesis_complete", "error"):
            break
    return messages, bytes(audio)


async def test_elevenlabs_stream_input_reads_ssml_when_asked(server: ThreadedServer) -> None:
    url = elevenlabs_url(server, multi=False, enable_ssml_parsing="true")
    audio = bytearray()
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"text": " "}))
        await ws.send(json.dumps({"text": 'Wait <break time="1s"/> for it. '}))
        await ws.send(json.dumps({"text": ""}))
        async for frame in ws:
            message = json.loads(frame)
            audio += base64.b64decode(message.get("audio") or "")
            if message.get("isFinal"):
                break
    assert _silences_s(bytes(audio)) == [1.0]
