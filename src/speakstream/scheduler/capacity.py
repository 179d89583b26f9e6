"""What the engine can make, measured: audio seconds a wall second with every lane busy.

Best, what it delivered: the audio made over spans of wall time in which every lane had work (the
turns' idle moments, openings' small windows and priority rules included). Until such a span is
measured, each chunk that ran beside other work tells how much audio a lane makes a second of its
own time, times the lanes (which leaves the moments between turns out, and reads high); until
then, the engine's estimate from its decoder speed. Admission compares it with what the admitted
replies ask for: a listener plays one audio second a second.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from speakstream.engine.runtime.speed import smoothed

MEASURED_AUDIO_S = 1.0
"""A chunk shorter than this measures nothing (mostly overhead)."""
SPAN_S = 2.0
"""Wall seconds of saturated work one sample of the delivered rate spans (windows end in bursts)."""


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
        self._delivered: float | None = None
        self._span: tuple[float, float] | None = None
        """The saturated span being measured: when it began, and the audio made since."""
        self._lock = threading.Lock()

    def chunk_done(self, audio_s: float, busy_s: float) -> None:
        """A chunk of ``audio_s`` took its lane ``busy_s`` while other work ran beside it."""
        if audio_s < MEASURED_AUDIO_S or busy_s <= 0:
            return
        with self._lock:
            self._lane_rate = smoothed(self._lane_rate, audio_s / busy_s)

    def made(self, audio_s: float, now: float, *, saturated: bool) -> None:
        """A piece of ``audio_s`` made at ``now``; ``saturated``: every lane had work as it ended.
        A span starts at a saturated piece (its audio was made before) and is sampled once it
        lasts ``SPAN_S``; a piece made with a lane idle ends it unsampled."""
        with self._lock:
            if not saturated:
                self._span = None
            elif self._span is None:
                self._span = (now, 0.0)
            else:
                began, audio = self._span[0], self._span[1] + audio_s
                if now - began < SPAN_S:
                    self._span = (began, audio)
                else:
                    self._delivered = smoothed(self._delivered, audio / (now - began))
                    self._span = (now, 0.0)

    def audio_per_s(self) -> tuple[float, bool]:
        """The capacity, and whether it is measured."""
        if self._delivered is not None:
            return self._delivered, True
        rate = self._lane_rate
        if rate is None:
            return self._estimate(), False
        return self.lanes * rate, True
