"""What the split model's two graphs are fed, and the tensor names they share: the only part of
the model's graph surgery that serving needs (``graph`` builds the graphs, with ``onnx``, which a
server never imports: it costs 0.6 s of start-up)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

DURATIONS = "/encoder/Round_output_0"
FEATURES = "/encoder/MatMul_1_output_0"
"""The aligned features, [1, 512, frames]."""
F0 = "/encoder/Reshape_output_0"
"""The pitch curve, [1, 2 x frames] (two values per 600-sample frame)."""
ENERGY = "/encoder/Reshape_1_output_0"
"""The energy (N) curve, [1, 2 x frames]."""
PHASE = "phase"
"""The decoder's added input: the sine source's phase (in cycles, one per harmonic) at the first
frame of the window, [1, 1, harmonics]."""
SINE_SUM = "/decoder/decoder/generator/m_source/l_sin_gen/CumSum"
SINE_HARMONICS = "/decoder/decoder/generator/m_source/l_sin_gen/Constant_output_0"
SINE_RATE = "/decoder/decoder/generator/m_source/l_sin_gen/Constant_1_output_0"


def front_feed(tokens: Sequence[int], style: np.ndarray[Any, Any], speed: float) -> dict[str, Any]:
    """The front's (and the whole graph's) inputs for phoneme ``tokens`` (padded here)."""
    return {
        "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
        "style": style,
        "speed": np.array([speed], dtype=np.float32),
    }


def decoder_feed(
    front: Sequence[np.ndarray[Any, Any]],
    style: np.ndarray[Any, Any],
    phase: np.ndarray[Any, Any],
    start: int = 0,
    end: int | None = None,
) -> dict[str, Any]:
    """The decoder's inputs for frames ``[start, end)`` of the front's (features, F0, energy)
    outputs (two curve values a frame), its sine source at ``phase``."""
    features, f0, energy = front
    stop = features.shape[2] if end is None else end
    return {
        FEATURES: np.ascontiguousarray(features[:, :, start:stop]),
        F0: np.ascontiguousarray(f0[:, 2 * start : 2 * stop]),
        ENERGY: np.ascontiguousarray(energy[:, 2 * start : 2 * stop]),
        "style": style,
        PHASE: phase,
    }
