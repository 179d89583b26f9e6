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


SENTINEL = '{"type": "fuzz-sentinel"}'
"""Sent after every frame: its ``unknown_type`` error marks the end of that frame's answer, so
a frame costs one round trip, and no answer within ``HANG_S`` is a hang."""
HANG_S = 10.0


async def _answer(session: SpeechSession) -> list[dict[str, Any]]:
    """Everything the server said about the frame before the sentinel's error."""
    await session.send_raw(SENTINEL)
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(HANG_S):
        while True:
            message = getattr(await session.receive(), "message", None)
            if message is None:
                continue
            if message.get("code") == "unknown_type" and "fuzz-sentinel" in str(message.get("message")):
                return seen
            seen.append(message)


def random_body(rng: random.Random) -> tuple[str, bytes, str | None]:
    """A hostile HTTP request: route, body, content type (None: no header)."""
    route = rng.choice(["/invocations", "/v1/audio/speech"])
    ctype = rng.choice(["application/json", "text/plain", "application/octet-stream", "multipart/form-data", None])
    kind = rng.randrange(3)
    if kind == 0:
        return route, rng.randbytes(rng.randrange(0, 400)), ctype
    if kind == 1:
        text = "".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(rng.randrange(0, 120)))
        return route, text.encode("utf-8", "surrogatepass"), ctype
    keys = ["text", "input", "voice", "speed", "format", "response_format", "stream_format", "language", "model"]
    values: list[Any] = [None, "", "af_heart", "alloy", 0.5, -1, 1e308, 10**30, [], {}, True, "x" * 300]
    values += ["ok.", "es", "af_heart@ja", "9" * 500, "sse", "wav", "\u0000", "Hello there."]
    fields = {key: rng.choice(values) for key in rng.sample(keys, rng.randrange(1, 6))}
    return route, json.dumps(fields).encode(), "application/json"


async def _http_fuzz(url: str, count: int, rng: random.Random) -> dict[str, Any]:
    """``count`` hostile bodies, one after another: each must be answered, never with a 5xx
    other than a retryable 503, and never hang."""
    statuses: dict[str, int] = {}
    crashes = hangs = 0
    async with httpx.AsyncClient(base_url=url, timeout=HANG_S) as client:
        for _ in range(count):
            route, body, ctype = random_body(rng)
            headers = {"content-type": ctype} if ctype else {}
            try:
                response = await client.post(route, content=body, headers=headers)
            except httpx.TimeoutException:
                hangs += 1
                continue
            except httpx.TransportError:  # the server dropped the connection: a crash
                crashes += 1
                continue
            statuses[str(response.status_code)] = statuses.get(str(response.status_code), 0) + 1
            crashes += response.status_code >= 500 and response.status_code != 503
    return {"bodies": count, "statuses": dict(sorted(statuses.items())), "crashes": crashes, "hangs": hangs}


async def run_fuzz(*, frames: int = 1000, bodies: int = 200, seed: int = 7) -> dict[str, Any]:
    server = fake_server()
    rng = random.Random(seed)
    codes: dict[str, int] = {}
    bad_ok = hangs = 0
    try:
        async with SpeechSession(server.ws_url) as session:
            for frame, code in BAD_INPUTS:
                await session.send_raw(frame)
                answer = await _answer(session)
                bad_ok += any(m.get("code") == code for m in answer)
            for _ in range(frames):
                await session.send_raw(random_frame(rng))
                try:
                    answer = await _answer(session)
                except TimeoutError:
                    hangs += 1
                    continue
                for message in answer:
                    if message.get("type") == "error":
                        codes[message["code"]] = codes.get(message["code"], 0) + 1
            usable = await session.collect(await session.speak("Still fine after all that."))
        http = await _http_fuzz(server.url, bodies, rng)
        async with httpx.AsyncClient(base_url=server.url) as client:
            healthy = (await client.get("/ping")).status_code == 200
    except SpeakstreamError as exc:
        return {"crashed": str(exc)}
    finally:
        server.stop()
    return {
        "bad_inputs": f"{bad_ok}/{len(BAD_INPUTS)} answered with their error code",
        "random_frames": frames,
        "frame_hangs": hangs,
        "error_codes": dict(sorted(codes.items())),
        "http": http,
        "session_usable_after": (usable.final or {}).get("type") == "synthesis_complete",
        "server_healthy_after": healthy,
    }
