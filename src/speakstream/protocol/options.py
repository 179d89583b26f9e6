"""The options of a request, as every route and message carries them, and their checks."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from speakstream.errors import ProtocolError

CHUNKING = ("auto", "sentences", "none")
MAX_LANGUAGE = 24
MAX_DICTIONARIES = 8
TEXT_TYPES = ("text", "ssml")


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """How to speak a request: the one options model of every route (the WebSocket's messages,
    ``/invocations``, the OpenAI route, ``/agent``). None means the session's or server's default."""

    voice: str | None = None
    speed: float | None = None
    format: str | None = None
    sample_rate: int | None = None
    chunking: str | None = None
    """``auto`` (clause first, then sentences), ``sentences``, or ``none`` (the whole text at once)."""
    language: str | None = None
    """The language to read the text in (``es``, ``pt-br``, ``ja``...); default: the voice's own."""
    dictionaries: tuple[Locator, ...] = ()
    """Pronunciation dictionaries to apply, the earlier first: ``"pronunciation_dictionaries"``,
    a list of ids or of ``{"id", "version_id"?}`` (ElevenLabs' ``pronunciation_dictionary_locators``,
    ``{"pronunciation_dictionary_id", "version_id"?}``, is read too)."""
    text_type: str | None = None
    """``ssml`` (the text is SSML; one without a root is read as inside ``<speak>``) or ``text``
    (never SSML); default: SSML when the text is a ``<speak>`` document."""
    normalize: bool | None = None
    """False: the client normalised the text (numbers, dates, addresses), so the engine reads it
    as it is; default: the engine normalises it."""

    @classmethod
    def parse(cls, data: Mapping[str, Any], *, strings: bool = False) -> Options:
        """Options from a JSON object; ``strings``: values may be text (URL query parameters).
        Every type problem is a ``ProtocolError`` with the field's code."""
        if strings:
            data = {**data, **{k: from_text(data.get(k), k) for k in ("speed", "sample_rate", "normalize")}}
        return parse_options(data)

    def over(self, defaults: Options) -> Options:
        """These options, with ``defaults`` where a field is unset (a false flag is set)."""
        return Options(**{f.name: _over(getattr(self, f.name), getattr(defaults, f.name)) for f in fields(self)})


def _over(value: Any, default: Any) -> Any:
    return value if isinstance(value, bool) else value or default


@dataclass(frozen=True, slots=True)
class Locator:
    """A pronunciation dictionary and one of its versions (None: the latest)."""

    dictionary_id: str
    version_id: str | None = None


def locators(value: Any) -> tuple[Locator, ...]:
    """Dictionary locators from JSON: ids, ``{"id", "version_id"?}`` or ElevenLabs'
    ``{"pronunciation_dictionary_id", "version_id"?}``; a ``ProtocolError`` says what is wrong."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_DICTIONARIES:
        raise ProtocolError(
            f"pronunciation dictionaries are a list of at most {MAX_DICTIONARIES}", code="invalid_dictionaries"
        )
    found = []
    for item in value:
        if isinstance(item, dict):
            item_id, version = item.get("pronunciation_dictionary_id", item.get("id")), item.get("version_id")
        else:
            item_id, version = item, None
        if not isinstance(item_id, str) or not 0 < len(item_id) <= 128 or not isinstance(version, str | None):
            raise ProtocolError("a dictionary locator is an id or {id, version_id}", code="invalid_dictionaries")
        found.append(Locator(item_id, version or None))
    return tuple(found)


def parse_options(data: Mapping[str, Any]) -> Options:
    voice, speed, fmt, rate = (data.get(k) for k in ("voice", "speed", "format", "sample_rate"))
    if voice is not None and not isinstance(voice, str):
        raise ProtocolError("voice must be a string", code="unknown_voice")
    if speed is not None and (
        isinstance(speed, bool) or not isinstance(speed, int | float) or not math.isfinite(speed)
    ):
        raise ProtocolError("speed must be a number", code="invalid_speed")
    if fmt is not None and not isinstance(fmt, str):
        raise ProtocolError("format must be a string", code="invalid_format")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int)):
        raise ProtocolError("sample_rate must be an integer", code="invalid_sample_rate")
    chunking = data.get("chunking")
    if chunking is not None and chunking not in CHUNKING:
        raise ProtocolError(f"chunking must be one of {', '.join(CHUNKING)}", code="invalid_chunking")
    language = data.get("language")
    if language is not None and (not isinstance(language, str) or len(language) > MAX_LANGUAGE):
        raise ProtocolError(
            f"language must be a string of at most {MAX_LANGUAGE} characters", code="unsupported_language"
        )
    text_type = data.get("text_type")
    if text_type is not None and text_type not in TEXT_TYPES:
        raise ProtocolError(f"text_type must be one of {', '.join(TEXT_TYPES)}", code="invalid_text_type")
    normalize = data.get("normalize")
    if normalize is not None and not isinstance(normalize, bool):
        raise ProtocolError("normalize must be true or false", code="invalid_normalize")
    found = data.get("pronunciation_dictionaries", data.get("pronunciation_dictionary_locators"))
    return Options(
        voice=voice,
        speed=None if speed is None else float(speed),
        format=fmt,
        sample_rate=rate,
        chunking=chunking,
        language=language or None,
        dictionaries=locators(found),
        text_type=text_type,
        normalize=normalize,
    )


def from_text(value: Any, name: str) -> Any:
    if not isinstance(value, str):
        return value
    if name == "normalize":
        return {"true": True, "false": False}.get(value.lower(), value)
    try:
        return int(value) if name == "sample_rate" else float(value)
    except ValueError as exc:
        raise ProtocolError(f"{name} must be a number", code=f"invalid_{name}") from exc
