"""The speed estimator: which window moves which speed, by one rule."""

from __future__ import annotations

import pytest

from speakstream.engine.runtime.speed import MEASURING_FRAMES, NARROW_SLOWDOWN, SMOOTHING, Speed, SpeedEstimator


def test_until_measured_the_speed_is_the_guess_and_no_opening_speed_is_known() -> None:
    speed = SpeedEstimator(0.009).reading()
    assert (speed.recent_s, speed.lone_s) == (0.009, 0.009)
    assert speed.opening_s is None and speed.shared_s is None


def test_a_window_alone_moves_the_recent_and_lone_speeds_and_a_long_one_the_fastest() -> None:
    estimator = SpeedEstimator(0.01)
    estimator.measured(0.1, 20, alone=True, still_alone=True)  # 5 ms a frame
    speed = estimator.reading()
    assert speed.recent_s == pytest.approx(0.01 + SMOOTHING * (0.005 - 0.01))
    assert speed.lone_s == speed.recent_s and speed.fastest_s == 0.005
    assert speed.opening_s == speed.lone_s  # never under the fastest: the recent lone speed here
    estimator.measured(0.01, MEASURING_FRAMES - 1, alone=True, still_alone=True)  # short: mostly overhead
    assert estimator.reading().fastest_s == 0.005


def test_a_window_beside_others_measures_the_shared_speed_and_a_mixed_one_neither() -> None:
    estimator = SpeedEstimator(0.01)
    estimator.measured(0.6, 40, alone=False, still_alone=False)  # 15 ms a frame on a narrow copy
    speed = estimator.reading()
    assert speed.measured_shared_s == 0.015 and speed.lone_s == 0.01
    estimator.measured(0.2, 40, alone=True, still_alone=False)  # alone only part of the time
    after = estimator.reading()
    assert after.lone_s == 0.01 and after.measured_shared_s == 0.015
    assert after.recent_s == pytest.approx(speed.recent_s + SMOOTHING * (0.005 - speed.recent_s))


def test_the_shared_speed_is_guessed_from_the_lone_one_until_measured() -> None:
    speed = Speed(0.01, 0.01, 0.008)
    assert speed.shared_s == pytest.approx(0.01 * NARROW_SLOWDOWN)
    assert Speed(0.01, 0.01, 0.008, measured_shared_s=0.02).shared_s == 0.02


def test_expected_time_of_a_window() -> None:
    speed = Speed.fixed(0.01)
    assert speed.expected_s(40) == pytest.approx(0.4)
    assert speed.expected_s(40, narrow=True) == pytest.approx(0.4 * NARROW_SLOWDOWN)
