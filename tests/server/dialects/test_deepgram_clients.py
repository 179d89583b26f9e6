"""Deepgram's official ``deepgram-sdk``, unchanged, against a real server with the real Kokoro model:
REST, and turns over the WebSocket, each reply heard back by Whisper. LiveKit's ``deepgram.TTS``
is driven with the other frameworks' clients (``test_frameworks.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from deepgram import DeepgramClient
from deepgram.environment import DeepgramClientEnvironment
from deepgram.speak.v1.types import SpeakV1Flushed, SpeakV1Metadata, SpeakV1Text

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
