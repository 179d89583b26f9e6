"""Saved voices over HTTP (``/v1/saved-voices``), the catalogue every voice listing maps (ours, the
OpenAI route's, ElevenLabs' and Cartesia's), and a voice's spoken preview."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from speakstream.data import language_samples
from speakstream.engine.phonemes.languages import parse_language
from speakstream.errors import InvalidInput, NotFound, SpeakstreamError
from speakstream.protocol import Options
from speakstream.server.http import audio_response, error_response, json_body, json_route, runtime_of
from speakstream.server.runtime import Runtime
from speakstream.server.saved_voices import SavedVoice, saved_voice
from speakstream.server.speech import SpeechRequest, open_reply

BASE = "/v1/saved-voices"
_BODY_LIMIT = 64 << 10
PREVIEW_FORMATS = ("mp3", "wav", "opus", "pcm")


def known_voices(runtime: Runtime) -> list[str]:
    """The Kokoro voices a blend may mix: the loaded engine's (503 while it loads)."""
    return [v.name for v in runtime.require_scheduler().engine.voices()]


def checked_voice(runtime: Runtime, data: dict[str, Any]) -> SavedVoice:
    """A voice to save from ``data``, its blend's voices and its dictionaries known to the server."""
    voice = saved_voice(data, known_voices(runtime))
    _dictionaries_known(runtime, voice)
    return voice


def _dictionaries_known(runtime: Runtime, voice: SavedVoice) -> None:
    if voice.dictionaries:
        runtime.dictionaries.lexicon(voice.dictionaries)  # NotFound names a dictionary it lacks


def catalogue(request: Request) -> list[dict[str, Any]]:
    """Every voice a request may name: the built-in Kokoro voices, then the saved ones, each with
    its language, gender, whether it is saved, and the URL of its spoken preview."""
    runtime, base = runtime_of(request), _base(request)
    built_in = [
        {**info.to_dict(), "saved": False, "preview_url": preview_url(base, info.name)}
        for info in runtime.require_scheduler().engine.voices()
    ]
    return built_in + [saved_entry(voice, base) for voice in runtime.voices.all()]


def catalogue_entry(request: Request, voice_id: str) -> dict[str, Any]:
    """The catalogue's entry of ``voice_id`` (404 ``voice_not_found``): a vendor's voice lookup."""
    for entry in catalogue(request):
        if entry["id"] == voice_id:
            return entry
    raise NotFound(f"no voice {voice_id[:64]!r}", code="voice_not_found")


def saved_entry(voice: SavedVoice, base: str) -> dict[str, Any]:
    language = parse_language(voice.speaks)
    return {
        "id": voice.name,
        "language_name": language.name,
        "gender": voice.gender,
        **voice.to_dict(),
        "language": voice.speaks,
        "saved": True,
        "preview_url": preview_url(base, voice.name),
    }


def _base(request: Request) -> str:
    """The server's address as this request reached it: what the preview URLs start with."""
    return str(request.base_url).rstrip("/")


def preview_url(base: str, name: str) -> str:
    return f"{base}/v1/audio/voices/{quote(name, safe='')}/preview"


async def preview(request: Request) -> Response:
    """The voice reading its language's sample sentence (``?format=`` mp3, wav, opus or pcm)."""
    runtime = runtime_of(request)
    try:
        voice = request.path_params["voice"]
        fmt = request.query_params.get("format", "mp3")
        if fmt not in PREVIEW_FORMATS:
            raise InvalidInput(f"format is one of {', '.join(PREVIEW_FORMATS)}", code="invalid_format")
        language = runtime.settings(Options(voice=voice)).speaks.tag
        text = language_samples()[language]["sentences"][0]
        reply = await open_reply(runtime, request, SpeechRequest(text, Options(voice=voice, format=fmt), "preview"))
    except SpeakstreamError as exc:
        return error_response(exc, runtime)
    return await audio_response(reply, runtime, "preview", media_type=reply.fmt.mime_type)


async def _list(request: Request) -> dict[str, Any]:
    runtime, base = runtime_of(request), _base(request)
    return {"voices": [saved_entry(v, base) for v in runtime.voices.all()], "store": runtime.voices.state}


async def _create(request: Request) -> dict[str, Any]:
    runtime = runtime_of(request)
    voice = runtime.voices.create(checked_voice(runtime, await json_body(request, _BODY_LIMIT)))
    return saved_entry(voice, _base(request))


async def _get(request: Request) -> dict[str, Any]:
    found = runtime_of(request).voices.get(request.path_params["name"])
    return saved_entry(found, _base(request))


async def _update(request: Request) -> dict[str, Any]:
    runtime = runtime_of(request)
    changes = await json_body(request, _BODY_LIMIT)
    changed = runtime.voices.update(
        request.path_params["name"], changes, known_voices(runtime), check=lambda v: _dictionaries_known(runtime, v)
    )
    return saved_entry(changed, _base(request))


async def _delete(request: Request) -> None:
    runtime_of(request).voices.delete(request.path_params["name"])


def routes() -> list[BaseRoute]:
    return [
        json_route(BASE, _list, "GET"),
        json_route(BASE, _create, "POST", status=201),
        json_route(BASE + "/{name}", _get, "GET"),
        json_route(BASE + "/{name}", _update, "PATCH"),
        json_route(BASE + "/{name}", _delete, "DELETE"),
        Route("/v1/audio/voices/{voice}/preview", preview),
    ]
