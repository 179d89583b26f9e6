"""Normalisation turned off per request (``normalize: false``, ElevenLabs' ``apply_text_normalization:
off``): every route hands the engine the flag, the engine then reads the text as it is, and the
audio cache keys the two apart."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import numpy as np
import openai
import pytest
import websockets

from speakstream.bench.asr import Recognizer
from speakstream.engine.base import Stream
from speakstream.engine.cancel import CancelToken
from speakstream.engine.fake import FakeEngine
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.phonemes.languages import parse_language
from speakstream.errors import ProtocolError
from speakstream.loadtest.servers import start_server
from speakstream.protocol import Options
from speakstream.server.serve import ThreadedServer
from tests.server.dialects.helpers import elevenlabs_url

DATED = "The meeting moved to 2025-03-05."


class FlagRecorder(FakeEngine):
    """Records, for each chunk, whether the engine was asked to normalise it."""

    def __init__(self) -> None:
        super().__init__(seconds_per_char=0.0002)
        self.normalized: list[bool] = []

    def stream(
        self,
        text: str,
        *,
        voice: str = "af_heart",
        speed: float = 1.0,
        cancel: CancelToken | None = None,
        opening: bool = True,
        normalized: bool = True,
    ) -> Stream:
        self.normalized.append(normalized)
        return super().stream(text, voice=voice, speed=speed, cancel=cancel, opening=opening, normalized=normalized)


@pytest.fixture
def server() -> Iterator[ThreadedServer]:
    running = start_server(FlagRecorder(), cache_mb=0)
    yield running
    running.stop()


def _flags(server: ThreadedServer) -> list[bool]:
    engine = server.runtime.engine
    assert isinstance(engine, FlagRecorder)
    flags, engine.normalized = engine.normalized, []
    return flags


def test_options_read_the_flag_and_keep_a_false_one_over_defaults() -> None:
    assert Options.parse({"normalize": False}).over(Options(voice="af_heart")).normalize is False
    assert Options.parse({"normalize": "false"}, strings=True).normalize is False
    assert Options.parse({}).normalize is None
    with pytest.raises(ProtocolError):
        Options.parse({"normalize": "no"})


def test_the_http_routes_hand_the_engine_the_flag(server: ThreadedServer) -> None:
    url = server.url
    assert httpx.post(f"{url}/invocations?normalize=false", content=DATED, timeout=30).status_code == 200
    assert _flags(server) == [False]
    assert httpx.post(f"{url}/invocations", json={"text": DATED}, timeout=30).status_code == 200
    assert _flags(server) == [True]
    client = openai.OpenAI(api_key="unused", base_url=f"{url}/v1")
    client.audio.speech.create(model="kokoro", voice="alloy", input=DATED, extra_body={"normalize": False})
    assert _flags(server) == [False]
    body = {"text": DATED, "apply_text_normalization": "off"}
    assert httpx.post(f"{url}/v1/text-to-speech/af_heart", json=body, timeout=30).status_code == 200
    assert _flags(server) == [False]
    bad = httpx.post(f"{url}/v1/text-to-speech/af_heart", json={**body, "apply_text_normalization": "sometimes"})
    assert bad.status_code == 400 and "invalid_normalize" in bad.text


async def test_the_websockets_hand_the_engine_the_flag(server: ThreadedServer) -> None:
    async with websockets.connect(server.ws_url) as ws:
        await ws.send(json.dumps({"type": "text", "text": DATED, "normalize": False}))
        while json.loads(await _control(ws))["type"] != "synthesis_complete":
            pass
    assert _flags(server) == [False]
    async with websockets.connect(elevenlabs_url(server, multi=False, apply_text_normalization="off")) as ws:
        for text in (" ", DATED + " ", ""):
            await ws.send(json.dumps({"text": text}))
        while not json.loads(await ws.recv()).get("isFinal"):
            pass
    assert _flags(server) == [False]


async def _control(ws: websockets.ClientConnection) -> str:
    """The next control message (audio frames skipped)."""
    while isinstance(frame := await ws.recv(), bytes):
        pass
    return frame


def test_the_engine_reads_the_text_as_it_is_and_the_cache_keys_them_apart(kokoro: KokoroEngine) -> None:
    english = parse_language("en-us")
    normalized = kokoro.phoneme_windows(DATED, english)[0].phonemes
    as_it_is = kokoro.phoneme_windows(DATED, english, normalized=False)[0].phonemes
    assert "mˈɑɹʧ" in normalized and "mˈɑɹʧ" not in as_it_is, (normalized, as_it_is)
    keys = {kokoro.sound_key(DATED, voice="af_heart", speed=1.0, normalized=flag) for flag in (True, False)}
    assert len(keys) == 2
    plain = "Nothing here to normalise."
    assert kokoro.sound_key(plain, voice="af_heart", speed=1.0, normalized=False) == kokoro.sound_key(
        plain, voice="af_heart", speed=1.0
    )


def test_a_date_read_as_it_is_is_not_heard_as_a_date(kokoro_server: ThreadedServer, asr: Recognizer) -> None:
    def heard(**options: object) -> str:
        body = {"text": DATED, "voice": "af_heart", "format": "pcm", **options}
        answer = httpx.post(f"{kokoro_server.url}/invocations", json=body, timeout=120)
        assert answer.status_code == 200, answer.text
        samples = np.frombuffer(answer.content, dtype=np.int16).astype(np.float32) / 32768
        return asr.transcribe(samples, 24_000).text.lower()

    assert "march" in heard()
    assert "march" not in heard(normalize=False)
