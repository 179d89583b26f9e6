"""The server with the real Kokoro engine: what the protocol tests show with the fake one,
checked by ear (speech recognition)."""

from __future__ import annotations

import asyncio
import base64
import os

import openai
import pytest

from speakstream.audio.decode import decode
from speakstream.bench.asr import Recognizer, corpus_wer
from speakstream.client import AudioEvent, SpeechSession, stream_events
from speakstream.engine.kokoro import KokoroEngine
from speakstream.server.serve import ThreadedServer
from tests.server.helpers import drain_until

pytestmark = [pytest.mark.model, pytest.mark.asr]
SENTENCES = [
    "Thanks for waiting, I found your booking.",
    "Your flight leaves tomorrow morning.",
    "Is there anything else I can do for you?",
]


async def test_many_sentences_on_one_session_are_spoken(kokoro_server: ThreadedServer, asr: Recognizer) -> None:
    pairs = []
    async with SpeechSession(kokoro_server.ws_url, send_binary=True) as session:
        for sentence in SENTENCES:
            result = await session.collect(await session.speak(sentence, voice="af_bella"))
            assert result.final is not None and result.final["audio_bytes"] == len(result.audio)
            samples, rate = decode(bytes(result.audio), "pcm")
            pairs.append((sentence, asr.transcribe(samples, rate).text))
    assert corpus_wer(pairs) <= 0.05, pairs


async def test_appended_fragments_and_opus(kokoro_server: ThreadedServer, asr: Recognizer) -> None:
    text = " ".join(SENTENCES)
    async with SpeechSession(kokoro_server.ws_url) as session:
        for i in range(0, len(text), 4):
            await session.append(text[i : i + 4], request_id="live", format="opus")
        await session.flush()
        result = await session.collect("live")
    samples, rate = decode(bytes(result.audio), "opus")
    assert corpus_wer([(text, asr.transcribe(samples, rate).text)]) <= 0.05


async def test_cancel_stops_real_synthesis(kokoro_server: ThreadedServer) -> None:
    async with SpeechSession(kokoro_server.ws_url) as session:
        await session.speak(" ".join(SENTENCES * 3))
        while not isinstance(await session.receive(), AudioEvent):
            pass
        await session.cancel()
        events = await drain_until(session, ("cancelled",), timeout=10)
        assert events[-1].message["audio_bytes"] > 0  # type: ignore[union-attr]
        result = await session.collect(await session.speak("Next."))
        assert result.final is not None and result.final["type"] == "synthesis_complete"
    scheduler = kokoro_server.runtime.scheduler
    assert scheduler is not None and scheduler.queued == 0


async def test_sse_with_word_timestamps(kokoro_server: ThreadedServer, asr: Recognizer) -> None:
    text = " ".join(SENTENCES)
    events = [e async for e in stream_events(f"{kokoro_server.url}/invocations", {"text": text, "format": "wav"})]
    chunks = [e.json() for e in events if e.event == "audio_chunk"]
    audio = b"".join(base64.b64decode(c["audio"]) for c in chunks)
    samples, rate = decode(audio, "wav")
    assert corpus_wer([(text, asr.transcribe(samples, rate).text)]) <= 0.05
    words = [w["word"] for c in chunks for w in c["words"]]
    assert words[:3] == ["Thanks", "for", "waiting"]


def test_openai_sdk_with_the_real_engine(kokoro_server: ThreadedServer, asr: Recognizer) -> None:
    client = openai.OpenAI(base_url=f"{kokoro_server.url}/v1", api_key="unused")
    speech = client.audio.speech.create(model="tts-1", voice="onyx", input=SENTENCES[0], response_format="mp3")
    samples, rate = decode(speech.content, "mp3")
    assert corpus_wer([(SENTENCES[0], asr.transcribe(samples, rate).text)]) <= 0.05


async def test_two_sessions_at_once_share_the_cores_and_are_both_heard(
    kokoro_server: ThreadedServer, asr: Recognizer
) -> None:
    """On a CPU with cores to share, the server decodes two windows at once by default (two
    lanes), and what each session hears is its own text."""
    runtime = kokoro_server.runtime
    assert runtime.engine is not None and runtime.scheduler is not None
    expected = 2 if (os.cpu_count() or 1) >= 2 else 1
    assert runtime.engine.lanes == runtime.scheduler.lanes == expected

    async def speak(text: str) -> tuple[str, str]:
        async with SpeechSession(kokoro_server.ws_url) as session:
            result = await session.collect(await session.speak(text, voice="am_michael"))
        samples, rate = decode(bytes(result.audio), "pcm")
        return text, asr.transcribe(samples, rate).text

    engine = runtime.engine
    assert isinstance(engine, KokoroEngine) and engine.runner is not None
    cores, narrow = engine.runner.model.cores, engine.runner.model.cores.narrow_runs
    pairs = await asyncio.gather(*(speak(" ".join(SENTENCES[i:] + SENTENCES[:i])) for i in range(2)))
    assert corpus_wer(list(pairs)) <= 0.05, pairs
    if expected == 2:  # the scheduler told the engine its windows in flight: narrow copies were lent
        assert cores.narrow_runs > narrow
    assert runtime.scheduler.priority.in_flight == 0 and cores.running == 0  # none left over
