"""Types that cross layers: text spans, audio chunks, word timestamps.

Every stage of the pipeline (text -> chunker -> engine -> encoder -> transport -> client) speaks
in these. Field names carry their units.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

SAMPLE_RATE = 24_000
"""Kokoro-82M's native output rate, in Hz."""


@dataclass(frozen=True, slots=True)
class Span:
    """A piece of a text with its position: ``source[start:end]`` contains ``text``."""

    text: str
    """The piece, stripped of surrounding whitespace."""
    start: int
    """Offset of the first character of ``text`` in the source."""
    end: int
    """Offset one past the last character of ``text`` in the source."""


@dataclass(frozen=True, slots=True)
class WordTimestamp:
    """When one word is spoken, relative to the start of its audio chunk."""

    word: str
    start_s: float
    end_s: float
    chars: tuple[int, int] | None = None
    """Where the word came from in the text the client sent for the request (start, end), when known."""

    def shifted(self, offset_s: float) -> WordTimestamp:
        return WordTimestamp(self.word, self.start_s + offset_s, self.end_s + offset_s, self.chars)

    def to_dict(self) -> dict[str, float | str]:
        timed: dict[str, float | str] = {
            "word": self.word,
            "start_s": round(self.start_s, 4),
            "end_s": round(self.end_s, 4),
        }
        if self.chars is not None:
            timed["char_start"], timed["char_end"] = self.chars
        return timed


@dataclass(frozen=True, slots=True)
class SynthesisTimings:
    """Where the time of one synthesis went, in seconds."""

    phonemize_s: float = 0.0
    inference_s: float = 0.0


Attribute = str | int | float | bool


@dataclass(frozen=True, slots=True)
class Step:
    """One stage of the engine's work on a piece (phonemes, a front, a window), for traces: when it
    ran (``time.perf_counter``) and what it decided."""

    name: str
    started: float
    ended: float
    attributes: tuple[tuple[str, Attribute], ...] = ()


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """Mono float32 PCM in [-1, 1] with the words it speaks."""

    samples: NDArray[np.float32]
    """Mono samples, float32 in [-1, 1]."""
    sample_rate: int = SAMPLE_RATE
    """Samples per second."""
    text: str = ""
    """The text this audio speaks."""
    words: tuple[WordTimestamp, ...] = ()
    """Word timings relative to the first sample of ``samples``."""
    timings: SynthesisTimings = field(default_factory=SynthesisTimings)
    """How long the engine took to make it."""

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.sample_rate


def float_to_pcm16(samples: NDArray[np.float32]) -> bytes:
    clipped = np.clip(samples, -1.0, 1.0)
    return (clipped * 32767.0).round().astype("<i2").tobytes()


def pcm16_to_float(data: bytes) -> NDArray[np.float32]:
    usable = len(data) - len(data) % 2
    ints = np.frombuffer(data[:usable], dtype="<i2")
    return (ints.astype(np.float32) / 32768.0).astype(np.float32)


@dataclass(frozen=True, slots=True)
class AudioPiece:
    """A piece of one chunk's audio, as the engine streams it (windows of the decoder)."""

    samples: NDArray[np.float32]
    """Mono samples, float32 in [-1, 1], following the previous piece's without a gap."""
    index: int
    """0 for the chunk's first piece."""
    offset_s: float
    """Where this piece starts in the chunk's audio."""
    chunk_duration_s: float
    """The whole chunk's length, known from the model's durations before its audio is made."""
    words: tuple[WordTimestamp, ...] = ()
    """On the first piece: every word of the chunk (times from the chunk's start), known from the
    durations; empty on the others."""
    last: bool = False
    timings: SynthesisTimings = field(default_factory=SynthesisTimings)
    """The time this piece took (the first one includes phonemes and the model's front)."""
    sample_rate: int = SAMPLE_RATE
    steps: tuple[Step, ...] = ()
    """The stages that made it, in order (the first piece's include the chunk's phonemes and fronts)."""
    hold_s: float = 0.0
    """How long the server holds this piece before sending it (an opening's start-up buffer: the
    scheduler sets it from ``Stream.held_s`` once the piece is made)."""

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.sample_rate


def join_pieces(text: str, pieces: list[AudioPiece]) -> AudioChunk:
    """The chunk a stream of pieces makes (``Engine.synthesize`` is this join of ``stream``)."""
    samples = np.concatenate([p.samples for p in pieces]) if pieces else np.zeros(0, np.float32)
    timings = SynthesisTimings(sum(p.timings.phonemize_s for p in pieces), sum(p.timings.inference_s for p in pieces))
    words = pieces[0].words if pieces else ()
    rate = pieces[0].sample_rate if pieces else SAMPLE_RATE
    return AudioChunk(samples, rate, text, words, timings)


@dataclass(frozen=True, slots=True, kw_only=True)
class Load:
    """The engine's load as the scheduler sees it when it hands one reply a turn: plain data taken on
    the event loop, so nothing the engine decides on its threads reads the scheduler's state. The
    default is a reply alone with no listener known (the engine used directly)."""

    lanes: int = 1
    """Windows the scheduler runs at once (one worker a lane)."""
    in_flight: int = 1
    """Windows running or handed out now, this one included (paused ones not: they wait)."""
    replies: int = 1
    """Replies with work queued or running, this one's included."""
    waiting_first: int = 0
    """Replies waiting for their first audio (first windows queued or running)."""
    crowded: bool = False
    """More replies waited for their first audio than the lanes when this one was queued or now:
    its opening is then the shortest that sounds right."""
    buffered_s: float | None = None
    """Seconds of this reply's audio its listener has buffered (None: no listener is known)."""
    playing: bool = False
    """The listener has begun to hear this reply, so its buffer drains in real time."""
    taken_at: float = 0.0
    """When this was taken (``time.perf_counter``)."""
    others_buffered_s: float | None = None
    """The least another listener hearing its reply has buffered (None: no other is playing)."""
    lane_wait_s: float = 0.0
    """Seconds until a lane running a later window is expected to be free, when every lane runs
    one (0: a lane is free): how long a reply's second window may wait for one."""

    @property
    def sharing(self) -> bool:
        """Other windows run beside this one, or are about to."""
        return self.in_flight > 1

    def buffered_at(self, now: float) -> float | None:
        """The listener's buffer at ``now`` (a ``time.perf_counter`` reading), drained since taken."""
        if self.buffered_s is None or not self.playing:
            return self.buffered_s
        return max(0.0, self.buffered_s - (now - self.taken_at))

    def others_at(self, now: float) -> float | None:
        """``others_buffered_s`` at ``now``, drained since taken."""
        if self.others_buffered_s is None:
            return None
        return max(0.0, self.others_buffered_s - (now - self.taken_at))
