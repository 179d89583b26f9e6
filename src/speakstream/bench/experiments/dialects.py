"""Time to first audio through the ElevenLabs, Cartesia and Deepgram dialects against our own WebSocket,
on the same text and the same server, each over one persistent connection (turns interleaved, so
a slow moment of the machine falls on all alike). What a dialect costs is its translation:
the difference of the medians."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import websockets

from speakstream.bench.context import BenchContext
from speakstream.bench.stats import summary
from speakstream.bench.tables import table
from speakstream.client import SpeechSession
from speakstream.data import bench_text
from speakstream.text import split_sentences

NAME = "dialects"
TITLE = "Dialects: first audio through the ElevenLabs, Cartesia and Deepgram protocols vs our own"
NATIVE, ELEVENLABS, CARTESIA = "speakstream WebSocket", "ElevenLabs multi-stream-input", "Cartesia /tts/websocket"
DEEPGRAM = "Deepgram /v1/speak"
Turn = Callable[[str], Awaitable[float]]


async def run(ctx: BenchContext) -> dict[str, Any]:
    text = split_sentences(bench_text())[0].text  # first audio does not depend on what follows
    base = ctx.ws_url.rsplit("/", 1)[0]
    trials = ctx.trials(30, 1)
    firsts: dict[str, list[float]] = {NATIVE: [], ELEVENLABS: [], CARTESIA: [], DEEPGRAM: []}
    elevenlabs_url = f"{base}/v1/text-to-speech/af_heart/multi-stream-input?output_format=pcm_24000"
    async with (
        SpeechSession(ctx.ws_url) as session,
        websockets.connect(elevenlabs_url, max_size=None) as eleven,
        websockets.connect(f"{base}/tts/websocket?cartesia_version=2025-04-16", max_size=None) as cartesia,
        websockets.connect(f"{base}/v1/speak?model=af_heart&encoding=linear16", max_size=None) as deepgram,
    ):
        turns: dict[str, Turn] = {
            NATIVE: lambda t: _native(session, t),
            ELEVENLABS: lambda t: _elevenlabs(eleven, t),
            CARTESIA: lambda t: _cartesia(cartesia, t),
            DEEPGRAM: lambda t: _deepgram(deepgram, t),
        }
        for turn in turns.values():
            await turn("Warm up.")
        for trial in range(trials):
            order = list(turns) if trial % 2 == 0 else list(reversed(turns))
            for name in order:
                firsts[name].append(await turns[name](text))
            ctx.say(f"dialects trial {trial + 1}/{trials}")
    result = {name: summary(values) for name, values in firsts.items()}
    native = result[NATIVE]["p50"]
    for name in (ELEVENLABS, CARTESIA, DEEPGRAM):
        result[name]["overhead_p50_ms"] = round(result[name]["p50"] - native, 2)
    return {"text_chars": len(text), "variants": result}


async def _native(session: SpeechSession, text: str) -> float:
    sent_at = time.perf_counter()
    result = await session.collect(await session.speak(text), sent_at=sent_at)
    assert result.first_audio_at is not None and result.final is not None
    return (result.first_audio_at - sent_at) * 1000


_CONTEXTS = iter(range(10**9))


async def _elevenlabs(ws: Any, text: str) -> float:
    cid = f"c{next(_CONTEXTS)}"
    sent_at = time.perf_counter()
    await ws.send(json.dumps({"text": " ", "context_id": cid}))
    await ws.send(json.dumps({"text": text, "context_id": cid}))
    await ws.send(json.dumps({"context_id": cid, "close_context": True}))
    return await _first_then_end(ws, sent_at, lambda m: bool(m.get("audio")), lambda m: m.get("isFinal") is True)


async def _cartesia(ws: Any, text: str) -> float:
    message = {
        "context_id": f"c{next(_CONTEXTS)}",
        "transcript": text,
        "continue": False,
        "voice": {"mode": "id", "id": "af_heart"},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24_000},
    }
    sent_at = time.perf_counter()
    await ws.send(json.dumps(message))
    return await _first_then_end(ws, sent_at, lambda m: m.get("type") == "chunk", lambda m: m.get("done") is True)


async def _deepgram(ws: Any, text: str) -> float:
    """Audio comes as binary frames; the turn ends with ``Flushed``."""
    sent_at = time.perf_counter()
    await ws.send(json.dumps({"type": "Speak", "text": text}))
    await ws.send(json.dumps({"type": "Flush"}))
    return await _first_then_end(ws, sent_at, lambda m: False, lambda m: m.get("type") == "Flushed")


async def _first_then_end(
    ws: Any, sent_at: float, is_audio: Callable[[dict[str, Any]], bool], is_end: Callable[[dict[str, Any]], bool]
) -> float:
    """First audio of a turn, in ms after ``sent_at``, read until ``is_end``; a binary frame is
    audio (Deepgram's), a JSON one is audio when ``is_audio`` says so."""
    first = None
    while True:
        frame = await ws.recv()
        message = {} if isinstance(frame, bytes) else json.loads(frame)
        if "error" in message or message.get("type") in ("error", "Error"):
            raise RuntimeError(f"the server answered with an error: {message}")
        if first is None and (isinstance(frame, bytes) or is_audio(message)):
            first = time.perf_counter()
        if is_end(message):
            break
    assert first is not None
    return (first - sent_at) * 1000


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for name, r in result["variants"].items():
        rows.append([name, r["p50"], r["mean"], r["p95"], r["n"], r.get("overhead_p50_ms", "")])
    headers = ["protocol", "first audio p50 ms", "mean ms", "p95 ms", "turns", "overhead p50 ms"]
    return (
        f"The first sentence of the four-sentence reply ({result['text_chars']} characters) sent whole over "
        "each protocol, one persistent connection each, turns interleaved.\n\n" + table(headers, rows)
    )
