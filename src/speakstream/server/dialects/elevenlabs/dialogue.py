"""ElevenLabs' text-to-dialogue: ``POST /v1/text-to-dialogue[/stream][/with-timestamps]``.

``{"inputs": [{"text", "voice_id"}, ...]}`` is one reply whose turns are read each by its own
voice (a saved voice, a blend or a Kokoro voice, in its own language), ``turn_pause_s`` apart. The
timed forms add ``voice_segments``: which input's voice speaks from when to when, and the
characters of the inputs, joined by a space, it reads.
"""

from __future__ import annotations

import bisect
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from speakstream.errors import InvalidInput, SpeakstreamError
from speakstream.protocol import Options, locators
from speakstream.server.dialects.elevenlabs.tts import (
    DEFAULT_FORMAT,
    elevenlabs_error,
    output_format,
    timed_lines,
    timed_whole,
)
from speakstream.server.encoding import ChunkOut
from speakstream.server.http import audio_response, json_body, runtime_of, streaming
from speakstream.server.reply import Reply
from speakstream.server.runtime import Runtime
from speakstream.server.speech import SpeechRequest, Turn, body_limit, open_dialogue


def turns_of(data: dict[str, Any], runtime: Runtime) -> list[Turn]:
    inputs = data.get("inputs")
    if not isinstance(inputs, list):
        raise InvalidInput('inputs is a list of {"text", "voice_id"}', code="invalid_dialogue")
    turns = []
    for item in inputs:
        if not isinstance(item, dict) or not isinstance(item.get("voice_id"), str):
            raise InvalidInput('each input is {"text", "voice_id"}', code="invalid_dialogue")
        turns.append(Turn(item.get("text"), runtime.config.mapped_voice(item["voice_id"])))  # type: ignore[arg-type]
    return turns


class Segments:
    """A dialogue's ``voice_segments``, one per chunk: its input, voice, times and characters."""

    def __init__(self, turns: list[Turn]) -> None:
        self._turns = turns
        self._starts = []
        at = 0
        for turn in turns:
            self._starts.append(at)
            at += len(turn.text) + 1  # the turns are joined by a space

    def __call__(self, first: ChunkOut, duration_s: float) -> dict[str, list[Any]]:
        spans = [w.chars for w in first.words if w.chars is not None]
        if not spans:
            return {"voice_segments": []}
        start, end = spans[0][0], spans[-1][1]
        index = bisect.bisect_right(self._starts, start) - 1
        segment = {
            "voice_id": self._turns[index].voice,
            "start_time_seconds": round(first.offset_s, 3),
            "end_time_seconds": round(first.offset_s + duration_s, 3),
            "character_start_index": start,
            "character_end_index": end,
            "dialogue_input_index": index,
        }
        return {"voice_segments": [segment]}


async def _opened(request: Request, runtime: Runtime) -> tuple[Reply, list[Turn]] | Response:
    try:
        data = await json_body(request, body_limit(runtime))
        turns = turns_of(data, runtime)
        fmt, rate, bitrate = output_format(request.query_params.get("output_format") or DEFAULT_FORMAT)
        language = data.get("language_code")
        options = Options(
            format=fmt,
            sample_rate=rate,
            language=language if isinstance(language, str) and language else None,
            dictionaries=locators(data.get("pronunciation_dictionary_locators")),
        )
        speech = SpeechRequest("", options, "dialogue", bitrate=bitrate)
        return await open_dialogue(runtime, request, turns, speech), turns
    except SpeakstreamError as exc:
        return elevenlabs_error(exc, runtime)


async def dialogue(request: Request) -> Response:
    """``/v1/text-to-dialogue`` and ``/stream``: the audio, streamed as it is made."""
    runtime = runtime_of(request)
    opened = await _opened(request, runtime)
    if isinstance(opened, Response):
        return opened
    reply, _ = opened
    return await audio_response(reply, runtime, "dialogue", media_type=reply.fmt.mime_type)


async def dialogue_with_timestamps(request: Request) -> Response:
    runtime = runtime_of(request)
    opened = await _opened(request, runtime)
    if isinstance(opened, Response):
        return opened
    reply, turns = opened
    if request.url.path.rstrip("/").endswith("/stream/with-timestamps"):
        return streaming(timed_lines(reply, runtime, Segments(turns)), runtime, media_type="application/x-ndjson")
    return await timed_whole(reply, runtime, Segments(turns))


def routes() -> list[BaseRoute]:
    base = "/v1/text-to-dialogue"
    return [
        Route(base, dialogue, methods=["POST"]),
        Route(f"{base}/stream", dialogue, methods=["POST"]),
        Route(f"{base}/with-timestamps", dialogue_with_timestamps, methods=["POST"]),
        Route(f"{base}/stream/with-timestamps", dialogue_with_timestamps, methods=["POST"]),
    ]
