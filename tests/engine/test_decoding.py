"""Windowed decoding without the model: a decoder whose audio depends only on the absolute sample
position must come out of any window plan exactly as from one whole window."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from speakstream.engine.decoding import FRAME_SAMPLES, WindowPolicy, decode_windows, sine_phase

HARMONICS = np.arange(1.0, 10.0)


def _run(frames: int, head: int, end: int, policy: WindowPolicy, opening: bool = True) -> list[NDArray[np.float32]]:
    f0 = np.linspace(100.0, 220.0, 2 * frames, dtype=np.float32).reshape(1, -1)

    def decode(start: int, stop: int, phase: NDArray[np.float32]) -> NDArray[np.float32]:
        assert phase.shape == (1, 1, 9)
        np.testing.assert_allclose(phase, sine_phase(f0, 2 * start, HARMONICS, 24_000.0))
        positions = np.arange(start * FRAME_SAMPLES, stop * FRAME_SAMPLES, dtype=np.float64)
        return (0.5 * np.sin(positions / 37.0)).astype(np.float32)

    pieces = decode_windows(
        decode, f0, frames, head=head, end=end, harmonics=HARMONICS, rate=24_000.0, policy=policy, opening=opening
    )
    return [samples for samples, _ in pieces]


@settings(max_examples=60, deadline=None)
@given(
    frames=st.integers(2, 400),
    first=st.integers(1, 40),
    growth=st.floats(1.0, 4.0),
    maximum=st.integers(1, 200),
    context=st.integers(1, 20),
    crossfade=st.integers(0, 200),
    opening=st.booleans(),
    data=st.data(),
)
def test_any_window_plan_gives_the_whole_decode(
    frames: int,
    first: int,
    growth: float,
    maximum: int,
    context: int,
    crossfade: int,
    opening: bool,
    data: st.DataObject,
) -> None:
    head = data.draw(st.integers(0, frames * FRAME_SAMPLES - 1))
    end = data.draw(st.integers(head + 1, frames * FRAME_SAMPLES))
    policy = WindowPolicy(
        first_frames=first,
        later_first_frames=first * 2,
        growth=growth,
        max_frames=max(first, maximum),
        context_frames=context,
        first_context_frames=context,
        crossfade_samples=crossfade,
    )
    windowed = _run(frames, head, end, policy, opening)
    whole = _run(frames, head, end, WindowPolicy.whole())
    assert len(whole) == 1
    assert sum(len(p) for p in windowed) == end - head  # the window lengths sum to the whole
    np.testing.assert_allclose(np.concatenate(windowed), whole[0], atol=1e-5)


def test_the_plan_tiles_the_frames_and_grows() -> None:
    policy = WindowPolicy(first_frames=12, growth=2.5, max_frames=160, later_first_frames=160)
    plan = policy.plan(3, 500)
    assert plan[0] == (3, 15) and plan[-1][1] == 500
    assert all(a2 == b1 for (_, b1), (a2, _) in itertools.pairwise(plan))
    sizes = [b - a for a, b in plan]
    assert all(s <= 160 for s in sizes[:-1]) and sizes[1] > sizes[0]
    assert policy.plan(0, 150, opening=False) == [(0, 150)]  # a later chunk of under 4 s: one window


def test_the_carried_phase_is_the_running_sum_of_the_pitch() -> None:
    f0 = np.array([[100.0, 150.0, 0.0, 300.0]], dtype=np.float32)
    expected = np.mod(np.mod(np.outer(f0[0, :3], HARMONICS) / 24_000.0, 1.0).sum(axis=0), 1.0)
    np.testing.assert_allclose(sine_phase(f0, 3, HARMONICS, 24_000.0).ravel(), expected, rtol=1e-6)
    assert not sine_phase(f0, 0, HARMONICS, 24_000.0).any()
