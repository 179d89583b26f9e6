"""The model's front for one phoneme window: durations, aligned features, F0 and energy, and from
the durations where the words are and which samples of the audio to keep.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.phonemes.phonemizer import Phonemized
from speakstream.engine.windows.edges import EdgePolicy
from speakstream.engine.windows.planner import FRAME_SAMPLES
from speakstream.types import SAMPLE_RATE, WordTimestamp

WINDOW_PAUSE_S = 0.12
"""Silence between two phoneme windows of one chunk (a text longer than the model's 510 tokens)."""
FINAL_MARKS = frozenset(';:,.!?¡¿—…"«»“”() ')
"""Kokoro's phoneme symbols that make no sound of their own."""


@dataclass(frozen=True, slots=True)
class Utterance:
    """The front's output for one phoneme window, and where its speech lies."""

    features: NDArray[np.float32]
    f0: NDArray[np.float32]
    energy: NDArray[np.float32]
    style: NDArray[np.float32]
    frames: int
    head: int
    """First sample kept (speech start minus the onset reach and the lead)."""
    end: int
    """One past the last sample kept (speech end plus the tail)."""
    words: tuple[WordTimestamp, ...]
    tail: int
    """Samples kept after the speech ends."""
    speech_end: int
    """Where the last word ends, by the durations."""
    onset: int
    """The latest first sample: where the first word starts by the durations, less the lead. The
    first piece is cut to its speech (``trim_onset``), never past this."""

    @property
    def samples(self) -> int:
        return self.end - self.head

    @property
    def first_frame(self) -> int:
        """The first frame its windows decode."""
        return self.head // FRAME_SAMPLES

    @property
    def stop_frame(self) -> int:
        """One past the last frame its windows decode."""
        return max(self.first_frame + 1, min(self.frames, -(-self.end // FRAME_SAMPLES)))


def utterance(
    outputs: Sequence[Any], part: Phonemized, style: NDArray[np.float32], text: str, edges: EdgePolicy
) -> Utterance:
    """The ``Utterance`` of the front's ``outputs`` (durations, features, F0, energy) for ``part``,
    which ends ``text``'s speech (its last mark sets the tail)."""
    durations, features, f0, energy = outputs
    durations = np.asarray(durations).ravel()
    frames = int(durations.sum())
    first, last = speech_span(part, durations)
    if ends_with_its_last_word(part):
        last = max(first, last - int(edges.final_lengthening_s * SAMPLE_RATE))
    onset = max(0, first - int(edges.lead_s * SAMPLE_RATE))
    head = max(0, onset - int(edges.onset_reach_s * SAMPLE_RATE))
    tail = int(edges.tail_for(text) * SAMPLE_RATE)
    end = max(head + 1, last + tail)  # past the model's frames: padded with silence; never before last
    words = tuple(word_times(part, durations, head, last - head))
    return Utterance(features, f0, energy, style, frames, head, end, words, tail, last, onset)


def ends_with_its_last_word(part: Phonemized) -> bool:
    """Whether only punctuation follows the last word's phonemes (no sound the words do not name,
    such as a symbol read out), so the final lengthening is the last word's."""
    return bool(part.words) and all(c in FINAL_MARKS for c in part.phonemes[part.words[-1].end :])


def word_times(part: Phonemized, durations: Any, head: int, length: int) -> list[WordTimestamp]:
    """Word start/end in seconds from per-token frame counts (pads included), after trimming."""
    edges = np.concatenate([[0], np.cumsum(durations)]) * FRAME_SAMPLES
    times = []
    for word in part.words:
        start = (edges[word.first + 1] - head) / SAMPLE_RATE
        end = (edges[word.end + 1] - head) / SAMPLE_RATE
        limit = length / SAMPLE_RATE
        times.append(WordTimestamp(word.text, float(np.clip(start, 0, limit)), float(np.clip(end, 0, limit))))
    return times


def speech_span(part: Phonemized, durations: Any) -> tuple[int, int]:
    """First and one-past-last sample of the words (the padding and silence around them excluded)."""
    edges = np.concatenate([[0], np.cumsum(durations)]) * FRAME_SAMPLES
    if not part.words:
        return int(edges[1]), int(edges[-2])
    return int(edges[part.words[0].first + 1]), int(edges[part.words[-1].end + 1])


def word_boundaries(u: Utterance) -> tuple[int, ...]:
    """The frames between consecutive words (the middle of any pause), where seams go."""
    frames = set()
    for before, after in itertools.pairwise(u.words):
        middle = u.head + (before.end_s + after.start_s) / 2 * SAMPLE_RATE
        frames.add(round(middle / FRAME_SAMPLES))
    return tuple(sorted(frames))


def timeline(utterances: list[Utterance], pause: int, cut: int) -> tuple[tuple[WordTimestamp, ...], int]:
    """A chunk's word timestamps and its length in samples: its utterances one after another,
    ``pause`` samples between them, the first cut ``cut`` samples at its head (``trim_onset``)."""
    words: list[WordTimestamp] = []
    offset = -cut
    for u in utterances:
        words += [WordTimestamp(w.word, _moved(w.start_s, offset), _moved(w.end_s, offset)) for w in u.words]
        offset += u.samples + pause
    return tuple(words), offset - pause


def _moved(seconds: float, samples: int) -> float:
    """``seconds`` (a whole number of samples) moved by ``samples``, counted in samples so that a
    word ending with the chunk ends exactly at its length."""
    return (round(seconds * SAMPLE_RATE) + samples) / SAMPLE_RATE
