"""Deepgram's own clients, unchanged, against a real server with the real Kokoro model: the official
``deepgram-sdk`` (REST and WebSocket) and LiveKit's ``deepgram.TTS`` (streaming, interrupted,
again, and ``synthesize`` over HTTP), each reply heard back by Whisper."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import numpy as np
import pytest
from deepgram import DeepgramClient
from deepgram.environment import DeepgramClientEnvironment
from deepgram.speak.v1.types import SpeakV1Flushed, SpeakV1Metadata, SpeakV1Text
from livekit.plugins import deepgram as lk_deepgram

from speakstream.bench.asr import Recognizer, corpus_wer
from speakstream.server.serve import ThreadedServer
from tests.server.dialects.helpers import ws_base

pytestmark = [pytest.mark.model, pytest.mark.asr]
RATE = 24_000
REPLY = "The weather today is sunny and warm. We will meet at the station at noon."
LONG = "This answer goes on for a long time, so that it can be interrupted. " * 6
AGAIN = "Sure, here is the next part."


def _heard(asr: Recognizer, audio: bytes) -> str:
    return asr.transcribe(np.frombuffer(audio, "<i2").astype(np.float32) / 32768, RATE).text


def _sdk(server: ThreadedServer) -> DeepgramClient:
    base, socket = server.url.rstrip("/"), ws_base(server)
    environment = DeepgramClientEnvironment(base=base, production=socket, agent=socket, agent_rest=base)
    return DeepgramClient(api_key="unused", environment=environment)


def test_the_deepgram_sdk_speaks_over_rest(kokoro_server: ThreadedServer, asr: Recognizer) -> None:
    chunks = _sdk(kokoro_server).speak.v1.audio.generate(
        text=REPLY, model="aura-2-thalia-en", encoding="linear16", container="none", sample_rate=RATE
    )
    assert corpus_wer([(REPLY, _heard(asr, b"".join(chunks)))]) <= 0.1


def _sdk_turn(connection: Any, text: str) -> bytes:
    connection.send_text(SpeakV1Text(text=text))
    connection.send_flush()
    audio = bytearray()
    while not isinstance(message := connection.recv(), SpeakV1Flushed):
        if isinstance(message, bytes):
            audio += message
    return bytes(audio)


def test_the_deepgram_sdk_speaks_turns_over_the_websocket(kokoro_server: ThreadedServer, asr: Recognizer) -> None:
    with _sdk(kokoro_server).speak.v1.connect(model="aura-2-thalia-en", encoding="linear16", sample_rate="24000") as ws:
        assert isinstance(ws.recv(), SpeakV1Metadata)
        first = _sdk_turn(ws, REPLY)
        again = _sdk_turn(ws, AGAIN)
        ws.send_close()
    assert corpus_wer([(REPLY, _heard(asr, first))]) <= 0.1
    assert corpus_wer([(AGAIN, _heard(asr, again))]) <= 0.15


@pytest.fixture
async def livekit_tts(kokoro_server: ThreadedServer) -> AsyncIterator[Any]:
    async with aiohttp.ClientSession() as http:
        base_url = f"{kokoro_server.url.rstrip('/')}/v1/speak"
        tts = lk_deepgram.TTS(api_key="unused", base_url=base_url, model="aura-2-thalia-en", http_session=http)
        try:
            yield tts
        finally:
            await tts.aclose()


async def _livekit_turn(tts: Any, text: str, *, interrupt: bool = False) -> bytes:
    stream = tts.stream()
    for token in text.split(" "):  # as an LLM streams it
        stream.push_text(token + " ")
    stream.end_input()
    audio = bytearray()
    try:
        async for event in stream:
            audio += bytes(event.frame.data)
            if interrupt:
                break
    finally:
        await stream.aclose()
    return bytes(audio)


async def test_livekit_speaks_is_interrupted_and_speaks_again(livekit_tts: Any, asr: Recognizer) -> None:
    audio = await _livekit_turn(livekit_tts, REPLY)
    assert corpus_wer([(REPLY, _heard(asr, audio))]) <= 0.1

    started = time.perf_counter()
    cut = await _livekit_turn(livekit_tts, LONG, interrupt=True)
    assert 0 < len(cut) / 2 / RATE < 5 and time.perf_counter() - started < 10

    again = await _livekit_turn(livekit_tts, AGAIN)
    assert corpus_wer([(AGAIN, _heard(asr, again))]) <= 0.15


async def test_livekit_synthesize_over_http(livekit_tts: Any, asr: Recognizer) -> None:
    audio = bytearray()
    async with livekit_tts.synthesize(REPLY) as stream:
        async for event in stream:
            audio += bytes(event.frame.data)
    assert corpus_wer([(REPLY, _heard(asr, bytes(audio)))]) <= 0.1
