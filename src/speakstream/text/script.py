"""A reply's text stage: SSML read (when the text is SSML), pronunciation rules applied, chunks cut.

What comes out is the reply's script: chunks to say, each with how to read it, and pauses
between them. A pause or a change of reading ends the chunk before it, so every chunk is read one
way and a pause falls exactly where it was asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol

from speakstream.text.chunker import has_words
from speakstream.text.lexicon import Rewriter
from speakstream.text.ssml import Cut, Event, Pause, Reading, SsmlReader


class Chunker(Protocol):
    def feed(self, fragment: str) -> list[str]: ...

    def cut(self) -> list[str]: ...

    def flush_all(self) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class Say:
    """A chunk to speak, read as ``reading`` says."""

    text: str
    reading: Reading = field(default_factory=Reading)
    ends_at: int | None = field(default=None, compare=False)
    """Where its part of the client's text ends, when a tag cut it there (``SpanFinder``)."""


Part = Say | Pause


class Script:
    """Feed it a reply's text; each call answers the parts the text so far completes."""

    def __init__(self, chunker: Chunker, rewriter: Rewriter | None = None, ssml: SsmlReader | None = None) -> None:
        self._chunker = chunker
        self._rewriter = rewriter
        self._ssml = ssml
        self._reading = Reading()
        self._speaker: str | None = None

    @property
    def ssml(self) -> bool:
        """The text is SSML (so far as its start tells)."""
        return self._ssml is not None and self._ssml.ssml is True

    def feed(self, fragment: str) -> list[Part]:
        """Raw text (an LLM delta): the chunker decides where chunks end."""
        return self._parts(self._ssml.feed(fragment) if self._ssml else [fragment])

    def chunk(self, text: str) -> list[Part]:
        """Text the client already chunked: everything before it cut, then ``text`` as one chunk
        as it is (SSML in it read, rules applied), so a chunking client is the only one that decides."""
        if self._ssml is not None:
            events = self._ssml.feed(text)
            if self._ssml.ssml is not False:
                return [*self._parts(events), *self._cut()]
            text = "".join(event for event in events if isinstance(event, str))
        parts = self._cut()
        text = self._rewriter.lexicon.apply(text) if self._rewriter else text
        return [*parts, *self._says([text.strip()])]

    def speak_as(self, voice: str | None, pause_s: float = 0.0) -> list[Part]:
        """The text after this is read by ``voice`` (None: the request's), unless SSML names
        another, after ``pause_s`` of silence: everything before is cut, read by the voice before."""
        parts = self._cut()
        if pause_s > 0:
            parts.append(Pause(pause_s))
        self._speaker = voice
        return parts

    def end(self) -> list[Part]:
        """The rest of the reply, now that no more text follows."""
        parts = self._parts(self._ssml.close()) if self._ssml else []
        return [*parts, *self._says([*self._held_back(), *self._chunker.flush_all()])]

    def _parts(self, events: list[Event]) -> list[Part]:
        parts: list[Part] = []
        for event in events:
            if isinstance(event, str):
                parts += self._says(self._chunker.feed(self._rewriter.feed(event) if self._rewriter else event))
            elif isinstance(event, Cut):
                parts += self._cut(event.at)
            elif isinstance(event, Pause):
                parts += self._cut()
                if event.seconds > 0:
                    parts.append(event)
            else:
                parts += self._cut()
                self._reading = event
        return parts

    def _cut(self, at: int | None = None) -> list[Part]:
        """Everything pending as chunks now; the last ends at ``at`` in the client's text."""
        parts = self._says([*self._held_back(), *self._chunker.cut()])
        if at is not None and parts and isinstance(parts[-1], Say):
            parts[-1] = Say(parts[-1].text, parts[-1].reading, at)
        return parts

    def _held_back(self) -> list[str]:
        """The chunks the text the rules held back completes, now that no more follows it."""
        return self._chunker.feed(self._rewriter.flush()) if self._rewriter else []

    def _says(self, texts: list[str]) -> list[Part]:
        # a run of marks alone says nothing: the chunks' own pause is enough
        reading = self._reading
        if reading.voice is None and self._speaker is not None:
            reading = replace(reading, voice=self._speaker)
        return [Say(text, reading) for text in texts if has_words(text)]
