"""ElevenLabs' pronunciation-dictionary API, ``/v1/pronunciation-dictionaries``, on our store.

What the official ``elevenlabs`` SDK calls: ``add-from-rules``, ``add-from-file`` (a PLS file),
get, list, update (name, archive), ``add-rules``, ``remove-rules``, ``set-rules`` and a version's
PLS ``download``. Each change answers with the new version's id, which requests may name in
``pronunciation_dictionary_locators``; without one they use the latest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from speakstream.errors import InvalidInput, SpeakstreamError
from speakstream.server.dialects.elevenlabs.tts import elevenlabs_error
from speakstream.server.dictionaries import Dictionary, DictionaryStore, checked, rule_json, rule_of
from speakstream.server.http import json_body, json_route, runtime_of
from speakstream.text import pls
from speakstream.text.lexicon import Rule

BASE = "/v1/pronunciation-dictionaries"
_BODY_LIMIT = 2 << 20
_OWNER = "speakstream"


def store_of(request: Request) -> DictionaryStore:
    return runtime_of(request).dictionaries


def rules_of(data: dict[str, Any]) -> list[Rule]:
    rules = data.get("rules")
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        raise InvalidInput("rules must be a list of rule objects", code="invalid_rule")
    try:
        return checked([rule_of(r) for r in rules])
    except ValueError as exc:  # an Arpabet phone that is not one
        raise InvalidInput(str(exc), code="invalid_rule") from exc


def _created(made: Dictionary) -> dict[str, Any]:
    return {
        "id": made.id,
        "name": made.name,
        "created_by": _OWNER,
        "creation_time_unix": made.created_unix,
        "version_id": made.latest.id,
        "version_rules_num": len(made.latest.rules),
        "description": made.description,
        "permission_on_resource": "admin",
    }


def _metadata(found: Dictionary) -> dict[str, Any]:
    return {
        "id": found.id,
        "latest_version_id": found.latest.id,
        "latest_version_rules_num": len(found.latest.rules),
        "name": found.name,
        "permission_on_resource": "viewer" if found.read_only else "admin",
        "created_by": _OWNER,
        "creation_time_unix": found.created_unix,
        "archived_time_unix": found.archived_unix,
        "description": found.description,
    }


def _version(found: Dictionary) -> dict[str, Any]:
    return {"id": found.id, "version_id": found.latest.id, "version_rules_num": len(found.latest.rules)}


async def _from_rules(request: Request) -> dict[str, Any]:
    data = await json_body(request, _BODY_LIMIT)
    rules = rules_of(data)
    return _created(store_of(request).create(data.get("name"), rules, _description(data)))  # type: ignore[arg-type]


async def _from_file(request: Request) -> dict[str, Any]:
    async with request.form(max_files=1, max_fields=8, max_part_size=pls.MAX_BYTES) as form:
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise InvalidInput("send the PLS file as the form's 'file'", code="invalid_pls")
        rules = checked(pls.parse(await upload.read(pls.MAX_BYTES + 1)))
        name, description = form.get("name"), form.get("description")
    text = description if isinstance(description, str) and description else None
    return _created(store_of(request).create(name, rules, text))  # type: ignore[arg-type]


async def _get(request: Request) -> dict[str, Any]:
    found = store_of(request).get(request.path_params["dictionary_id"])
    return {**_metadata(found), "rules": [rule_json(r) for r in found.latest.rules]}


async def _list(request: Request) -> dict[str, Any]:
    query = request.query_params
    archived = query.get("include_archived", "").lower() == "true"
    found = store_of(request).all(archived=archived)
    key = (lambda d: d.name.lower()) if query.get("sort") == "name" else (lambda d: d.created_unix)
    found.sort(key=key, reverse=query.get("sort_direction", "descending").lower() != "ascending")
    size = min(max(int(query.get("page_size") or 30) if (query.get("page_size") or "30").isdigit() else 30, 1), 100)
    start = int(query["cursor"]) if query.get("cursor", "").isdigit() else 0
    page = found[start : start + size]
    more = start + size < len(found)
    return {
        "pronunciation_dictionaries": [_metadata(d) for d in page],
        "next_cursor": str(start + size) if more else None,
        "has_more": more,
    }


async def _update(request: Request) -> dict[str, Any]:
    data = await json_body(request, _BODY_LIMIT)
    archived = data.get("archived")
    if archived is not None and not isinstance(archived, bool):
        raise InvalidInput("archived is true or false", code="invalid_message")
    found = store_of(request).update(
        request.path_params["dictionary_id"], name=data.get("name"), archived=archived, description=_description(data)
    )
    return {**_metadata(found), "rules": [rule_json(r) for r in found.latest.rules]}


async def _add_rules(request: Request) -> dict[str, Any]:
    rules = rules_of(await json_body(request, _BODY_LIMIT))
    return _version(store_of(request).add_rules(request.path_params["dictionary_id"], rules))


async def _set_rules(request: Request) -> dict[str, Any]:
    rules = rules_of(await json_body(request, _BODY_LIMIT))
    return _version(store_of(request).set_rules(request.path_params["dictionary_id"], rules))


async def _remove_rules(request: Request) -> dict[str, Any]:
    strings = (await json_body(request, _BODY_LIMIT)).get("rule_strings")
    if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
        raise InvalidInput("rule_strings must be a list of strings", code="invalid_rule")
    return _version(store_of(request).remove_rules(request.path_params["dictionary_id"], strings))


async def download(request: Request) -> Response:
    try:
        found = store_of(request).get(request.path_params["dictionary_id"])
        version = found.version(request.path_params["version_id"])
    except SpeakstreamError as exc:
        return elevenlabs_error(exc, runtime_of(request))
    headers = {"Content-Disposition": f'attachment; filename="{found.id}.pls"'}
    return Response(pls.dump(version.rules), media_type="application/pls+xml", headers=headers)


def _description(data: dict[str, Any]) -> str | None:
    value = data.get("description")
    if value is not None and (not isinstance(value, str) or len(value) > 2000):
        raise InvalidInput("description is a string of at most 2,000 characters", code="invalid_message")
    return value or None


def _route(path: str, work: Callable[[Request], Awaitable[Any]], method: str) -> Route:
    return json_route(path, work, method, errors=elevenlabs_error)


def routes() -> list[BaseRoute]:
    one = BASE + "/{dictionary_id}"
    return [
        _route(f"{BASE}/add-from-rules", _from_rules, "POST"),
        _route(f"{BASE}/add-from-file", _from_file, "POST"),
        _route(BASE, _list, "GET"),
        _route(BASE + "/", _list, "GET"),
        _route(one, _get, "GET"),
        _route(one, _update, "PATCH"),
        _route(f"{one}/add-rules", _add_rules, "POST"),
        _route(f"{one}/set-rules", _set_rules, "POST"),
        _route(f"{one}/remove-rules", _remove_rules, "POST"),
        Route(one + "/{version_id}/download", download, methods=["GET"]),
    ]
