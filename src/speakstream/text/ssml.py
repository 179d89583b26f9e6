"""SSML read as it arrives: the text to speak, and the pauses and reading changes between it.

A reply is SSML when its text is a ``<speak>`` document (or an ``<?xml`` one), or when the client
says so (``text_type: "ssml"``; a text without a root is then read as if inside ``<speak>``).
expat parses it incrementally, so a tag or an entity may be split across ``append`` fragments
anywhere, and the text between tags is spoken as soon as it arrives, not when its element ends.
"""

from __future__ import annotations

import re
import xml.parsers.expat
from dataclasses import dataclass, replace

from speakstream.errors import InvalidInput
from speakstream.text.lexicon import arpabet_to_ipa
from speakstream.text.say_as import say_as

MAX_BREAK_S = 10.0
STRENGTHS = {"none": 0.0, "x-weak": 0.1, "weak": 0.25, "medium": 0.4, "strong": 0.75, "x-strong": 1.2}
"""Seconds of silence of a ``<break strength>`` (``medium`` is a ``<break/>`` with no attribute)."""
RATES = {"x-slow": 0.6, "slow": 0.8, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.5}
"""Speed factors of ``<prosody rate>``'s names (the engine takes 0.5-2 times the request's speed)."""
_OPENINGS = ("<speak", "<?xml")
_TIME = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s)?\s*", re.IGNORECASE)
_RATE = re.compile(r"\s*([+-]?\d+(?:\.\d+)?)\s*(%)?\s*")
_NOT_PHONEMES = re.compile(r"[\s/()\[\].,;:!?]")
_COLLECTED = {"say-as", "sub", "phoneme"}
"""Elements whose text is spoken only once it is whole (read as a unit)."""


@dataclass(frozen=True, slots=True)
class Pause:
    """Silence of ``seconds`` (0: only the end of a chunk, as after ``</s>``)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Reading:
    """How the text after it is read: ``speed`` times the request's speed, in ``language`` (a tag
    such as ``es``; None: the voice's own), by ``voice`` (a speaker's voice; None: the request's)."""

    speed: float = 1.0
    language: str | None = None
    voice: str | None = None


@dataclass(frozen=True, slots=True)
class Cut:
    """A chunk ends here, at ``at`` in the client's text (before a pause or a change of reading)."""

    at: int


Event = str | Pause | Reading | Cut
"""Text to speak (it may hold inline phonemes), a pause, a change of reading, or where a chunk ends."""


class _Invalid(Exception):
    """A well-formed document that is not SSML we can read (raised inside expat's handlers)."""


@dataclass(slots=True)
class _Element:
    name: str
    reading: Reading
    attributes: dict[str, str]
    text: str = ""
    """The text of a collected element (``_COLLECTED``) so far."""


class SsmlReader:
    """Feed it a reply's text in fragments; it answers the events each one completes. ``always``:
    the client said the text is SSML; else only a text that is a ``<speak>`` document is.
    ``language``: the voice's language tag (``say-as`` reads numbers and letters in it)."""

    def __init__(self, *, always: bool = False, language: str = "en-us") -> None:
        self._always = always
        self._language = language
        self.ssml: bool | None = None
        """Whether the text is SSML; None until its first characters tell."""
        self._start = ""
        self._wrapped = False
        self._document: list[str] = []
        self._fed = bytearray()
        self._ascii = True
        self._shift = 0
        """The client's text offset of the document's first character (a wrapper, a stripped start)."""
        self._stack: list[_Element] = []
        self._collectors: list[_Element] = []
        """The open elements of ``_COLLECTED``, innermost last (text goes to the last)."""
        self._events: list[Event] = []
        self._parser = xml.parsers.expat.ParserCreate()
        self._parser.StartElementHandler = self._open
        self._parser.EndElementHandler = self._close
        self._parser.CharacterDataHandler = self._text
        self._parser.StartDoctypeDeclHandler = self._doctype

    def feed(self, fragment: str) -> list[Event]:
        if self.ssml is None:
            self._start += fragment
            head = self._start.lstrip()
            if not head or any(opening.startswith(head) for opening in _OPENINGS):
                return []  # too little yet to tell
            _, fragment = self._decide(head)
        if not self.ssml:
            return [fragment] if fragment else []
        return self._parse(fragment, final=False)

    def close(self) -> list[Event]:
        """The events the end of the text completes; ``invalid_ssml`` if the document is unfinished."""
        events: list[Event] = []
        if self.ssml is None:
            ssml, fragment = self._decide(self._start.lstrip())
            if not ssml:
                return [fragment] if fragment.strip() else []
            events = self._parse(fragment, final=False)
        if not self.ssml:
            return []
        return [*events, *self._parse("</speak>" if self._wrapped else "", final=True)]

    def _decide(self, head: str) -> tuple[bool, str]:
        """Whether the text is SSML, from its start, and the text to go on with."""
        ssml = self.ssml = self._always or head.startswith(_OPENINGS)
        self._shift = len(self._start) - len(head)
        if ssml and not head.startswith(_OPENINGS):
            self._wrapped, self._shift = True, -len("<speak>")
            return ssml, "<speak>" + self._start
        return ssml, head if ssml else self._start

    def _parse(self, fragment: str, *, final: bool) -> list[Event]:
        self._document.append(fragment)
        self._fed += fragment.encode()
        self._ascii = self._ascii and fragment.isascii()
        try:
            self._parser.Parse(fragment, final)
        except xml.parsers.expat.ExpatError as exc:
            message = xml.parsers.expat.ErrorString(exc.code)
            raise self._error(message, exc.lineno, exc.offset) from None
        except _Invalid as exc:
            raise self._error(str(exc), self._parser.CurrentLineNumber, self._parser.CurrentColumnNumber) from None
        events, self._events = self._events, []
        return events

    def _error(self, message: str, line: int, column_bytes: int) -> InvalidInput:
        """``invalid_ssml`` at the line and column (characters, from 1) of the client's text."""
        lines = "".join(self._document).split("\n")
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        column = len(text.encode()[:column_bytes].decode(errors="ignore"))
        if line == 1 and self._wrapped:
            column = max(0, column - len("<speak>"))
        return InvalidInput(f"invalid SSML at line {line}, column {column + 1}: {message}", code="invalid_ssml")

    @property
    def _reading(self) -> Reading:
        return self._stack[-1].reading if self._stack else Reading()

    def _open(self, name: str, attributes: dict[str, str]) -> None:
        outer = self._reading
        reading = _reading_of(name, attributes, outer)
        if name in ("p", "s") or reading != outer:
            self._events += [Cut(self._here()), Pause(0.0) if reading == outer else reading]
        element = _Element(name, reading, attributes)
        self._stack.append(element)
        if name in _COLLECTED:
            self._collectors.append(element)
        if name == "break":
            self._events += [Cut(self._here()), Pause(_break_s(attributes))]

    def _close(self, name: str) -> None:
        element = self._stack.pop()
        if element.name in _COLLECTED:
            self._collectors.pop()
            said = self._spoken(element)
            if self._collectors:
                self._collectors[-1].text += said
            else:
                self._events.append(said)
        outer = self._reading
        if element.reading != outer:
            self._events += [Cut(self._here()), outer]
        elif name in ("p", "s"):
            self._events += [Cut(self._here()), Pause(0.0)]

    def _text(self, text: str) -> None:
        if self._collectors:
            self._collectors[-1].text += text
        elif self._stack:
            self._events.append(text)

    def _spoken(self, element: _Element) -> str:
        """What a collected element says: its alias, its text with given phonemes, or read as."""
        attributes, text = element.attributes, element.text
        if element.name == "sub":
            if "alias" not in attributes:
                raise _Invalid("<sub> needs an alias")
            return attributes["alias"]
        if element.name == "phoneme":
            return _phonemes(text, attributes)
        language = element.reading.language or self._language
        return say_as(attributes.get("interpret-as", ""), text, attributes.get("format", ""), language)

    def _here(self) -> int:
        """Where the current tag starts in the client's text."""
        at = self._parser.CurrentByteIndex
        chars = at if self._ascii else len(self._fed[:at].decode(errors="ignore"))
        return max(0, chars + self._shift)

    def _doctype(self, *_: object) -> None:
        raise _Invalid("a DOCTYPE is not allowed")


