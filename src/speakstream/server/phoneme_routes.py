"""Phoneme tools: ``POST /v1/phonemize`` shows what the G2P makes of a text in a language (what a
pronunciation rule would replace), and ``POST /v1/audio/from-phonemes`` speaks phonemes given
directly; Kokoro-FastAPI's ``/dev/phonemize`` and ``/dev/generate_from_phonemes`` are the same."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from speakstream.engine.base import check_text
from speakstream.engine.phonemes.inline import as_inline
from speakstream.engine.phonemes.languages import Language, parse_language
from speakstream.errors import InvalidInput, SpeakstreamError
from speakstream.protocol import Options
from speakstream.server.http import audio_response, error_response, json_body, json_route, runtime_of
from speakstream.server.runtime import Runtime
from speakstream.server.speech import SpeechRequest, body_limit, open_reply


def language_of(runtime: Runtime, data: dict[str, Any]) -> Language:
    """The request's ``language``, else its ``voice``'s (a saved voice's own), else the server voice's."""
    if data.get("language") is not None:
        return parse_language(data["language"])
    voice = data.get("voice")
    if voice is not None and not isinstance(voice, str):
        raise InvalidInput("voice must be a string", code="unknown_voice")
    return runtime.settings(Options(voice=voice)).speaks


async def _phonemize(request: Request) -> dict[str, Any]:
    runtime = runtime_of(request)
    data = await json_body(request, body_limit(runtime))
    text = check_text(data.get("text"))
    if len(text) > runtime.config.max_text_chars:
        raise InvalidInput(f"text is over the {runtime.config.max_text_chars}-character limit", code="text_too_long")
    normalize = data.get("normalize", True)
    if not isinstance(normalize, bool):
        raise InvalidInput("normalize is true or false", code="invalid_message")
    language = language_of(runtime, data)
    engine = runtime.require_scheduler().engine
    made = await asyncio.to_thread(engine.phonemize, text, language, normalized=normalize)
    words = [{"text": w.text, "phonemes": made.phonemes[w.first : w.end]} for w in made.words]
    return {"language": language.tag, "phonemes": made.phonemes, "tokens": list(made.tokens), "words": words}


async def from_phonemes(request: Request) -> Response:
    """Speech of ``phonemes`` in ``voice`` (``format``: ours, default ``wav``), spoken as any text:
    chunked, timed, each word shown as its phonemes."""
    runtime = runtime_of(request)
    try:
        data = await json_body(request, body_limit(runtime))
        text = as_inline(data.get("phonemes"))  # type: ignore[arg-type]
        options = Options.parse({k: data.get(k) for k in ("voice", "speed", "format", "sample_rate", "language")})
        options = replace(options, text_type="text", normalize=False).over(Options(format="wav"))
        reply = await open_reply(runtime, request, SpeechRequest(text, options, "phonemes"))
    except SpeakstreamError as exc:
        return error_response(exc, runtime)
    return await audio_response(reply, runtime, "phonemes", media_type=reply.fmt.mime_type)


def routes() -> list[BaseRoute]:
    return [
        json_route("/v1/phonemize", _phonemize, "POST"),
        json_route("/dev/phonemize", _phonemize, "POST"),
        Route("/v1/audio/from-phonemes", from_phonemes, methods=["POST"]),
        Route("/dev/generate_from_phonemes", from_phonemes, methods=["POST"]),
    ]
