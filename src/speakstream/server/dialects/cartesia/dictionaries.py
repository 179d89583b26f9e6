"""Cartesia's pronunciation-dictionary API, ``/pronunciation-dicts/``, on the same store as
ElevenLabs' (an id from either API works in both dialects' requests).

What the official ``cartesia`` SDK calls: create, retrieve, update (name, items), list (pages by
``starting_after`` / ``ending_before`` and ``limit``) and delete. An item maps ``text`` to an
``alias``; an alias written ``<<p|h|o|n|e|m|e|s>>`` (Cartesia's phoneme form) or ``/phonemes/``
is a phoneme rule in IPA. Items match any capitalisation unless ``case_sensitive`` is true, as
Cartesia's do.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute

from speakstream.errors import InvalidInput
from speakstream.server.dictionaries import Dictionary, checked
from speakstream.server.http import json_body, json_route, runtime_of
from speakstream.text.lexicon import Rule

BASE = "/pronunciation-dicts"
_BODY_LIMIT = 2 << 20


def rule_of_item(item: object) -> Rule:
    if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not isinstance(item.get("alias"), str):
        raise InvalidInput("an item is {text, alias} with strings", code="invalid_rule")
    text, alias, case = item["text"], item["alias"].strip(), item.get("case_sensitive") is True
    try:
        if alias.startswith("<<") and alias.endswith(">>"):
            return Rule(string=text, phoneme=alias[2:-2].replace("|", ""), case_sensitive=case)
        if len(alias) > 2 and alias.startswith("/") and alias.endswith("/"):
            return Rule(string=text, phoneme=alias[1:-1], case_sensitive=case)
        return Rule(string=text, alias=alias, case_sensitive=case)
    except ValueError as exc:
        raise InvalidInput(f"item for {text[:40]!r}: {exc}", code="invalid_rule") from exc


def item_of(rule: Rule) -> dict[str, Any]:
    alias = rule.alias if rule.alias is not None else "<<" + "|".join(rule.phoneme or "") + ">>"
    return {"text": rule.string, "alias": alias, "case_sensitive": rule.case_sensitive}


def _items(data: dict[str, Any]) -> list[Rule] | None:
    items = data.get("items")
    if items is None:
        return None
    if not isinstance(items, list):
        raise InvalidInput("items must be a list", code="invalid_rule")
    return checked([rule_of_item(item) for item in items])


def _dict(found: Dictionary) -> dict[str, Any]:
    return {
        "id": found.id,
        "name": found.name,
        "owner_id": "speakstream",
        "pinned": False,
        "items": [item_of(rule) for rule in found.latest.rules],
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(found.created_unix)),
    }


async def _create(request: Request) -> Any:
    data = await json_body(request, _BODY_LIMIT)
    return _dict(runtime_of(request).dictionaries.create(data.get("name"), _items(data) or []))  # type: ignore[arg-type]


async def _retrieve(request: Request) -> Any:
    return _dict(runtime_of(request).dictionaries.get(request.path_params["dictionary_id"]))


async def _update(request: Request) -> Any:
    data = await json_body(request, _BODY_LIMIT)
    store, dictionary_id = runtime_of(request).dictionaries, request.path_params["dictionary_id"]
    rules = _items(data)
    if rules is not None:
        store.set_rules(dictionary_id, rules)
    return _dict(store.update(dictionary_id, name=data.get("name"), description=data.get("description")))


async def _delete(request: Request) -> Any:
    runtime_of(request).dictionaries.delete(request.path_params["dictionary_id"])
    return None


async def _list(request: Request) -> Any:
    query = request.query_params
    found = sorted(runtime_of(request).dictionaries.all(), key=lambda d: d.created_unix)
    ids = [d.id for d in found]
    limit = min(max(int(query["limit"]) if query.get("limit", "").isdigit() else 20, 1), 100)
    if (after := query.get("starting_after")) in ids:
        found = found[ids.index(after) + 1 :]
    elif (before := query.get("ending_before")) in ids:
        found = found[: ids.index(before)][-limit:]
    page = found[:limit]
    return {"data": [_dict(d) for d in page], "has_more": len(found) > len(page)}


def routes() -> list[BaseRoute]:
    one = BASE + "/{dictionary_id}"
    return [
        json_route(f"{BASE}/", _create, "POST"),
        json_route(BASE, _create, "POST"),
        json_route(f"{BASE}/", _list, "GET"),
        json_route(BASE, _list, "GET"),
        json_route(one, _retrieve, "GET"),
        json_route(one, _update, "PATCH"),
        json_route(one, _delete, "DELETE"),
    ]
