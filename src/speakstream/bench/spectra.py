"""How far apart two renderings of the same speech sound: log spectra in log-spaced bands."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray


def logmel(samples: NDArray[np.float32], n_fft: int = 1024, hop: int = 256, bands: int = 80) -> NDArray[Any]:
    """A log spectrum in 80 log-spaced bands, floored 80 dB under its peak (silence counts little)."""
    padded = np.pad(samples.astype(np.float64), (0, n_fft))
    frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop] * np.hanning(n_fft)
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    edges = np.unique(np.geomspace(1, power.shape[1] - 1, bands + 1).astype(int))
    db = 10 * np.log10(np.add.reduceat(power, edges, axis=1) + 1e-10)
    floored: NDArray[Any] = np.maximum(db, db.max() - 80)
    return floored


def logmel_distance(a: NDArray[np.float32], b: NDArray[np.float32]) -> float:
    """Mean absolute difference of two signals' ``logmel``, in dB, over their common length."""
    n = min(len(a), len(b))
    return float(np.abs(logmel(a[:n]) - logmel(b[:n])).mean())
