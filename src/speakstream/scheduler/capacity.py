"""What the engine can make, measured: audio seconds a wall second with every lane busy.

Each chunk that ran beside other work tells how much audio a lane makes a second of its time (its
phonemes, front and windows, context and overheads included); the capacity is that rate, a moving
average, times the lanes. Until such a chunk is measured, the engine's own estimate from its
measured decoder speed stands in. Admission compares it with what the admitted replies ask for:
a listener plays one audio second a second.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from speakstream.engine.windows.speed import smoothed

MEASURED_AUDIO_S = 1.0
"""A chunk shorter than this measures nothing (mostly overhead)."""


@dataclass(frozen=True, slots=True)
class CapacityReading:
    capacity: float
    """Audio seconds a second the engine makes with every lane busy."""
    load: float
    """Audio seconds a second the admitted replies ask for (one each)."""
    measured: bool
    """``capacity`` is measured on this server (else the engine's estimate)."""

    @property
    def utilization(self) -> float:
        return self.load / self.capacity if self.capacity > 0 else float("inf")


class Capacity:
    def __init__(self, lanes: int, estimate: Callable[[], float]) -> None:
        self.lanes = lanes
        self._estimate = estimate
        self._lane_rate: float | None = None
        self._lock = threading.Lock()

    def chunk_done(self, audio_s: float, busy_s: float) -> None:
        """A chunk of ``audio_s`` took its lane ``busy_s`` while other work ran beside it."""
        if audio_s < MEASURED_AUDIO_S or busy_s <= 0:
            return
        with self._lock:
            self._lane_rate = smoothed(self._lane_rate, audio_s / busy_s)

    def audio_per_s(self) -> tuple[float, bool]:
        """The capacity, and whether it is measured."""
        rate = self._lane_rate
        if rate is None:
            return self._estimate(), False
        return self.lanes * rate, True
