"""Character timings (ElevenLabs' ``alignment``) from the model's word timings.

Kokoro's durations time each word; a word's characters share its span evenly, and what lies
between two words (spaces, punctuation) shares the gap between them. The characters cover the
chunk's audio: they are in order and the last ends at the chunk's end, so a client that
keeps its clock by adding each message's span stays in step with the audio.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from speakstream.server.encoding import ChunkOut
from speakstream.server.reply import Reply
from speakstream.types import WordTimestamp


@dataclass(frozen=True, slots=True)
class CharTimes:
    chars: list[str]
    starts_ms: list[int]
    durations_ms: list[int]

    def shifted(self, offset_ms: int) -> CharTimes:
        return CharTimes(self.chars, [s + offset_ms for s in self.starts_ms], self.durations_ms)


def char_times(text: str, words: Sequence[WordTimestamp], duration_s: float) -> CharTimes:
    """Times of each character of ``text``, whose ``words`` start at 0 and whose audio lasts
    ``duration_s``. Words not found in the text (normalised numbers, say) leave their span to
    the characters around them."""
    spans, at = [], 0
    for word in words:
        found = text.find(word.word, at) if word.word else -1
        if found >= 0:
            at = found + len(word.word)
            spans.append((found, at, word.start_s, word.end_s))
    return _timed(text, spans, duration_s)


def _timed(text: str, spans: Iterable[tuple[int, int, float, float]], duration_s: float) -> CharTimes:
    """Times of each character of ``text``: each span (first, end, start s, end s) evenly across
    its characters, the rest sharing the gaps between; the last ends with the audio."""
    bounds = [0.0] * (len(text) + 1)
    known = [False] * (len(text) + 1)
    known[0] = known[-1] = True
    bounds[-1] = duration_s
    for first, end, start_s, end_s in spans:
        for i in range(first, min(end, len(text) - 1) + 1):  # evenly across the word; the end is the audio's
            bounds[i] = start_s + (end_s - start_s) * (i - first) / max(1, end - first)
            known[i] = True
    _fill_gaps(bounds, known)
    ms = [round(b * 1000) for b in _monotone(bounds)]
    return CharTimes(list(text), ms[:-1], [b - a for a, b in itertools.pairwise(ms)])


def _fill_gaps(bounds: list[float], known: list[bool]) -> None:
    """Unknown boundaries share the span between the known ones around them evenly."""
    last = 0
    for i in range(1, len(bounds)):
        if known[i]:
            for j in range(last + 1, i):
                bounds[j] = bounds[last] + (bounds[i] - bounds[last]) * (j - last) / (i - last)
            last = i


def _monotone(bounds: list[float]) -> list[float]:
    out, high = [], 0.0
    for b in bounds[:-1]:
        high = min(max(high, b), bounds[-1])
        out.append(high)
    return [*out, bounds[-1]]


def text_words(text: str, words: Sequence[WordTimestamp], duration_s: float) -> list[WordTimestamp]:
    """The text's own whitespace-separated words (punctuation attached, as the services send
    them), timed by their characters: what a client can match against the text it sent."""
    return words_of(char_times(text, words, duration_s))


def words_of(times: CharTimes) -> list[WordTimestamp]:
    """The whitespace-separated words of timed characters, each from its first to its last."""
    text, out = "".join(times.chars), []
    for match in re.finditer(r"\S+", text):
        first, last = match.start(), match.end() - 1
        end_ms = times.starts_ms[last] + times.durations_ms[last]
        out.append(WordTimestamp(match.group(), times.starts_ms[first] / 1000, end_ms / 1000))
    return out


def chunk_char_times(first: ChunkOut, duration_s: float, *, word_break: bool = False) -> CharTimes:
    """The character times of a chunk (``first``: its first piece) from its start; ``word_break``
    puts a space before it (a chunk after the first)."""
    words = [w.shifted(-first.offset_s) for w in first.words]
    return char_times((" " if word_break else "") + first.text, words, duration_s)


def chunk_words(first: ChunkOut, duration_s: float) -> list[WordTimestamp]:
    """``text_words`` of a chunk, from its start."""
    return text_words(first.text, [w.shifted(-first.offset_s) for w in first.words], duration_s)


_MARKUP = re.compile(r"<[^<>]*>")


@dataclass(slots=True)
class SourceAlignment:
    """The client's own text, chunk by chunk, with its characters timed (ElevenLabs' ``alignment``,
    beside the spoken text's ``normalizedAlignment``): each chunk covers the client's text from
    where the chunk before ended to the end of its last word and the marks after it."""

    said_to: int = 0

    def times(self, reply: Reply, first: ChunkOut, duration_s: float) -> CharTimes | None:
        """The chunk's characters of the client's text timed from its start (SSML tags left out);
        None when its words do not know where they came from."""
        source, ssml = reply.spans.text, reply.spans.ssml
        words = [w.shifted(-first.offset_s) for w in first.words]
        if not words or any(w.chars is None for w in words):
            return None
        end = max(w.chars[1] for w in words if w.chars is not None)
        while end < len(source) and not source[end].isspace() and not source[end].isalnum() and source[end] != "<":
            end += 1
        start, self.said_to = self.said_to, max(end, self.said_to)
        text = source[start : self.said_to]
        timed = _by_span(text, start, words, duration_s)
        return _without_markup(timed, text) if ssml else timed


def _by_span(text: str, start: int, words: list[WordTimestamp], duration_s: float) -> CharTimes:
    """``char_times`` with each word at its span (words with one span share its time)."""
    spans = []
    for chars, same in itertools.groupby(words, key=lambda w: w.chars):
        group = list(same)
        if chars is not None:
            first, end = max(0, chars[0] - start), min(len(text), chars[1] - start)
            spans.append((first, end, group[0].start_s, group[-1].end_s))
    return _timed(text, spans, duration_s)


def _without_markup(times: CharTimes, text: str) -> CharTimes:
    """``times`` without the characters of SSML tags (their time goes to the character before)."""
    hidden = {i for tag in _MARKUP.finditer(text) for i in range(*tag.span())}
    chars: list[str] = []
    starts: list[int] = []
    durations: list[int] = []
    for i, (char, at, lasts) in enumerate(zip(times.chars, times.starts_ms, times.durations_ms, strict=True)):
        if i not in hidden:
            chars.append(char)
            starts.append(at)
            durations.append(lasts)
        elif durations:
            durations[-1] += lasts
    return CharTimes(chars, starts, durations)
