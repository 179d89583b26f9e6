"""The framework clients, unchanged, against a real server with the real Kokoro model: pipecat's
``ElevenLabsTTSService``, ``ElevenLabsHttpTTSService``, ``CartesiaTTSService``,
``DeepgramTTSService`` and ``DeepgramHttpTTSService``, LiveKit's ``elevenlabs.TTS``,
``cartesia.TTS`` and ``deepgram.TTS`` (streaming, and ``synthesize`` over HTTP). Each speaks a
whole reply (heard by Whisper), gets word timestamps that match the audio (where the vendor's
protocol times words: not Deepgram's), is interrupted mid-reply (no more audio of it), and speaks
again on the same connection."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import numpy as np
import pytest
from livekit.plugins import cartesia as lk_cartesia
from livekit.plugins import deepgram as lk_deepgram
from livekit.plugins import elevenlabs as lk_elevenlabs
from pipecat.frames.frames import (
    EndFrame,
    Frame,
    InterruptionFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.cartesia.tts import CartesiaTTSService
from pipecat.services.deepgram.tts import DeepgramHttpTTSService, DeepgramTTSService
from pipecat.services.elevenlabs.tts import ElevenLabsHttpTTSService, ElevenLabsTTSService
from pipecat.workers.runner import WorkerRunner

from speakstream.bench.asr import Recognizer, corpus_wer
from speakstream.server.serve import ThreadedServer
from tests.server.dialects.helpers import livekit_synthesized, livekit_turn

pytestmark = [pytest.mark.model, pytest.mark.asr]
RATE = 24_000
REPLY = "The weather today is sunny and warm. We will meet at the station at noon."
LONG = "This answer goes on for a long time, so that it can be interrupted. " * 6
AGAIN = "Sure, here is the next part."


def _host(server: ThreadedServer) -> str:
    return server.url.split("//", 1)[1].rstrip("/")


# pipecat


class _Sink(FrameProcessor):
    def __init__(self, frames: asyncio.Queue[Frame]) -> None:
        super().__init__()
        self.frames = frames

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.frames.put(frame)
        await self.push_frame(frame, direction)


@dataclass
class _Turn:
    audio: bytearray = field(default_factory=bytearray)
    words: list[tuple[str, int]] = field(default_factory=list)


@pytest.fixture(params=["elevenlabs", "elevenlabs-http", "cartesia", "deepgram", "deepgram-http"])
async def pipecat_tts(request: pytest.FixtureRequest, kokoro_server: ThreadedServer) -> AsyncIterator[Any]:
    host = _host(kokoro_server)
    http = aiohttp.ClientSession()
    if request.param == "elevenlabs-http":
        tts: Any = ElevenLabsHttpTTSService(
            api_key="unused",
            base_url=f"http://{host}",
            aiohttp_session=http,
            settings=ElevenLabsHttpTTSService.Settings(voice="af_heart"),
            sample_rate=RATE,
        )
    elif request.param == "elevenlabs":
        tts = ElevenLabsTTSService(
            api_key="unused",
            url=f"ws://{host}",
            settings=ElevenLabsTTSService.Settings(voice="af_heart"),
            sample_rate=RATE,
        )
    elif request.param == "deepgram":
        settings = DeepgramTTSService.Settings(voice="aura-2-thalia-en")
        tts = DeepgramTTSService(api_key="unused", base_url=f"ws://{host}", settings=settings, sample_rate=RATE)
    elif request.param == "deepgram-http":
        settings = DeepgramHttpTTSService.Settings(voice="aura-2-thalia-en")
        tts = DeepgramHttpTTSService(
            api_key="unused", base_url=f"http://{host}", aiohttp_session=http, settings=settings, sample_rate=RATE
        )
    else:
        tts = CartesiaTTSService(
            api_key="unused",
            url=f"ws://{host}/tts/websocket",
            settings=CartesiaTTSService.Settings(voice="af_heart"),
            sample_rate=RATE,
        )
    frames: asyncio.Queue[Frame] = asyncio.Queue()
    worker = PipelineWorker(
        Pipeline([tts, _Sink(frames)]),
        cancel_on_idle_timeout=False,
        params=PipelineParams(audio_out_sample_rate=RATE),
    )
    runner = WorkerRunner()
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())
    await asyncio.sleep(0.5)  # the service connects on its StartFrame
    try:
        yield worker, frames, not request.param.startswith("deepgram")  # (Deepgram times no words)
    finally:
        await worker.queue_frame(EndFrame())
        await asyncio.wait_for(running, 30)
        await http.close()


async def _pipecat_turn(worker: Any, frames: asyncio.Queue[Frame], text: str) -> _Turn:
    turn = _Turn()
    await worker.queue_frame(TTSSpeakFrame(text))
    while not isinstance(frame := await asyncio.wait_for(frames.get(), 60), TTSStoppedFrame):
        if isinstance(frame, TTSAudioRawFrame):
            turn.audio += frame.audio
        elif isinstance(frame, TTSTextFrame) and frame.pts is not None:
            turn.words.append((frame.text, frame.pts))
    return turn


def _heard(asr: Recognizer, audio: bytes | bytearray) -> str:
    return asr.transcribe(np.frombuffer(bytes(audio), "<i2").astype(np.float32) / 32768, RATE).text


async def test_pipecat_speaks_times_words_is_interrupted_and_speaks_again(
    pipecat_tts: Any, asr: Recognizer, kokoro_server: ThreadedServer
) -> None:
    worker, frames, times_words = pipecat_tts
    turn = await _pipecat_turn(worker, frames, REPLY)
    assert corpus_wer([(REPLY, _heard(asr, turn.audio))]) <= 0.1
    audio_s = len(turn.audio) / 2 / RATE
    if times_words:
        assert [w for w, _ in turn.words] == REPLY.split()
        starts = [(pts - turn.words[0][1]) / 1e9 for _, pts in turn.words]
        assert starts == sorted(starts) and audio_s - 1.5 < starts[-1] < audio_s  # the last word starts near the end

    await worker.queue_frame(TTSSpeakFrame(LONG))
    while not isinstance(await asyncio.wait_for(frames.get(), 60), TTSAudioRawFrame):
        pass
    await worker.queue_frame(InterruptionFrame())
    await asyncio.sleep(0.2)
    while not frames.empty():
        frames.get_nowait()
    await asyncio.sleep(1.5)
    late = [f for f in _drain(frames) if isinstance(f, TTSAudioRawFrame)]
    assert not late  # the interrupted reply's audio stops

    again = await _pipecat_turn(worker, frames, AGAIN)
    assert corpus_wer([(AGAIN, _heard(asr, again.audio))]) <= 0.15


def _drain(frames: asyncio.Queue[Frame]) -> list[Frame]:
    out = []
    while not frames.empty():
        out.append(frames.get_nowait())
    return out


# LiveKit


@pytest.fixture(params=["elevenlabs", "cartesia", "deepgram"])
async def livekit_tts(request: pytest.FixtureRequest, kokoro_server: ThreadedServer) -> AsyncIterator[Any]:
    host = _host(kokoro_server)
    async with aiohttp.ClientSession() as http:
        if request.param == "elevenlabs":
            tts: Any = lk_elevenlabs.TTS(
                api_key="unused",
                base_url=f"http://{host}/v1",
                voice_id="af_heart",
                encoding="pcm_24000",
                http_session=http,
            )
        elif request.param == "cartesia":
            tts = lk_cartesia.TTS(api_key="unused", base_url=f"http://{host}", voice="af_heart", http_session=http)
        else:  # a Deepgram voice name, read by a Kokoro voice of its language and gender
            base_url = f"http://{host}/v1/speak"
            tts = lk_deepgram.TTS(api_key="unused", base_url=base_url, model="aura-2-thalia-en", http_session=http)
        try:
            yield tts
        finally:
            await tts.aclose()


async def test_livekit_speaks_times_words_is_interrupted_and_speaks_again(
    livekit_tts: Any, asr: Recognizer, kokoro_server: ThreadedServer
) -> None:
    audio, words = await livekit_turn(livekit_tts, REPLY)
    assert corpus_wer([(REPLY, _heard(asr, audio))]) <= 0.1
    audio_s = len(audio) / 2 / RATE
    if livekit_tts.capabilities.aligned_transcript:  # (Deepgram's plugin times no words)
        assert "".join(str(w) for w in words).split() == REPLY.split()  # a TimedString is the word
        ends = [w.end_time for w in words]
        assert ends == sorted(ends) and abs(ends[-1] - audio_s) < 0.1  # the last word ends with the audio

    started = time.perf_counter()
    cut, _ = await livekit_turn(livekit_tts, LONG, interrupt=True)
    assert 0 < len(cut) / 2 / RATE < 5 and time.perf_counter() - started < 10

    again, _ = await livekit_turn(livekit_tts, AGAIN)
    assert corpus_wer([(AGAIN, _heard(asr, again))]) <= 0.15


async def test_livekit_synthesize_over_http(livekit_tts: Any, asr: Recognizer) -> None:
    """``TTS.synthesize``: ElevenLabs' ``/v1/text-to-speech/{voice}/stream``, Cartesia's ``/tts/bytes``,
    Deepgram's ``/v1/speak``."""
    audio = await livekit_synthesized(livekit_tts, REPLY)
    assert corpus_wer([(REPLY, _heard(asr, audio))]) <= 0.1
