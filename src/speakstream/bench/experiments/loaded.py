"""Words heard under load: the accuracy set spoken through the server by 1, 4 and 8 sessions at
once, heard by Whisper, against the same sentences decoded whole.

Window sizes follow the load (a crowded opening, the shared decoder's speed, a listener's
buffer), so seams fall in other places as it grows; they must fall between words at every level.
Admission by capacity is off here, so every session is served however far past capacity: what is
measured is the windows, not who gets in.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from speakstream.bench.asr import corpus_wer, recognizer
from speakstream.bench.context import BenchContext
from speakstream.bench.experiments.accuracy import SENTENCES, VOICES
from speakstream.bench.tables import table
from speakstream.client import SpeechSession
from speakstream.errors import SpeakstreamError

NAME = "loaded"
TITLE = "Words heard under load: the accuracy set through the server, sessions at once"
LEVELS = (1, 4, 8)


async def run(ctx: BenchContext) -> dict[str, Any]:
    levels = LEVELS[:2] if ctx.quick else LEVELS
    sentences = SENTENCES[:3] if ctx.quick else SENTENCES
    asr = recognizer()
    whole = await asyncio.to_thread(_whole, ctx, sentences, asr)
    rows = []
    async with ctx.configured(max_load=0):  # every reply admitted: the load is the experiment
        for level in levels:
            heard = await _level(ctx, level, sentences)
            pairs = await asyncio.to_thread(_transcribed, heard, asr)
            rows.append({"sessions": level, "replies": len(pairs), "wer": round(corpus_wer(pairs), 4)})
            ctx.say(f"loaded {level} at once: WER {rows[-1]['wer']:.1%}")
    return {"sentences": len(sentences), "voices": len(VOICES), "whole_wer": whole, "levels": rows}


def _whole(ctx: BenchContext, sentences: list[str], asr: Any) -> float:
    """The same sentences in the same voices, each decoded whole by the engine used directly."""
    engine, pairs = ctx.engine_source(), []
    for voice in VOICES:
        for text in sentences:
            chunk = engine.synthesize(text, voice=voice)
            pairs.append((text, asr.transcribe(chunk.samples, chunk.sample_rate).text))
    return round(corpus_wer(pairs), 4)


async def _level(ctx: BenchContext, sessions: int, sentences: list[str]) -> list[tuple[str, bytes]]:
    """Every voice's paragraph (the sentences as one reply), ``sessions`` of them at once, in
    rounds until each voice has spoken at least once."""
    paragraph = " ".join(sentences)
    voices = [VOICES[i % len(VOICES)] for i in range(max(sessions, len(VOICES)))]
    heard: list[tuple[str, bytes]] = []
    for start in range(0, len(voices), sessions):
        batch = voices[start : start + sessions]
        heard += await asyncio.gather(*(_speak(ctx.ws_url, paragraph, voice) for voice in batch))
    return [h for h in heard if h[1]]


async def _speak(url: str, text: str, voice: str) -> tuple[str, bytes]:
    try:
        async with SpeechSession(url) as session:
            result = await session.collect(await session.speak(text, voice=voice, format="pcm"))
    except SpeakstreamError:
        return text, b""
    final = result.final or {}
    return text, bytes(result.audio) if final.get("type") == "synthesis_complete" else b""


def _transcribed(heard: list[tuple[str, bytes]], asr: Any) -> list[tuple[str, str]]:
    pairs = []
    for text, pcm in heard:
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        pairs.append((text, asr.transcribe(samples, 24_000).text))
    return pairs


def markdown(result: dict[str, Any]) -> str:
    whole = result["whole_wer"]
    rows = [["whole decoding (engine, one sentence at a time)", "", f"{100 * whole:.1f}%", ""]]
    for r in result["levels"]:
        rows.append(
            [
                f"through the server, {r['sessions']} at once",
                r["replies"],
                f"{100 * r['wer']:.1f}%",
                f"{100 * (r['wer'] - whole):+.1f}",
            ]
        )
    intro = (
        f"The accuracy set ({result['voices']} voices, {result['sentences']} sentences each, one reply a voice) "
        "spoken by sessions at once through the server, admission by capacity off so every one is served.\n\n"
    )
    return intro + table(["decoded", "replies", "WER (Whisper)", "points vs whole"], rows)
