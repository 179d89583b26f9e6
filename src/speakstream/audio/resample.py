"""Streaming resampling with soxr (high quality, keeps filter state across chunks)."""

from __future__ import annotations

import numpy as np
import soxr
from numpy.typing import NDArray

SUPPORTED_RATES = (8_000, 16_000, 22_050, 24_000, 44_100, 48_000)


class StreamResampler:
    """Resamples a stream chunk by chunk; ``flush`` returns the filter's tail."""

    def __init__(self, in_rate: int, out_rate: int) -> None:
        self.in_rate, self.out_rate = in_rate, out_rate
        self._stream = (
            None if in_rate == out_rate else soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32", quality="HQ")
        )

    def process(self, samples: NDArray[np.float32]) -> NDArray[np.float32]:
        if self._stream is None:
            return samples
        return np.asarray(
            self._stream.resample_chunk(samples.astype(np.float32, copy=False), last=False), dtype=np.float32
        )

    def flush(self) -> NDArray[np.float32]:
        if self._stream is None:
            return np.zeros(0, np.float32)
        return np.asarray(self._stream.resample_chunk(np.zeros(0, np.float32), last=True), dtype=np.float32)
