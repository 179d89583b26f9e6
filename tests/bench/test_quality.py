"""DNSMOS and PLCMOS from the speechmos package: scores in range, and the same audio scores the same."""

import numpy as np

from speakstream.bench import quality


def _voice_like(seconds: float = 3.0, rate: int = 24_000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 3 * t)
    tone = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 8))
    return (0.1 * envelope * tone).astype(np.float32)


def test_dnsmos_scores_each_dimension_from_1_to_5() -> None:
    scores = quality.dnsmos(_voice_like(), 24_000)
    assert set(scores) == {"ovrl", "sig", "bak", "p808"}
    assert all(1.0 <= v <= 5.0 for v in scores.values())


def test_plcmos_is_the_same_for_the_same_audio_and_leaves_numpys_random_state_alone() -> None:
    audio = _voice_like()
    np.random.seed(7)
    expected_next = np.random.random()
    np.random.seed(7)
    first = quality.plcmos(audio, 24_000)
    assert np.random.random() == expected_next
    assert quality.plcmos(audio, 24_000) == first and 1.0 <= first <= 5.0
