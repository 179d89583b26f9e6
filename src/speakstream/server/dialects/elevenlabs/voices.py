"""ElevenLabs' voice API on our catalogue: ``GET /v1/voices`` (``voices.get_all``), ``GET /v2/voices``
(``voices.search``: text, type, gender and language filters, sorted, in pages), ``GET`` and
``DELETE /v1/voices/{voice_id}``; ``POST /v1/voices/add`` (cloning from recordings) answers 400
saying why. Built-in Kokoro voices are ``premade``, saved ones ``generated``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from speakstream.errors import InvalidInput
from speakstream.server.dialects.elevenlabs.tts import elevenlabs_error
from speakstream.server.http import json_route, runtime_of
from speakstream.server.voice_routes import catalogue, catalogue_entry

MAX_PAGE = 100
CLONING = (
    "voices cloned from recordings are not supported: Kokoro has no style encoder. Save a blend of the "
    "built-in voices instead (POST /v1/saved-voices)"
)
_SAVED_TYPES = ("personal", "workspace", "non-default", "saved")


def voice_json(entry: dict[str, Any]) -> dict[str, Any]:
    """A catalogue entry as ElevenLabs' ``Voice``."""
    saved = entry["saved"]
    labels = {"language": entry["language"], "gender": entry["gender"], "accent": entry["language_name"]}
    if saved:
        labels["blend"] = entry["blend"]
    return {
        "voice_id": entry["id"],
        "name": entry["name"],
        "category": "generated" if saved else "premade",
        "labels": labels,
        "description": entry.get("description") or ("a saved blend" if saved else "a Kokoro-82M voice"),
        "preview_url": entry["preview_url"],
        "settings": {"speed": entry["speed"]} if saved and entry.get("speed") else None,
        "verified_languages": [{"language": entry["language"].split("-")[0], "model_id": "kokoro"}],
        "is_owner": saved,
        "is_mixed": saved and "," in entry["blend"],
        "permission_on_resource": "admin" if saved and not entry["read_only"] else "viewer",
        "created_at_unix": entry.get("created_unix"),
        "samples": None,
    }


def matching(entries: list[dict[str, Any]], query: Any) -> list[dict[str, Any]]:
    """The entries ``voices.search``'s filters keep, in its order."""
    text = (query.get("search") or "").strip().lower()
    kind, category = query.get("voice_type"), query.get("category")
    ids = set(query.getlist("voice_ids"))
    kept = []
    for entry in entries:
        fields = (entry["id"], entry["name"], entry.get("description") or "", entry["language_name"])
        if text and not any(text in f.lower() for f in fields):
            continue
        if (kind == "default" and entry["saved"]) or (kind in _SAVED_TYPES and not entry["saved"]):
            continue
        if category and category != ("generated" if entry["saved"] else "premade"):
            continue
        if query.get("gender") and query["gender"].lower() != entry["gender"]:
            continue
        if query.get("language") and not entry["language"].startswith(query["language"].lower()):
            continue
        if ids and entry["id"] not in ids:
            continue
        kept.append(entry)
    if query.get("sort") == "name":
        kept.sort(key=lambda e: e["name"].lower(), reverse=query.get("sort_direction") == "desc")
    elif query.get("sort") == "created_at_unix":
        kept.sort(key=lambda e: e.get("created_unix") or 0, reverse=query.get("sort_direction") != "asc")
    return kept


async def _all(request: Request) -> dict[str, Any]:
    return {"voices": [voice_json(e) for e in catalogue(request)]}


async def _search(request: Request) -> dict[str, Any]:
    query = request.query_params
    found = matching(catalogue(request), query)
    size = _number(query.get("page_size"), 10, "page_size")
    start = _number(query.get("next_page_token"), 0, "next_page_token")
    size = min(max(size, 1), MAX_PAGE)
    page = found[start : start + size]
    more = start + size < len(found)
    return {
        "voices": [voice_json(e) for e in page],
        "has_more": more,
        "total_count": len(found),
        "next_page_token": str(start + size) if more else None,
    }


async def _get(request: Request) -> dict[str, Any]:
    return voice_json(catalogue_entry(request, request.path_params["voice_id"]))


async def _delete(request: Request) -> dict[str, Any]:
    voice_id = request.path_params["voice_id"]
    runtime = runtime_of(request)
    if runtime.voices.find(voice_id) is None and voice_id in {e["id"] for e in catalogue(request)}:
        raise InvalidInput(f"{voice_id} is a built-in voice; only saved voices can be deleted", code="read_only_voice")
    runtime.voices.delete(voice_id)
    return {"status": "ok"}


async def _clone(request: Request) -> Response:
    error = InvalidInput(CLONING, code="voice_cloning_unsupported")
    return elevenlabs_error(error, runtime_of(request))


def _number(value: str | None, default: int, name: str) -> int:
    if value is None or value == "":
        return default
    if not value.isdigit():
        raise InvalidInput(f"{name} is a whole number", code="invalid_parameter")
    return int(value)


def routes() -> list[BaseRoute]:
    return [
        json_route("/v1/voices", _all, "GET", elevenlabs_error),
        json_route("/v2/voices", _search, "GET", elevenlabs_error),
        Route("/v1/voices/add", _clone, methods=["POST"]),
        json_route("/v1/voices/{voice_id}", _get, "GET", elevenlabs_error),
        json_route("/v1/voices/{voice_id}", _delete, "DELETE", elevenlabs_error),
    ]
