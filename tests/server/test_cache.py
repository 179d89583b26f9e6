"""The audio cache through the server: a repeated phrase is answered with no engine time, on every
route and in every format, word timestamps included; its hits and misses are on /metrics."""

from __future__ import annotations

import httpx
import numpy as np

from speakstream.audio.decode import decode
from speakstream.bench.asr import Recognizer, corpus_wer
from speakstream.client import SpeechSession, fetch_audio
from speakstream.engine.fake import FakeEngine
from speakstream.engine.kokoro import KokoroEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer

PHRASE = "One moment, please. I am checking that for you."


def _metric(server: ThreadedServer, name: str) -> float | None:
    for line in httpx.get(f"{server.url}/metrics", timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


async def _spoken(server: ThreadedServer, text: str) -> tuple[bytes, dict[str, object], list[object]]:
    async with SpeechSession(server.ws_url) as session:
        result = await session.collect(await session.speak(text))
    words = [m["words"] for m in result.messages if m.get("type") == "word_timestamps"]
    assert result.final is not None and result.final["type"] == "synthesis_complete"
    return bytes(result.audio), result.final, words


async def test_a_repeat_takes_no_engine_time_on_any_route_or_format() -> None:
    engine = FakeEngine(seconds_per_char=0.002)
    server = start_server(engine)
    try:
        audio, final, words = await _spoken(server, PHRASE)
        chunks = int(final["chunks"])  # type: ignore[call-overload]
        again, final_again, words_again = await _spoken(server, PHRASE)
        assert again == audio and words_again == words
        assert final_again["timings"]["inference_s"] == 0.0  # type: ignore[index]
        assert _metric(server, "speakstream_cache_hits_total") == chunks
        made = len(engine.calls)
        mp3 = await fetch_audio(server.url, PHRASE, format="mp3")  # another route, another format
        assert len(mp3.audio) > 0 and len(engine.calls) == made
        assert _metric(server, "speakstream_cache_hits_total") == 2 * chunks
        assert (_metric(server, "speakstream_cache_bytes") or 0) > 0
    finally:
        server.stop()


async def test_the_cache_is_off_with_one_setting() -> None:
    engine = FakeEngine(seconds_per_char=0.001)
    server = start_server(engine, cache_mb=0)
    try:
        for _ in range(2):
            await _spoken(server, PHRASE)
        assert _metric(server, "speakstream_cache_hits_total") is None
        assert len(engine.calls) == 2 * len(set(engine.calls))  # every chunk made twice
    finally:
        server.stop()


async def test_with_the_real_engine_a_cached_phrase_sounds_the_same(kokoro: KokoroEngine, asr: Recognizer) -> None:
    server = start_server(kokoro)
    try:
        audio, _, words = await _spoken(server, PHRASE)
        again, final, words_again = await _spoken(server, PHRASE)
    finally:
        server.stop()
    assert again == audio and words_again == words and final["timings"]["inference_s"] == 0.0  # type: ignore[index]
    samples, rate = decode(again, "pcm")
    assert np.abs(samples).max() > 0.05
    assert corpus_wer([(PHRASE, asr.transcribe(samples, rate).text)]) <= 0.1
