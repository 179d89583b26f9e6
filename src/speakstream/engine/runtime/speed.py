"""The decoder's speed: every measurement and every guess in one place, one update rule.

Speeds are decoder seconds per decoded frame (context included). A window that ran alone (the wide
copy, every core) measures the lone speed, one that started beside another (a narrow copy) the
shared speed; every window moves the recent speed, and long ones the fastest ever seen. The planner
reads a frozen ``Speed``; tests and experiments pin one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

SMOOTHING = 0.3
"""Weight of the newest measurement in each moving average."""
CPU_GUESS_S = 0.009
"""Seconds a frame on a CPU before any window is measured."""
GPU_GUESS_S = 0.0005
"""Seconds a frame on a GPU before any window is measured."""
NARROW_SLOWDOWN = 1.5
"""A frame on a narrow copy against the wide one, until a shared window is measured."""
MEASURING_FRAMES = 16
"""The shortest window that measures the fastest speed (a shorter one is mostly overhead)."""


def smoothed(average: float | None, sample: float) -> float:
    """``average`` moved toward ``sample`` by ``SMOOTHING`` (``sample`` itself when there is none)."""
    return sample if average is None else average + SMOOTHING * (sample - average)


@dataclass(frozen=True, slots=True)
class Speed:
    """The decoder's speed as a window decision reads it, in seconds a decoded frame."""

    recent_s: float
    """Over every window lately: converts a listener's buffer into frames, and says how long a
    window should take (what pausing it would lose)."""
    lone_s: float
    """Over the windows that ran alone lately: what a reply alone can sustain."""
    fastest_s: float | None = None
    """The fewest measured on a window of ``MEASURING_FRAMES`` or more (None: none yet)."""
    measured_shared_s: float | None = None
    """Over the windows that ran beside others lately (None: none yet)."""

    @classmethod
    def fixed(cls, frame_s: float) -> Speed:
        """A decoder whose every window takes ``frame_s`` a frame, alone (tests, experiments)."""
        return cls(frame_s, frame_s, frame_s)

    @property
    def opening_s(self) -> float | None:
        """What sizes an opening alone: the recent lone speed, never under the fastest measured
        (a machine's speed drifts below its best). None until a long window is measured."""
        return None if self.fastest_s is None else max(self.fastest_s, self.lone_s)

    @property
    def shared_s(self) -> float | None:
        """What sizes an opening beside others: measured, else guessed from the lone speed."""
        if self.measured_shared_s is not None:
            return self.measured_shared_s
        lone = self.opening_s
        return None if lone is None else lone * NARROW_SLOWDOWN

    def expected_s(self, frames: int, *, narrow: bool = False) -> float:
        """How long ``frames`` decoded frames should take (``narrow``: on a narrow copy)."""
        return self.recent_s * frames * (NARROW_SLOWDOWN if narrow else 1.0)


class SpeedEstimator:
    """Owns the decoder's measured speed; thread-safe (windows end on several threads)."""

    def __init__(self, guess_s: float) -> None:
        self._lock = threading.Lock()
        self._speed = Speed(guess_s, guess_s)

    def reading(self) -> Speed:
        return self._speed

    def measured(self, seconds: float, frames: int, *, alone: bool, still_alone: bool) -> None:
        """One window of ``frames`` took ``seconds``; it started ``alone`` (the wide copy) or beside
        others, and was ``still_alone`` as it ended. A window alone only part of the time moves
        the recent speed only."""
        cost = seconds / max(1, frames)
        with self._lock:
            s = self._speed
            lone = smoothed(s.lone_s, cost) if alone and still_alone else s.lone_s
            shared = smoothed(s.measured_shared_s, cost) if not alone else s.measured_shared_s
            fastest = s.fastest_s
            if frames >= MEASURING_FRAMES:
                fastest = cost if fastest is None else min(fastest, cost)
            self._speed = Speed(smoothed(s.recent_s, cost), lone, fastest, shared)
