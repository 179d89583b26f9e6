"""Cartesia's voice API on our catalogue: ``GET /voices`` (``voices.list``: ``q``, ``gender``,
``is_owner``, pages by ``starting_after`` / ``ending_before`` and ``limit``), ``GET``, ``PATCH``
(name, description) and ``DELETE /voices/{id}``; ``POST /voices/mix`` (voices and weights) answers
the blend's id, which every request takes as a voice; cloning and localising answer 400 saying why."""

from __future__ import annotations

import datetime
from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute

from speakstream.engine.voices import blend_spec, parse_blend
from speakstream.errors import InvalidInput
from speakstream.server.dialects.elevenlabs.voices import CLONING
from speakstream.server.http import json_body, json_route, runtime_of
from speakstream.server.voice_routes import catalogue, catalogue_entry, known_voices

MAX_PAGE = 100
_GENDERS = {"female": "feminine", "male": "masculine"}


def voice_json(entry: dict[str, Any]) -> dict[str, Any]:
    """A catalogue entry as Cartesia's ``Voice``."""
    saved = entry["saved"]
    language, _, region = entry["language"].partition("-")
    created = datetime.datetime.fromtimestamp(entry.get("created_unix") or 0, datetime.UTC)
    return {
        "id": entry["id"],
        "name": entry["name"],
        "description": entry.get("description") or ("a saved blend: " + entry["blend"] if saved else "a Kokoro voice"),
        "access": "private" if saved else "public",
        "visibility": "owner" if saved else "all",
        "is_owner": saved,
        "created_at": created.isoformat(),
        "language": language,
        "locales": [{"locale": f"{language}-{region.upper()}" if region else language, "is_native": True}],
        "gender": _GENDERS.get(entry["gender"]),
        "tagline": "",
        "preview_file_url": entry["preview_url"],
    }


async def _list(request: Request) -> dict[str, Any]:
    query = request.query_params
    text, gender = (query.get("q") or "").lower(), query.get("gender")
    owner = query.get("is_owner")
    found = [
        voice_json(e)
        for e in catalogue(request)
        if (not text or text in e["id"].lower() or text in (e.get("description") or "").lower())
        and (not gender or _GENDERS.get(e["gender"]) == gender)
        and (owner is None or (owner.lower() == "true") == e["saved"])
    ]
    ids = [v["id"] for v in found]
    after, before = query.get("starting_after"), query.get("ending_before")
    limit = min(max(int(query["limit"]) if (query.get("limit") or "").isdigit() else 10, 1), MAX_PAGE)
    if after:
        page = found[_index(ids, after) + 1 :][:limit]
    elif before:
        page = found[: _index(ids, before)][-limit:]
    else:
        page = found[:limit]
    more = bool(page) and (ids.index(page[-1]["id"]) + 1 < len(ids) if not before else ids.index(page[0]["id"]) > 0)
    return {"data": page, "has_more": more}


def _index(ids: list[str], voice_id: str) -> int:
    if voice_id not in ids:
        raise InvalidInput(f"cursor {voice_id[:64]!r} is not a voice of this list", code="invalid_cursor")
    return ids.index(voice_id)


async def _get(request: Request) -> dict[str, Any]:
    return voice_json(catalogue_entry(request, request.path_params["id"]))


async def _update(request: Request) -> dict[str, Any]:
    runtime = runtime_of(request)
    data = await json_body(request, 64 << 10)
    changes = {k: data[k] for k in ("name", "description") if data.get(k) is not None}
    changed = runtime.voices.update(request.path_params["id"], changes, known_voices(runtime))
    return voice_json(catalogue_entry(request, changed.name))


async def _delete(request: Request) -> None:
    runtime_of(request).voices.delete(request.path_params["id"])


async def _mix(request: Request) -> dict[str, Any]:
    """``{"voices": [{"id", "weight"}]}`` -> ``{"id": <the blend>}``: a voice id every request takes."""
    voices = (await json_body(request, 64 << 10)).get("voices")
    if not isinstance(voices, list) or not all(isinstance(v, dict) and isinstance(v.get("id"), str) for v in voices):
        raise InvalidInput('voices is a list of {"id", "weight"}', code="invalid_voice")
    weights = [v.get("weight", 1) for v in voices]
    if not all(isinstance(w, int | float) and not isinstance(w, bool) and w >= 0 for w in weights):
        raise InvalidInput("a weight is a number, zero or more", code="invalid_blend")
    spec = ",".join(f"{v['id']}:{float(w):g}" for v, w in zip(voices, weights, strict=True))
    blend = blend_spec(parse_blend(spec, known_voices(runtime_of(request))))
    return {"id": blend, "blend": blend}


async def _unsupported(request: Request) -> None:
    raise InvalidInput(CLONING, code="voice_cloning_unsupported")


def routes() -> list[BaseRoute]:
    return [
        json_route("/voices", _list, "GET"),
        json_route("/voices/mix", _mix, "POST"),
        json_route("/voices/clone", _unsupported, "POST"),
        json_route("/voices/localize", _unsupported, "POST"),
        json_route("/voices/{id}", _get, "GET"),
        json_route("/voices/{id}", _update, "PATCH"),
        json_route("/voices/{id}", _delete, "DELETE"),
    ]
