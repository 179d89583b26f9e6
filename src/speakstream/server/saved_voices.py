"""Saved voices: a name for a blend of Kokoro voices with its own speed, language and
pronunciation dictionaries, kept on disk like the dictionaries.

``Runtime.settings`` resolves a saved name, so it works wherever a voice is accepted: every
route, every dialect, the CLI and the agent. Each voice is one JSON file named after it, written
atomically; voices in ``voices_dir`` (JSON files managed by a deployment) are loaded at startup
and are read-only through the API.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from speakstream.engine.base import check_speed
from speakstream.engine.phonemes.languages import parse_language
from speakstream.engine.voices import KOKORO_VOICES, VOICE_ALIASES, blend_spec, parse_blend, voice_info, with_language
from speakstream.errors import Conflict, InvalidInput, NotFound, OverLimit, StoreUnavailable
from speakstream.protocol import Locator, Options, locators
from speakstream.storage import unwritable, write_json

log = logging.getLogger("speakstream.voices")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A saved voice's name: safe in a URL path and as a file name, and never read as a blend."""
MAX_DESCRIPTION = 500
FIELDS = ("name", "blend", "speed", "language", "pronunciation_dictionaries", "description")


@dataclass(frozen=True, slots=True)
class SavedVoice:
    name: str
    blend: str
    """The Kokoro voices and weights, normalised: ``"af_heart:0.6,af_bella:0.4"``."""
    speed: float | None = None
    language: str | None = None
    """The language it reads by default (a BCP-47 tag); None: its heaviest voice's own."""
    dictionaries: tuple[Locator, ...] = ()
    description: str | None = None
    created_unix: int = 0
    read_only: bool = False

    @property
    def options(self) -> Options:
        """What it sets under a request's own options."""
        return Options(voice=self.blend, speed=self.speed, language=self.language)

    @property
    def spec(self) -> str:
        """What the engine reads: its blend, in its language when it has one (``"af_heart@es"``)."""
        return with_language(self.blend, self.language) if self.language else self.blend

    @property
    def parts(self) -> list[tuple[str, float]]:
        """Its voices and weights, the heaviest first (``blend`` was checked when it was saved)."""
        pairs = (part.partition(":") for part in self.blend.split(","))
        return [(name, float(weight or 1.0)) for name, _, weight in pairs]

    @property
    def speaks(self) -> str:
        """The language it reads: its own, else its heaviest voice's."""
        return self.language or voice_info(self.parts[0][0]).language

    @property
    def gender(self) -> str:
        return voice_info(self.parts[0][0]).gender

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "blend": self.blend,
            "speed": self.speed,
            "language": self.language,
            "pronunciation_dictionaries": [_locator_json(loc) for loc in self.dictionaries],
            "description": self.description,
            "created_unix": self.created_unix,
            "read_only": self.read_only,
        }


def saved_voice(data: Mapping[str, Any], known: Collection[str] = KOKORO_VOICES) -> SavedVoice:
    """A voice from its JSON form (``FIELDS``), each field checked: ``known`` are the Kokoro voices a
    blend may mix. The checks that need the server's state (a name taken, dictionaries that exist)
    are the store's and the route's."""
    if not isinstance(data, Mapping):
        raise InvalidInput("a saved voice is a JSON object", code="invalid_voice")
    extra = sorted(set(data) - set(FIELDS) - {"created_unix", "read_only"})
    if extra:
        raise InvalidInput(f"a saved voice has no field {extra[0][:40]!r}; its fields: {', '.join(FIELDS)}")
    name = check_name(data.get("name"), known)
    blend = data.get("blend")
    if not isinstance(blend, str):
        raise InvalidInput("blend is a string: a voice, or voices with weights (af_heart:0.6,af_bella:0.4)")
    speed = None if data.get("speed") is None else check_speed(data.get("speed"))
    language = data.get("language")
    if language is not None:
        if not isinstance(language, str):
            raise InvalidInput("language is a string such as en-us or es", code="unsupported_language")
        language = parse_language(language).tag
    description = data.get("description")
    if description is not None and (not isinstance(description, str) or len(description) > MAX_DESCRIPTION):
        raise InvalidInput(f"description is a string of at most {MAX_DESCRIPTION} characters")
    dictionaries = locators(data.get("pronunciation_dictionaries"))
    created = data.get("created_unix")
    return SavedVoice(
        name,
        blend_spec(parse_blend(blend, known)),
        speed,
        language,
        dictionaries,
        description,
        created if isinstance(created, int) else int(time.time()),
    )


