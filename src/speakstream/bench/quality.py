"""Objective quality scores of speech without a reference: DNSMOS (how clean and natural it
sounds) and PLCMOS (how well gaps and seams are concealed), both the ONNX models the
``speechmos`` package ships, run at their 16 kHz."""

from __future__ import annotations

import numpy as np
import soxr
from numpy.typing import NDArray

RATE = 16_000


def _at_16k(samples: NDArray[np.float32], sample_rate: int) -> NDArray[np.float32]:
    audio = samples if sample_rate == RATE else soxr.resample(samples, sample_rate, RATE)
    return np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0)


def dnsmos(samples: NDArray[np.float32], sample_rate: int) -> dict[str, float]:
    """DNSMOS P.835 (``ovrl``, ``sig``, ``bak``) and P.808 (``p808``), 1-5, averaged over 9 s
    windows a second apart (a shorter reply is repeated to 9 s, as the model expects)."""
    from speechmos import dnsmos as model

    scores = model.run(_at_16k(samples, sample_rate), sr=RATE)
    return {key: round(float(scores[f"{key}_mos"]), 3) for key in ("ovrl", "sig", "bak", "p808")}


def plcmos(samples: NDArray[np.float32], sample_rate: int) -> float:
    """PLCMOS v2, 1-5; its 15 random rater embeddings drawn from a fixed seed, so the same audio
    always scores the same."""
    from speechmos import plcmos as model

    state = np.random.get_state()
    np.random.seed(0)
    try:
        return round(float(model.run(_at_16k(samples, sample_rate), sr=RATE)["plcmos"]), 3)
    finally:
        np.random.set_state(state)
