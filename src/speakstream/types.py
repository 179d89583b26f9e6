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

    def shifted(self, offset_s: float) -> WordTimestamp:
        return WordTimestamp(self.word, self.start_s + offset_s, self.end_s + offset_s)

    def to_dict(self) -> dict[str, float | str]:
        return {"word": self.word, "start_s": round(self.start_s, 4), "end_s": round(self.end_s, 4)}


@dataclass(frozen=True, slots=True)
class SynthesisTimings:
    """Where the time of one synthesis went, in seconds."""

    phonemize_s: float = 0.0
    inference_s: float = 0.0


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
