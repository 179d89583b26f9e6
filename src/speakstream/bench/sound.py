"""How a reply streamed in chunks sounds against the same text synthesised whole: the silence at
each join, each chunk's level, and the pitch step across each join, each read at the same words
in both renderings (their word timestamps say where)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.windows.edges import frame_db

FRAME_S = 0.01
SILENCE_DB = 40.0
"""A 10 ms frame is silent when its RMS is this far under the reply's loud frames (their 95th
percentile): Kokoro's pauses sit 50-70 dB under its speech, a stop consonant's closure 20-35."""
ACTIVE_DB = 30.0
"""A chunk's level is read over its frames within this of its loudest (speech, not its pauses)."""
PITCH_REACH_S = 0.6
"""The pitch either side of a join is read from the voiced frames within this of its silence ..."""
PITCH_FRAMES = 10
"""... the last (before) or first (after) this many of them, 10 ms each: a word's final sound is
often unvoiced (the "s" of "options"), so the last voiced stretch is its final vowel."""
PITCH_CONTEXT_S = 0.3
"""Audio read beyond that on each side (pYIN's voicing needs context)."""


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    start_s: float
    end_s: float


@dataclass(frozen=True, slots=True)
class Rendering:
    """A reply's audio and its words, grouped by the chunk that spoke them (one group: whole)."""

    samples: NDArray[np.float32]
    sample_rate: int
    chunks: tuple[tuple[Word, ...], ...]

    @property
    def words(self) -> list[Word]:
        return [w for chunk in self.chunks for w in chunk]


def rendering(samples: NDArray[np.float32], sample_rate: int, chunks: list[list[dict[str, Any]]]) -> Rendering:
    """From the server's ``word_timestamps`` messages' ``words`` (``word``, ``start_s``, ``end_s``)."""
    grouped = tuple(tuple(Word(str(w["word"]), float(w["start_s"]), float(w["end_s"])) for w in c) for c in chunks)
    return Rendering(samples, sample_rate, tuple(c for c in grouped if c))


def silent_frames(samples: NDArray[np.float32], sample_rate: int) -> NDArray[np.bool_]:
    """Each 10 ms frame: is it silent?"""
    db = frame_db(samples, sample_rate)
    loud = float(np.percentile(db, 95)) if len(db) else 0.0
    return db < loud - SILENCE_DB


def silence(quiet: NDArray[np.bool_], start_s: float, end_s: float) -> tuple[float, float]:
    """The longest silence between two instants: where it starts and how long it lasts, in
    seconds; none (its length 0) is placed midway."""
    a, b = max(0, int(start_s / FRAME_S)), max(0, int(np.ceil(end_s / FRAME_S)))
    best, best_end, run = 0, (a + b) // 2, 0
    for i, flag in enumerate(quiet[a:b], a):
        run = run + 1 if flag else 0
        if run > best:
            best, best_end = run, i + 1
    return (best_end - best) * FRAME_S, best * FRAME_S


def level_db(samples: NDArray[np.float32], sample_rate: int, start_s: float, end_s: float) -> float:
    """RMS in dB between two instants, over the 10 ms frames that carry speech (within
    ``ACTIVE_DB`` of the loudest): the pauses inside a span are the joins' measure, not its level."""
    piece = samples[int(start_s * sample_rate) : int(end_s * sample_rate)]
    active = frame_db(piece, sample_rate) >= -ACTIVE_DB
    if not active.any():
        return float("-inf")
    frames = piece[: len(active) * int(FRAME_S * sample_rate)].reshape(len(active), -1).astype(np.float64)
    return float(10 * np.log10((frames[active] ** 2).mean() + 1e-12))


def loudness_lufs(samples: NDArray[np.float32], sample_rate: int, start_s: float, end_s: float) -> float | None:
    """Integrated loudness (ITU-R BS.1770-4, pyloudnorm) between two instants; None under its 0.4 s block."""
    import pyloudnorm

    piece = samples[int(start_s * sample_rate) : int(end_s * sample_rate)].astype(np.float64)
    if len(piece) < 0.4 * sample_rate:
        return None
    value = float(pyloudnorm.Meter(sample_rate).integrated_loudness(piece))
    return value if np.isfinite(value) else None


