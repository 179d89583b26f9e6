"""Hostile input against a live session: the documented bad inputs, then random bytes and random
JSON; every frame gets an answer or is ignored, nothing crashes, the session stays usable."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import httpx

from speakstream.client import SpeechSession
from speakstream.errors import SpeakstreamError
from speakstream.loadtest.servers import fake_server

BAD_INPUTS: list[tuple[str | bytes, str]] = [
    ('{"type": "text", "text": ""}', "empty_text"),
    ('{"type": "text", "text": "   "}', "empty_text"),
    (b'\xc3\x28{"type": "text"}', "invalid_utf8"),
    ("hello?", "invalid_json"),
    ('["text", "hi"]', "invalid_message"),
    ('{"type": "sing"}', "unknown_type"),
    ('{"type": "text", "text": "hi", "voice": "xx_nobody"}', "unknown_voice"),
    ('{"type": "text", "text": "hi", "speed": 9}', "invalid_speed"),
    ('{"type": "text", "text": "hi", "format": "wma"}', "invalid_format"),
    ('{"type": "text", "text": "' + "a" * 20_001 + '"}', "text_too_long"),
    ('{"type": "text", "text": "' + "b" * 70_000 + '"}', "frame_too_large"),
    ('{"type": "flush"}', "nothing_to_flush"),
    ('{"type": "cancel", "request_id": "nope"}', "unknown_request"),
    ('{"type": "text", "text": "hi", "sample_rate": 11025}', "invalid_sample_rate"),
    ('{"type": "config", "voice": "xx_nobody"}', "unknown_voice"),
    ('{"type": "text", "text": "hi", "language": "klingon"}', "unsupported_language"),
    ('{"type": "text", "text": "hi", "language": ["es"]}', "unsupported_language"),
    ('{"type": "config", "language": "x"}', "unsupported_language"),
    ('{"type": "text", "text": "hi", "voice": "af_heart@"}', "unsupported_language"),
    ('{"type": "append", "text": "hi", "chunk": "yes"}', "invalid_message"),
]
"""The documented bad inputs and the error code each must get (also used by the tests)."""


def random_frame(rng: random.Random) -> str | bytes:
    kind = rng.randrange(4)
    if kind == 0:
        return rng.randbytes(rng.randrange(0, 300))
    if kind == 1:
        return "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(0, 80)))
    fields: dict[str, Any] = {"type": rng.choice(["text", "append", "flush", "cancel", "config", "close?", 5, None])}
    keys = ["text", "voice", "speed", "format", "request_id", "sample_rate", "chunk", "chunking", "language"]
    for key in rng.sample(keys, 3):
        fields[key] = rng.choice(
            [None, "", "af_heart", 1.0, -3, 10**9, [], {}, True, "x" * 50, "ok.", "es", "af_heart@ja"]
        )
    frame = json.dumps(fields)
    return frame.encode() if kind == 3 else frame


async def _answer(session: SpeechSession) -> dict[str, Any] | None:
    """Drain frames for a moment; the last control message seen."""
    seen = None
    try:
        while True:
            event = await asyncio.wait_for(session.receive(), 0.05)
            if hasattr(event, "message"):
                seen = event.message
    except TimeoutError:
        return seen


async def run_fuzz(*, frames: int = 1000, seed: int = 7) -> dict[str, Any]:
    server = fake_server()
    rng = random.Random(seed)
    codes: dict[str, int] = {}
    bad_ok = 0
    try:
        async with SpeechSession(server.ws_url) as session:
            for frame, code in BAD_INPUTS:
                await session.send_raw(frame)
                answer = await _answer(session)
                bad_ok += bool(answer and answer.get("code") == code)
            for _ in range(frames):
                await session.send_raw(random_frame(rng))
                answer = await _answer(session)
                if answer and answer.get("type") == "error":
                    codes[answer["code"]] = codes.get(answer["code"], 0) + 1
            usable = await session.collect(await session.speak("Still fine after all that."))
        async with httpx.AsyncClient(base_url=server.url) as client:
            healthy = (await client.get("/ping")).status_code == 200
    except SpeakstreamError as exc:
        return {"crashed": str(exc)}
    finally:
        server.stop()
    return {
        "bad_inputs": f"{bad_ok}/{len(BAD_INPUTS)} answered with their error code",
        "random_frames": frames,
        "error_codes": codes,
        "session_usable_after": (usable.final or {}).get("type") == "synthesis_complete",
        "server_healthy_after": healthy,
    }
