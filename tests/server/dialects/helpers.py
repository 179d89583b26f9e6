"""Raw WebSocket helpers for the dialect tests (the wire as the services' clients see it)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from livekit.agents.types import USERDATA_TIMED_TRANSCRIPT

from speakstream.server.serve import ThreadedServer


def ws_base(server: ThreadedServer) -> str:
    return server.ws_url.rsplit("/", 1)[0]


def elevenlabs_url(server: ThreadedServer, *, voice: str = "af_heart", multi: bool = True, **query: str) -> str:
    path = "multi-stream-input" if multi else "stream-input"
    params = "&".join(f"{k}={v}" for k, v in {"output_format": "pcm_24000", **query}.items())
    return f"{ws_base(server)}/v1/text-to-speech/{voice}/{path}?{params}"


def cartesia_request(context_id: str, transcript: str, *, more: bool = True, **extra: Any) -> str:
    message = {
        "context_id": context_id,
        "model_id": "sonic-2",
        "transcript": transcript,
        "continue": more,
        "voice": {"mode": "id", "id": "af_heart"},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24_000},
        "add_timestamps": True,
        **extra,
    }
    return json.dumps(message)


async def read_until(ws: Any, done: Any, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Messages until ``done(message)`` is true (that one included)."""
    messages = []
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        messages.append(message)
        if done(message):
            return messages


async def livekit_turn(tts: Any, text: str, *, interrupt: bool = False) -> tuple[bytes, list[Any]]:
    """A LiveKit TTS stream fed ``text`` word by word, as an LLM streams it: its audio and timed
    words (``interrupt``: the stream is closed after its first audio)."""
    stream = tts.stream()
    for token in text.split(" "):
        stream.push_text(token + " ")
    stream.end_input()
    audio, words = bytearray(), []
    try:
        async for event in stream:
            audio += bytes(event.frame.data)
            words += event.frame.userdata.get(USERDATA_TIMED_TRANSCRIPT) or []
            if interrupt:
                break
    finally:
        await stream.aclose()
    return bytes(audio), words


async def livekit_synthesized(tts: Any, text: str) -> bytes:
    """``TTS.synthesize``'s audio (the plugin's HTTP route)."""
    audio = bytearray()
    async with tts.synthesize(text) as stream:
        async for event in stream:
            audio += bytes(event.frame.data)
    return bytes(audio)