def pitch_step(samples: NDArray[np.float32], sample_rate: int, start_s: float, end_s: float) -> float | None:
    """Semitones from the last voiced frames before ``start_s`` to the first voiced frames after
    ``end_s`` (median F0 of each, librosa's pYIN at 16 kHz), folded into one octave either way
    (pYIN's octave errors read as 12-19 semitone steps); None when either side has none."""
    import librosa
    import soxr

    lo = max(0.0, start_s - PITCH_REACH_S - PITCH_CONTEXT_S)
    piece = samples[int(lo * sample_rate) : int((end_s + PITCH_REACH_S + PITCH_CONTEXT_S) * sample_rate)]
    audio = soxr.resample(piece, sample_rate, 16_000).astype(np.float32)
    if len(audio) < 1024:
        return None
    f0, voiced, _ = librosa.pyin(audio, fmin=60, fmax=500, sr=16_000, frame_length=1024, hop_length=160)
    times, usable = lo + np.arange(len(f0)) * 0.01, voiced & np.isfinite(f0)
    before = f0[usable & (times >= start_s - PITCH_REACH_S) & (times < start_s)][-PITCH_FRAMES:]
    after = f0[usable & (times >= end_s) & (times < end_s + PITCH_REACH_S)][:PITCH_FRAMES]
    if not len(before) or not len(after):
        return None
    step = float(12 * np.log2(np.median(after) / np.median(before)))
    return step - 12 * round(step / 12)


def _norm(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower())


def matched(a: list[Word], b: list[Word]) -> dict[int, int]:
    """Index in ``b`` of each word of ``a`` that the two word sequences share, in order."""
    matcher = difflib.SequenceMatcher(a=[_norm(w.text) for w in a], b=[_norm(w.text) for w in b], autojunk=False)
    return {block.a + k: block.b + k for block in matcher.get_matching_blocks() for k in range(block.size)}


@dataclass(frozen=True, slots=True)
class Join:
    """One join between two chunks, measured in both renderings."""

    silence_s: float
    whole_silence_s: float
    pitch_step: float | None
    """Semitones from the word before the join to the word after, streamed."""
    whole_pitch_step: float | None
    chunk: int = 0
    """The streamed chunk it follows."""

    @property
    def silence_diff_s(self) -> float:
        return self.silence_s - self.whole_silence_s


@dataclass(frozen=True, slots=True)
class ChunkLevel:
    """One chunk's level over its words against the whole's over the same words."""

    level_diff_db: float
    lufs_diff: float | None


def _join(r: Rendering, quiet: NDArray[np.bool_], before: Word, after: Word, pitch: bool) -> tuple[float, float | None]:
    """The silence between two words (sought from the middle of one to the middle of the other)
    and the pitch step across it."""
    start, length = silence(quiet, (before.start_s + before.end_s) / 2, (after.start_s + after.end_s) / 2)
    step = pitch_step(r.samples, r.sample_rate, start, start + length) if pitch else None
    return length, step


def joins(streamed: Rendering, whole: Rendering, *, pitch: bool = True) -> list[Join]:
    """Every join of ``streamed`` whose words either side ``whole`` speaks as neighbours too, in one
    of its groups (a whole longer than the model's window is several, with the engine's pause between)."""
    words, reference = streamed.words, whole.words
    index = matched(words, reference)
    group = [g for g, chunk in enumerate(whole.chunks) for _ in chunk]
    quiet = silent_frames(streamed.samples, streamed.sample_rate)
    whole_quiet = silent_frames(whole.samples, whole.sample_rate)
    found, last = [], -1
    for n, chunk in enumerate(streamed.chunks[:-1]):
        last += len(chunk)
        i, j = index.get(last), index.get(last + 1)
        if i is None or j != i + 1 or group[i] != group[j]:
            continue
        ours = _join(streamed, quiet, words[last], words[last + 1], pitch)
        theirs = _join(whole, whole_quiet, reference[i], reference[j], pitch)
        found.append(Join(ours[0], theirs[0], ours[1], theirs[1], n))
    return found


def chunk_levels(streamed: Rendering, whole: Rendering) -> list[ChunkLevel]:
    """Each chunk's level over its words (first word's start to last word's end) against the whole's."""
    reference, index, first = whole.words, matched(streamed.words, whole.words), 0
    levels = []
    for chunk in streamed.chunks:
        a, b = index.get(first), index.get(first + len(chunk) - 1)
        first += len(chunk)
        if a is None or b is None:
            continue
        ours = (chunk[0].start_s, chunk[-1].end_s)
        theirs = (reference[a].start_s, reference[b].end_s)
        lufs = [loudness_lufs(r.samples, r.sample_rate, *span) for r, span in ((streamed, ours), (whole, theirs))]
        levels.append(
            ChunkLevel(
                level_diff_db=level_db(streamed.samples, streamed.sample_rate, *ours)
                - level_db(whole.samples, whole.sample_rate, *theirs),
                lufs_diff=None if None in lufs else lufs[0] - lufs[1],  # type: ignore[operator]
            )
        )
    return levels


def spread(values: list[float]) -> float:
    return max(values) - min(values) if values else 0.0