def check_name(name: object, known: Collection[str] = KOKORO_VOICES) -> str:
    """``name`` if it can name a saved voice: the pattern ``NAME``, and not a built-in voice's."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise InvalidInput(
            "a saved voice's name is 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit",
            code="invalid_name",
        )
    if name in known or name in VOICE_ALIASES:
        raise Conflict(f"{name!r} is a built-in voice's name; choose another", code="voice_name_taken")
    return name


@dataclass(slots=True)
class VoiceStore:
    directory: Path | None = None
    """Where voices saved through the API are kept (None: in memory only)."""
    max_voices: int = 200
    read_only: str | None = None
    """Why changes are refused (``directory`` cannot be written), or None."""
    _items: dict[str, SavedVoice] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, directory: Path | None, files: Path | None = None, *, max_voices: int = 200) -> VoiceStore:
        """The store of ``directory`` (created if missing; read-only when it cannot be written),
        with the read-only voices of ``files``; a file that is not a voice stops the server, naming it."""
        store = cls(directory, max_voices, unwritable(directory) if directory else None)
        if store.read_only is not None:
            log.warning("saved voices are read-only: %s", store.read_only)
        if directory is not None and directory.is_dir():
            for path in sorted(directory.glob("*.json")):
                store._items[path.stem] = _loaded(path)
        if files is not None:
            for path in sorted(files.glob("*.json")):
                store._items[path.stem] = replace(_loaded(path, name=path.stem), read_only=True)
        return store

    def find(self, name: str | None) -> SavedVoice | None:
        return self._items.get(name) if name else None

    def get(self, name: str) -> SavedVoice:
        found = self._items.get(name)
        if found is None:
            raise NotFound(f"no saved voice {name[:64]!r}; list them with GET /v1/saved-voices", code="unknown_voice")
        return found

    def all(self) -> list[SavedVoice]:
        return sorted(self._items.values(), key=lambda v: v.name)

    def create(self, voice: SavedVoice) -> SavedVoice:
        with self._lock:
            self._check_writable()
            if voice.name in self._items:
                raise Conflict(f"a saved voice is named {voice.name!r}; PATCH or DELETE it", code="voice_exists")
            if sum(1 for v in self._items.values() if not v.read_only) >= self.max_voices:
                raise OverLimit(f"the server keeps at most {self.max_voices} saved voices", code="too_many_voices")
            self._put(voice)
        return voice

    def update(
        self,
        name: str,
        changes: Mapping[str, Any],
        known: Collection[str] = KOKORO_VOICES,
        check: Callable[[SavedVoice], None] | None = None,
    ) -> SavedVoice:
        """``name`` with ``changes`` (fields of ``FIELDS``; a new ``name`` renames it), checked whole
        (and by ``check``) before anything is written."""
        with self._lock:
            found = self._writable(name)
            changed = saved_voice({**_fields(found), **changes}, known)
            if check is not None:
                check(changed)
            if changed.name != name and changed.name in self._items:
                raise Conflict(f"a saved voice is named {changed.name!r}", code="voice_exists")
            if changed != found:
                self._put(changed)
                if changed.name != name:
                    self._remove(name)
        return changed

    def delete(self, name: str) -> None:
        with self._lock:
            self._writable(name)
            self._remove(name)

    @property
    def state(self) -> str:
        """``writable``, ``read-only`` (its directory cannot be written) or ``memory`` (none)."""
        if self.directory is None:
            return "memory"
        return "writable" if self.read_only is None else "read-only"

    def _writable(self, name: str) -> SavedVoice:
        found = self.get(name)
        self._check_writable()
        if found.read_only:
            raise InvalidInput(
                f"saved voice {name} is loaded from the server's voice files; change the file", code="read_only_voice"
            )
        return found

    def _check_writable(self) -> None:
        if self.read_only is not None:
            raise StoreUnavailable(
                "saved voices cannot be changed: the server's data directory is not writable "
                "(its operator mounts a writable volume at SPEAKSTREAM_DATA_DIR; the server log says why)"
            )

    @contextmanager
    def _saving(self) -> Iterator[None]:
        """A write to the directory; its failure refuses the change, with nothing changed in memory."""
        try:
            yield
        except OSError as exc:
            log.error("cannot write the voice store: %s", exc)
            raise StoreUnavailable(
                "the saved voice could not be written (the server's data directory refused it; the log says why)"
            ) from exc

    def _put(self, voice: SavedVoice) -> None:
        if self.directory is not None:
            with self._saving():
                write_json(self.directory / f"{voice.name}.json", voice.to_dict())
        self._items[voice.name] = voice

    def _remove(self, name: str) -> None:
        if self.directory is not None:
            with self._saving():
                (self.directory / f"{name}.json").unlink(missing_ok=True)
        del self._items[name]


def _fields(voice: SavedVoice) -> dict[str, Any]:
    data = voice.to_dict()
    return {k: data[k] for k in (*FIELDS, "created_unix")}


def _locator_json(locator: Locator) -> dict[str, str]:
    return {"id": locator.dictionary_id, **({"version_id": locator.version_id} if locator.version_id else {})}


def _loaded(path: Path, *, name: str | None = None) -> SavedVoice:
    """A voice from its file (``name``: the file's stem where the file names none)."""
    try:
        data = json.loads(path.read_text("utf-8"))
        if name is not None and isinstance(data, dict):
            data = {"name": name, **data}
        return saved_voice({k: v for k, v in data.items() if k != "read_only"})
    except (InvalidInput, ValueError, AttributeError) as exc:
        message = exc.message if isinstance(exc, InvalidInput) else str(exc)
        raise InvalidInput(f"voice file {path} is not a saved voice: {message}", code="invalid_config") from exc
