"""The derived graphs against the original export: same model, same speech."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from speakstream.engine.assets import GRAPHS
from speakstream.engine.decoding import FRAME_SAMPLES
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.phonemes import windows

pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def outputs(kokoro: KokoroEngine) -> dict[str, list[Any]]:
    """Each graph run on the same tokens, style and speed."""
    import onnxruntime as ort

    part = windows(kokoro.phonemizer.phonemize("Thanks for waiting, I found your booking."))[0]
    feed = {
        "tokens": np.array([[0, *part.tokens, 0]], dtype=np.int64),
        "style": kokoro.voice_bank.style("af_heart", len(part.tokens)),
        "speed": np.array([1.0], dtype=np.float32),
    }
    runs = {}
    for graph in GRAPHS:
        session = ort.InferenceSession(str(kokoro.assets.graph(graph)), providers=["CPUExecutionProvider"])
        runs[graph] = session.run(None, feed)
    return runs


def test_the_timed_graph_is_the_original_plus_durations(outputs: dict[str, list[Any]]) -> None:
    original, timed = outputs["original"], outputs["timed"]
    assert len(original) == 1 and len(timed) == 2
    np.testing.assert_array_equal(timed[0], original[0])
    assert timed[1].sum() * FRAME_SAMPLES == timed[0].size  # one duration per token, in 600-sample frames


def test_the_fast_graph_speaks_the_same_audio(outputs: dict[str, list[Any]]) -> None:
    original, fast = outputs["original"][0].ravel(), outputs["fast"][0].ravel()
    np.testing.assert_array_equal(outputs["fast"][1], outputs["timed"][1])  # the front is untouched
    assert fast.size == original.size
    snr_db = 10 * np.log10(np.sum(original**2) / np.sum((fast - original) ** 2))
    assert snr_db > 12.0  # measured 18 dB: float activations instead of int8-quantised ones
