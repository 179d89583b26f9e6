"""OpenAI-compatible routes: ``POST /v1/audio/speech``, ``GET /v1/audio/voices``, ``GET /v1/models``.

Works unchanged with the official ``openai`` SDK pointed at our base URL. OpenAI's voice names map
to Kokoro voices; any Kokoro voice or blend is accepted as well. ``response_format`` is one of
``mp3`` (default), ``opus``, ``aac`` (ADTS, as OpenAI sends it), ``flac``, ``wav``, ``pcm`` (24 kHz
s16le); ``stream_format: "sse"`` answers with ``speech.audio.delta`` / ``speech.audio.done`` events.
"""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncGenerator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from speakstream.data import language_samples
from speakstream.engine.voices import VOICE_ALIASES, by_language
from speakstream.errors import InvalidInput, SpeakstreamError
from speakstream.protocol import Options, sse_event
from speakstream.server.http import (
    audio_response,
    error_response,
    json_body,
    runtime_of,
    sse_parts,
    streaming,
    trace_header,
)
from speakstream.server.reply import Reply
from speakstream.server.runtime import Runtime
from speakstream.server.speech import SpeechRequest, body_limit, open_reply
from speakstream.server.voice_routes import catalogue

OPENAI_FORMATS = {"mp3": "mp3", "opus": "opus", "aac": "adts", "flac": "flac", "wav": "wav", "pcm": "pcm"}
MODELS = ("kokoro", "tts-1", "tts-1-hd", "gpt-4o-mini-tts")


async def speech(request: Request) -> Response:
    runtime = runtime_of(request)
    try:
        data = await json_body(request, body_limit(runtime))
        stream_format = _stream_format(data)
        reply = await open_reply(runtime, request, _speech(data))
    except SpeakstreamError as exc:
        return error_response(exc, runtime)
    headers = {"X-Request-Id": reply.request_id, **trace_header(reply)}
    if stream_format == "sse":
        return streaming(_sse(reply, runtime), runtime, media_type="text/event-stream", headers=headers)
    return await audio_response(reply, runtime, "openai", media_type=reply.fmt.mime_type, headers=headers)


def _speech(data: dict[str, Any]) -> SpeechRequest:
    """OpenAI's body in our terms: its voice names and formats mapped, our extra fields read."""
    voice = data.get("voice", "alloy")
    if isinstance(voice, dict):  # newer SDKs allow {"id": ...}
        voice = voice.get("id")
    if not isinstance(voice, str):
        raise InvalidInput("voice must be a string", code="unknown_voice")
    response_format = data.get("response_format", "mp3")
    if not isinstance(response_format, str) or response_format not in OPENAI_FORMATS:
        raise InvalidInput(f"response_format must be one of {', '.join(OPENAI_FORMATS)}", code="invalid_format")
    options = {
        "voice": voice,
        "speed": data.get("speed"),
        "format": OPENAI_FORMATS[response_format],
        "language": data.get("language"),  # an extra body field: read the text in this language
        "pronunciation_dictionaries": data.get("pronunciation_dictionaries"),  # extra body too
        "text_type": data.get("text_type"),
        "normalize": data.get("normalize"),
    }
    return SpeechRequest(data.get("input"), Options.parse(options), "openai")


def _stream_format(data: dict[str, Any]) -> str:
    stream_format = data.get("stream_format", "audio")
    if not isinstance(stream_format, str) or stream_format not in ("audio", "sse"):
        raise InvalidInput("stream_format must be 'audio' or 'sse'", code="invalid_stream_format")
    return stream_format


async def _sse(reply: Reply, runtime: Runtime) -> AsyncGenerator[bytes, None]:
    try:
        async for out in reply.outputs():
            for _, part in sse_parts(out.data, runtime.config.audio_frame_bytes) if out.data else ():
                audio = base64.b64encode(part).decode("ascii")
                yield sse_event("speech.audio.delta", {"type": "speech.audio.delta", "audio": audio})
    except SpeakstreamError as exc:
        runtime.error(exc)
        yield sse_event("error", {"type": "error", "error": exc.to_dict()})
        return
    words = sum(len(w.split()) for w in reply.texts)
    usage = {"input_tokens": words, "output_tokens": 0, "total_tokens": words}
    yield sse_event("speech.audio.done", {"type": "speech.audio.done", "usage": usage})


async def voices(request: Request) -> Response:
    runtime = runtime_of(request)
    try:
        scheduler = runtime.require_scheduler()
    except SpeakstreamError as exc:
        return error_response(exc, runtime)
    voices = scheduler.engine.voices()
    return JSONResponse(
        {
            "voices": catalogue(request),
            "languages": [
                {**group, "sample": language_samples()[group["language"]]["reply"]} for group in by_language(voices)
            ],
            "aliases": VOICE_ALIASES,
            "default": runtime.config.voice,
        }
    )


async def models(request: Request) -> Response:
    created = int(time.time())
    data = [{"id": m, "object": "model", "created": created, "owned_by": "speakstream"} for m in MODELS]
    return JSONResponse({"object": "list", "data": data})
