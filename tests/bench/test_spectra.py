import numpy as np

from speakstream.bench.spectra import logmel, logmel_distance

RATE = 24_000


def _tone(seconds: float = 1.0, hz: float = 220.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * hz * t) + 0.05 * np.sin(2 * np.pi * 3 * hz * t)).astype(np.float32)


def test_a_signal_is_at_no_distance_from_itself_and_distance_is_symmetric() -> None:
    a, b = _tone(), _tone(hz=330.0)
    assert logmel_distance(a, a) == 0.0
    assert logmel_distance(a, b) == logmel_distance(b, a) > 1.0


def test_half_the_level_is_six_db_away_in_every_band() -> None:
    """The floor follows the peak, so a level change moves every band by the same amount."""
    a = _tone()
    assert abs(logmel_distance(a, 0.5 * a) - 20 * np.log10(2)) < 0.01


def test_signals_of_different_lengths_are_compared_over_the_shorter() -> None:
    a = _tone(1.0)
    assert logmel_distance(a, np.concatenate([a, np.ones(RATE, np.float32)])) == 0.0
    assert logmel(a).shape[1] <= 80  # 80 bands at most: the narrowest low ones merge
