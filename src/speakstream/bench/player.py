"""A simulated real-time player: what a listener hears from audio as it arrives.

Playback starts with the first audio and consumes one second of audio per second; whenever the
next piece arrives after the buffer ran dry, the listener hears a gap (a stall).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

AUDIBLE_GAP_S = 0.02


@dataclass(frozen=True, slots=True)
class Playback:
    ttfa_s: float
    """From the request to the first audio."""
    audio_s: float
    wall_s: float
    """From the request to the last audio."""
    gaps: tuple[float, ...]
    """Every audible gap after playback started, in seconds."""

    @property
    def stall_s(self) -> float:
        return sum(self.gaps)

    @property
    def audio_per_wall_s(self) -> float:
        return self.audio_s / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict[str, float | int]:
        return {
            "ttfa_ms": round(self.ttfa_s * 1000, 1),
            "audio_s": round(self.audio_s, 3),
            "stalls": len(self.gaps),
            "stall_ms": round(self.stall_s * 1000, 1),
            "audio_per_wall_s": round(self.audio_per_wall_s, 3),
        }


def play(arrivals: Sequence[tuple[float, float]], sent_at: float) -> Playback:
    """``arrivals``: (arrival time, audio seconds) of each piece, in order; ``sent_at``: request time."""
    if not arrivals:
        return Playback(0.0, 0.0, 0.0, ())
    first = arrivals[0][0]
    buffer_ends = first
    gaps = []
    for arrived, seconds in arrivals:
        if arrived > buffer_ends + AUDIBLE_GAP_S:
            gaps.append(arrived - buffer_ends)
        buffer_ends = max(buffer_ends, arrived) + seconds
    audio = sum(seconds for _, seconds in arrivals)
    return Playback(first - sent_at, audio, arrivals[-1][0] - sent_at, tuple(gaps))


def pcm_arrivals(times: Sequence[tuple[float, int]], sample_rate: int = 24_000) -> list[tuple[float, float]]:
    """(arrival time, bytes) of s16le mono frames -> (arrival time, seconds)."""
    return [(t, size / 2 / sample_rate) for t, size in times]


def heard(pieces: Sequence[tuple[float, NDArray[np.float32]]], sample_rate: int = 24_000) -> NDArray[np.float32]:
    """What the listener hears from (arrival time, samples) pieces in order: the audio, with
    silence wherever the buffer ran dry (``play``'s gaps, at their places)."""
    out: list[NDArray[np.float32]] = []
    buffer_ends = pieces[0][0] if pieces else 0.0
    for arrived, samples in pieces:
        if arrived > buffer_ends:
            out.append(np.zeros(round((arrived - buffer_ends) * sample_rate), np.float32))
            buffer_ends = arrived
        out.append(samples)
        buffer_ends += len(samples) / sample_rate
    return np.concatenate(out) if out else np.zeros(0, np.float32)