def _reading_of(name: str, attributes: dict[str, str], outer: Reading) -> Reading:
    reading = outer
    if "xml:lang" in attributes and name in ("speak", "lang", "p", "s", "voice"):
        reading = replace(reading, language=attributes["xml:lang"].strip() or None)
    if name == "voice" and "name" in attributes:
        reading = replace(reading, voice=attributes["name"].strip() or None)
    if name == "prosody" and "rate" in attributes:
        reading = replace(reading, speed=reading.speed * _rate(attributes["rate"]))
    return reading


def _break_s(attributes: dict[str, str]) -> float:
    if "time" in attributes:
        found = _TIME.fullmatch(attributes["time"])
        if found is None:
            raise _Invalid(f"break time {attributes['time'][:20]!r} is not a time such as '500ms' or '1.5s'")
        seconds = float(found.group(1)) / (1000 if (found.group(2) or "s").lower() == "ms" else 1)
        if seconds > MAX_BREAK_S:
            raise _Invalid(f"a break is at most {MAX_BREAK_S:g} s")
        return seconds
    strength = attributes.get("strength", "medium")
    if strength not in STRENGTHS:
        raise _Invalid(f"break strength is one of {', '.join(STRENGTHS)}")
    return STRENGTHS[strength]


def _rate(value: str) -> float:
    if value.strip() in RATES:
        return RATES[value.strip()]
    found = _RATE.fullmatch(value)
    if found is None:
        raise _Invalid(f"prosody rate {value[:20]!r} is a name (slow, fast...), a percentage or a number")
    number, percent = float(found.group(1)), found.group(2)
    if percent and found.group(1)[0] in "+-":
        return 1.0 + number / 100
    factor = number / 100 if percent else number
    if factor <= 0:
        raise _Invalid("prosody rate must be above zero")
    return factor


def _phonemes(text: str, attributes: dict[str, str]) -> str:
    """A ``<phoneme>`` as Kokoro's inline form ``[word](/phonemes/)`` (IPA or CMU Arpabet)."""
    alphabet, given = attributes.get("alphabet", "ipa").lower(), attributes.get("ph", "")
    if alphabet in ("cmu-arpabet", "x-arpabet", "arpabet"):
        given = arpabet_to_ipa(given)
    elif alphabet != "ipa":
        raise _Invalid(f"phoneme alphabet {alphabet[:20]!r} is not ipa or cmu-arpabet")
    given = _NOT_PHONEMES.sub("", given)
    if not given or len(given) > 200:
        raise _Invalid("<phoneme> needs ph, at most 200 symbols")
    word = re.sub(r"[\[\]\n]", " ", text).strip()[:100] or "word"
    return f"[{word}](/{given}/)"


def is_ssml(text: str, text_type: str | None) -> bool:
    """Whether a whole text is read as SSML (``text_type``: ``ssml``, ``text`` or None: by its start)."""
    return text_type == "ssml" or (text_type != "text" and text.lstrip().startswith(_OPENINGS))
