"""Pronunciation dictionaries: created and versioned through the API, kept on disk, bounded.

Every change makes a new version (rules are never edited in place), so a request that names a
version hears what it heard before. Each dictionary is one JSON file, written atomically, so the
store survives a restart; dictionaries in ``lexicons_dir`` (PLS or JSON rule files, managed as
files by a deployment) are loaded at startup and are read-only through the API.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from speakstream.engine.phonemes.inline import to_kokoro
from speakstream.engine.phonemes.languages import BY_LETTER
from speakstream.engine.phonemes.phonemizer import vocab
from speakstream.errors import InvalidInput, NotFound, OverLimit, StoreUnavailable
from speakstream.protocol import Locator
from speakstream.storage import unwritable, write_json
from speakstream.text import pls
from speakstream.text.lexicon import Lexicon, Rule, arpabet_to_ipa, merged

log = logging.getLogger("speakstream.dictionaries")
MAX_VERSIONS = 32
"""Versions kept per dictionary (the oldest go first); a request names one of these or the latest."""
MAX_COMBINATIONS = 256
"""Lexicons of several dictionaries together kept ready (cleared when full)."""


@dataclass(frozen=True, slots=True)
class Version:
    id: str
    rules: tuple[Rule, ...]
    created_unix: int


@dataclass(frozen=True, slots=True)
class Dictionary:
    id: str
    name: str
    description: str | None
    created_unix: int
    versions: tuple[Version, ...]
    archived_unix: int | None = None
    read_only: bool = False

    @property
    def latest(self) -> Version:
        return self.versions[-1]

    def version(self, version_id: str | None) -> Version:
        if not version_id:
            return self.latest
        for version in self.versions:
            if version.id == version_id:
                return version
        raise NotFound(f"dictionary {self.id} has no version {version_id[:40]!r}", code="unknown_dictionary_version")


@dataclass(slots=True)
class DictionaryStore:
    directory: Path | None = None
    """Where dictionaries made through the API are kept (None: in memory only)."""
    max_dictionaries: int = 500
    max_rules: int = 5_000
    read_only: str | None = None
    """Why changes are refused (``directory`` cannot be written), or None."""
    _items: dict[str, Dictionary] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _lexicons: dict[tuple[str, str], Lexicon] = field(default_factory=dict)
    _merged: dict[tuple[tuple[str, str], ...], Lexicon | None] = field(default_factory=dict)

    @classmethod
    def open(
        cls, directory: Path | None, files: Path | None = None, *, max_dictionaries: int = 500, max_rules: int = 5_000
    ) -> DictionaryStore:
        """The store of ``directory`` (created if missing; read-only when it cannot be written),
        with the read-only ones in ``files``."""
        store = cls(directory, max_dictionaries, max_rules, unwritable(directory) if directory else None)
        if store.read_only is not None:
            log.warning("pronunciation dictionaries are read-only: %s", store.read_only)
        if directory is not None and directory.is_dir():
            for path in sorted(directory.glob("*.json")):
                store._items[path.stem] = _loaded(path)
        if files is not None:
            for path in sorted(files.iterdir()):
                if path.suffix.lower() in (".pls", ".xml", ".json"):
                    store._items[path.stem] = _from_file(path)
        return store

    @property
    def state(self) -> str:
        """``writable``, ``read-only`` (its directory cannot be written) or ``memory`` (none)."""
        if self.directory is None:
            return "memory"
        return "writable" if self.read_only is None else "read-only"

    def create(self, name: str, rules: Sequence[Rule], description: str | None = None) -> Dictionary:
        _check_name(name)
        self._check_writable()
        with self._lock:
            if sum(1 for d in self._items.values() if not d.read_only) >= self.max_dictionaries:
                raise OverLimit(
                    f"the server keeps at most {self.max_dictionaries} pronunciation dictionaries",
                    code="too_many_dictionaries",
                )
            self._check_size(rules)
            now = int(time.time())
            made = Dictionary(_new_id(), name, description, now, (Version(_new_id(), tuple(rules), now),))
            self._put(made)
        return made

    def get(self, dictionary_id: str) -> Dictionary:
        found = self._items.get(dictionary_id)
        if found is None:
            raise NotFound(f"no pronunciation dictionary {dictionary_id[:40]!r}", code="unknown_dictionary")
        return found

    def all(self, *, archived: bool = False) -> list[Dictionary]:
        return [d for d in self._items.values() if archived or d.archived_unix is None]

    def add_rules(self, dictionary_id: str, rules: Sequence[Rule]) -> Dictionary:
        def added(old: tuple[Rule, ...]) -> list[Rule]:
            replaced = {r.string for r in rules}  # a rule for a string already there replaces it
            return [r for r in old if r.string not in replaced] + list(rules)

        return self._change(dictionary_id, added)

    def remove_rules(self, dictionary_id: str, strings: Iterable[str]) -> Dictionary:
        gone = set(strings)
        return self._change(dictionary_id, lambda old: [r for r in old if r.string not in gone])

    def set_rules(self, dictionary_id: str, rules: Sequence[Rule]) -> Dictionary:
        return self._change(dictionary_id, lambda old: list(rules))

    def update(
        self,
        dictionary_id: str,
        *,
        name: str | None = None,
        archived: bool | None = None,
        description: str | None = None,
    ) -> Dictionary:
        with self._lock:
            found = self._writable(dictionary_id)
            if name is not None:
                _check_name(name)
            archived_unix = found.archived_unix if archived is None else (int(time.time()) if archived else None)
            changed = replace(
                found,
                name=found.name if name is None else name,
                description=found.description if description is None else description,
                archived_unix=archived_unix,
            )
            if changed != found:  # nothing asked for: no rewrite of its file
                self._put(changed)
        return changed

    def delete(self, dictionary_id: str) -> None:
        with self._lock:
            self._writable(dictionary_id)
            if self.directory is not None:
                with self._saving():
                    (self.directory / f"{dictionary_id}.json").unlink(missing_ok=True)
            del self._items[dictionary_id]
            self._lexicons = {k: v for k, v in self._lexicons.items() if k[0] != dictionary_id}
            self._merged = {k: v for k, v in self._merged.items() if all(key[0] != dictionary_id for key in k)}

    def lexicon(self, locators: Sequence[Locator]) -> Lexicon | None:
        """The rules of ``locators``, the earlier dictionaries' first (``NotFound`` naming one
        the server does not have); None when they have no rules."""
        keys = []
        for locator in locators:
            version = self.get(locator.dictionary_id).version(locator.version_id)
            keys.append((locator.dictionary_id, version.id))
            if keys[-1] not in self._lexicons:
                self._lexicons[keys[-1]] = Lexicon(version.rules)
        combined = tuple(keys)
        if combined not in self._merged:  # built once per combination (building is the costly part)
            if len(self._merged) >= MAX_COMBINATIONS:
                self._merged.clear()
            self._merged[combined] = merged([self._lexicons[key] for key in keys])
        return self._merged[combined]

    def _change(self, dictionary_id: str, rules_of: Any) -> Dictionary:
        with self._lock:
            found = self._writable(dictionary_id)
            rules = tuple(rules_of(found.latest.rules))
            self._check_size(rules)
            version = Version(_new_id(), rules, int(time.time()))
            changed = replace(found, versions=(*found.versions, version)[-MAX_VERSIONS:])
            self._put(changed)
        return changed

    def _writable(self, dictionary_id: str) -> Dictionary:
        found = self.get(dictionary_id)
        self._check_writable()
        if found.read_only:
            raise InvalidInput(
                f"dictionary {dictionary_id} is loaded from the server's lexicon files; change the file",
                code="read_only_dictionary",
            )
        return found

    def _check_size(self, rules: Sequence[Rule]) -> None:
        if len(rules) > self.max_rules:
            raise OverLimit(f"a dictionary holds at most {self.max_rules} rules", code="too_many_rules")

    def _check_writable(self) -> None:
        if self.read_only is not None:
            raise StoreUnavailable(
                "pronunciation dictionaries cannot be changed: the server's data directory is not writable "
                "(its operator mounts a writable volume at SPEAKSTREAM_DATA_DIR; the server log says why)"
            )

    @contextmanager
    def _saving(self) -> Iterator[None]:
        """A write to the directory; its failure (a full disk, a volume gone read-only) refuses the
        change, with nothing changed in memory."""
        self._check_writable()
        try:
            yield
        except OSError as exc:
            log.error("cannot write the dictionary store: %s", exc)
            raise StoreUnavailable(
                "the pronunciation dictionary could not be saved (the server's data directory refused the "
                "write; the server log says why)"
            ) from exc

    def _put(self, dictionary: Dictionary) -> None:
        if self.directory is not None:
            with self._saving():
                write_json(self.directory / f"{dictionary.id}.json", _saved(dictionary))
        self._items[dictionary.id] = dictionary


def checked(rules: list[Rule]) -> list[Rule]:
    """``rules``, each phoneme rule's phonemes checked against the model's symbols
    (``invalid_phonemes`` names one it does not have), so no request fails on them later."""
    english = BY_LETTER["a"]
    for rule in rules:
        if rule.phoneme is not None:
            ipa = arpabet_to_ipa(rule.phoneme) if rule.alphabet == "cmu-arpabet" else rule.phoneme
            to_kokoro(ipa, english, vocab())
    return rules


def rule_of(data: Mapping[str, Any]) -> Rule:
    """A rule from ElevenLabs' JSON form (``type``, ``string_to_replace``, ``alias`` or
    ``phoneme`` + ``alphabet``, ``case_sensitive``, ``word_boundaries``)."""
    kind = data.get("type")
    if kind not in ("alias", "phoneme"):
        raise InvalidInput("a rule's type is alias or phoneme", code="invalid_rule")
    string = data.get("string_to_replace")
    spoken = data.get(kind)
    if not isinstance(string, str) or not isinstance(spoken, str):
        raise InvalidInput(f"a {kind} rule needs string_to_replace and {kind} as strings", code="invalid_rule")
    case, bounded = (True if data.get(k) is None else data[k] for k in ("case_sensitive", "word_boundaries"))
    if not isinstance(case, bool) or not isinstance(bounded, bool):
        raise InvalidInput("case_sensitive and word_boundaries are true or false", code="invalid_rule")
    alphabet = str(data.get("alphabet") or "ipa")
    try:
        if kind == "alias":
            return Rule(string=string, alias=spoken, case_sensitive=case, word_boundaries=bounded)
        return Rule(string=string, phoneme=spoken, alphabet=alphabet, case_sensitive=case, word_boundaries=bounded)
    except ValueError as exc:
        raise InvalidInput(f"rule for {string[:40]!r}: {exc}", code="invalid_rule") from exc


def rule_json(rule: Rule) -> dict[str, Any]:
    spoken = {"alias": rule.alias} if rule.alias is not None else {"phoneme": rule.phoneme, "alphabet": rule.alphabet}
    flags = {"case_sensitive": rule.case_sensitive, "word_boundaries": rule.word_boundaries}
    return {"type": rule.kind, "string_to_replace": rule.string, **spoken, **flags}


def _saved(dictionary: Dictionary) -> dict[str, Any]:
    return {
        "id": dictionary.id,
        "name": dictionary.name,
        "description": dictionary.description,
        "created_unix": dictionary.created_unix,
        "archived_unix": dictionary.archived_unix,
        "versions": [
            {"id": v.id, "created_unix": v.created_unix, "rules": [rule_json(r) for r in v.rules]}
            for v in dictionary.versions
        ],
    }


def _loaded(path: Path) -> Dictionary:
    """A dictionary the store saved; a file that is not one stops the server, naming it."""
    try:
        data = json.loads(path.read_text("utf-8"))
        versions = tuple(
            Version(v["id"], tuple(rule_of(r) for r in v["rules"]), v["created_unix"]) for v in data["versions"]
        )
        return Dictionary(
            data["id"], data["name"], data.get("description"), data["created_unix"], versions, data.get("archived_unix")
        )
    except (InvalidInput, ValueError, TypeError, KeyError) as exc:
        raise InvalidInput(
            f"dictionary file {path} is not one this server saved: {exc}", code="invalid_config"
        ) from exc


def _from_file(path: Path) -> Dictionary:
    """A read-only dictionary from a PLS file or a JSON list of rules; its id is the file's stem."""
    try:
        data = path.read_bytes()
        if path.suffix.lower() == ".json":
            rules = tuple(checked([rule_of(r) for r in json.loads(data)]))
        else:
            rules = tuple(checked(pls.parse(data)))
    except (InvalidInput, ValueError, TypeError, AttributeError) as exc:
        raise InvalidInput(f"lexicon file {path}: {exc}", code="invalid_lexicon_file") from exc
    made = int(path.stat().st_mtime)
    version = f"{path.stem}-{made}"
    versions = (Version(version, rules, made),)
    return Dictionary(path.stem, path.stem, f"loaded from {path.name}", made, versions, None, read_only=True)


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise InvalidInput("a dictionary's name is 1 to 200 characters", code="invalid_name")


def _new_id() -> str:
    return secrets.token_hex(10)
