"""Windows joined into one seamless stream: the sine source's phase carried into each window, and
each window's audio crossfaded into the one before, trimmed to the chunk's edges and faded there.

The decoder is convolutional, so a window decoded with context on each side gives its middle
exactly; two things in it see the whole sequence. The sine source's phase is a running sum over the
F0 curve: ``sine_phase`` computes the sum over the frames before a window and the decoder adds it
(its ``phase`` input), so each window's excitation continues the last one's. The AdaIN instance
norms take their statistics over the window instead of the utterance (``BudgetPolicy.least_frames``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

RMS_FRAME = 240
"""10 ms at 24 kHz: the frame the tail's loudness is measured over."""


def sine_phase(f0: NDArray[np.float32], upto: int, harmonics: NDArray[np.float64], rate: float) -> NDArray[np.float32]:
    """The sine source's phase in cycles, per harmonic, after F0 steps ``[0, upto)``: what the
    decoder's running sum would hold there had it run from the start ([1, 1, harmonics])."""
    steps = f0.reshape(-1)[:upto].astype(np.float64)
    cycles = np.mod(np.mod(steps[:, None] * harmonics[None, :] / rate, 1.0).sum(axis=0), 1.0)
    phase: NDArray[np.float32] = cycles.reshape(1, 1, -1).astype(np.float32)
    return phase


@dataclass(slots=True)
class Stitcher:
    """Joins window audio: crossfades seams, trims to ``[head, end)`` samples, fades both ends.

    The end is the durations' (the last word's end plus the tail, silence added past the model's
    frames) unless the speech fades out before it: in the last window the tail is measured from
    the last 10 ms frame within ``tail_threshold_db`` of the loudest one so far, as the whole-chunk
    trim does, but never cut before ``speech_end`` (where the last word's timestamp ends), so word
    timestamps stay inside the audio."""

    head: int
    end: int
    crossfade: int
    fade: int
    tail: int = 0
    tail_threshold_db: float = -42.0
    speech_end: int = 0
    held: NDArray[np.float32] | None = None
    peak: float = 0.0

    def add(self, segment: NDArray[np.float32], start: int, last: bool) -> NDArray[np.float32]:
        """``segment`` starts at sample ``start`` (and overlaps the held tail by 2 x crossfade)."""
        segment = segment.astype(np.float32, copy=True)
        if self.held is not None:
            n = len(self.held)
            ramp = np.linspace(0.0, 1.0, n + 2, dtype=np.float32)[1:-1]
            segment[:n] = self.held * (1.0 - ramp) + segment[:n] * ramp
        keep = len(segment) if last else len(segment) - 2 * self.crossfade
        self.held = None if last else segment[keep:]
        out = segment[:keep]
        loudness = _frame_rms(out)
        self.peak = max(self.peak, float(loudness.max(initial=0.0)))
        if last and self.tail and self.peak > 0:
            loud = np.flatnonzero(20 * np.log10(loudness / self.peak + 1e-12) > self.tail_threshold_db)
            if loud.size:
                faded = start + int((loud[-1] + 1) * RMS_FRAME) + self.tail
                self.end = max(self.head + 1, min(self.end, max(faded, self.speech_end)))
        piece = self._trim(out, start)
        if last and start + len(out) < self.end:  # the tail runs past the model's frames
            piece = np.concatenate([piece, np.zeros(self.end - max(start + len(out), self.head), np.float32)])
        return piece

    def _trim(self, out: NDArray[np.float32], start: int) -> NDArray[np.float32]:
        lo, hi = max(start, self.head), max(min(start + len(out), self.end), max(start, self.head))
        piece = out[lo - start : hi - start]
        if self.fade and len(piece):
            positions = np.arange(lo, hi, dtype=np.float64)
            gain = np.minimum((positions - self.head + 1) / self.fade, (self.end - positions) / self.fade)
            piece *= np.clip(gain, 0.0, 1.0).astype(np.float32)
        return piece


def _frame_rms(samples: NDArray[np.float32]) -> NDArray[np.float64]:
    count = len(samples) // RMS_FRAME
    frames = samples[: count * RMS_FRAME].reshape(count, RMS_FRAME).astype(np.float64)
    rms: NDArray[np.float64] = np.sqrt(np.mean(frames * frames, axis=1))
    return rms
