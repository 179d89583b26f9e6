"""Plans run without the model: a decoder whose audio depends only on the absolute sample position
must come out of any window plan exactly as from one whole window."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from speakstream.engine.runtime.speed import Speed
from speakstream.engine.windows.planner import FRAME_S, FRAME_SAMPLES, opening_size
from speakstream.engine.windows.policy import BudgetPolicy, OpeningPolicy, SeamPolicy, SplitPolicy, WindowPolicy
from speakstream.engine.windows.stitch import sine_phase
from speakstream.engine.windows.stream import UtteranceWindows
from speakstream.types import SAMPLE_RATE, Load
from tests.engine.windows.fakes import EDGES, HARMONICS, UNIT, Harness, budgets, utterance, without_sustain


def _audio(
    harness: Harness,
    policy: WindowPolicy,
    *,
    opening: bool = True,
    loads: Callable[[], Load] = Load,
    boundaries: tuple[int, ...] = (),
) -> list[NDArray[np.float32]]:
    made = harness.decode(policy, opening=opening, loads=loads, boundaries=boundaries, speed=UNIT)
    return [samples for samples, _ in made]


@settings(max_examples=60, deadline=None)
@given(
    frames=st.integers(2, 400),
    first=st.integers(1, 40),
    growth=st.floats(1.0, 4.0),
    maximum=st.integers(1, 200),
    context=st.integers(1, 20),
    crossfade=st.integers(0, 200),
    opening=st.booleans(),
    given_budgets=st.none() | st.lists(st.floats(0.0, 500.0), max_size=30),
    paired=st.none() | st.booleans(),
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
    given_budgets: list[float] | None,
    paired: bool | None,
    data: st.DataObject,
) -> None:
    """``paired``: two narrow copies that decode a long window's halves at once when it may (True),
    or that may not now, another window running beside (False); None: none."""
    head = data.draw(st.integers(0, frames * FRAME_SAMPLES - 1))
    end = data.draw(st.integers(head + 1, frames * FRAME_SAMPLES))
    policy = WindowPolicy(
        opening=OpeningPolicy(least_frames=first, context_after_frames=data.draw(st.none() | st.integers(1, 20))),
        seams=SeamPolicy(
            context_frames=context,
            gap_context_frames=data.draw(st.integers(1, 20)),
            lead_context_frames=context,
            crossfade_samples=crossfade,
        ),
        budget=BudgetPolicy(
            later_first_frames=first * 2,
            growth=growth,
            most_frames=max(first, maximum),
            least_frames=data.draw(st.integers(1, 60)),
            sustain=0.0,
        ),
        split=SplitPolicy(frames=data.draw(st.integers(0, 120)), reach_frames=data.draw(st.integers(0, 20))),
    )
    boundaries = tuple(sorted(set(data.draw(st.lists(st.integers(0, frames), max_size=20)))))
    u = utterance(frames, head, end)
    given_loads = budgets(given_budgets) if given_budgets is not None else Load

    def loads() -> Load:  # paired False: another window runs beside, so no pair now
        return replace(given_loads(), in_flight=2) if paired is False else given_loads()

    harness = Harness(u, 2 if paired is not None else 0)
    windowed = _audio(harness, policy, opening=opening, loads=loads, boundaries=boundaries)
    whole = _audio(Harness(u), WindowPolicy.whole())
    assert len(whole) == 1
    assert sum(len(p) for p in windowed) == end - head  # the window lengths sum to the whole
    np.testing.assert_allclose(np.concatenate(windowed), whole[0], atol=1e-5)


def test_windows_decoded_in_pairs_may_be_twice_the_largest_and_each_half_is_decoded_at_once() -> None:
    policy = WindowPolicy(
        opening=OpeningPolicy(least_frames=16),
        budget=BudgetPolicy(growth=2.5, most_frames=160, later_first_frames=160),
        split=SplitPolicy(frames=96),
    )
    u = utterance(900, 0, 900 * FRAME_SAMPLES)
    paired = Harness(u, narrow=2)
    made = paired.decode(policy, speed=UNIT)
    sizes = [round(len(samples) / FRAME_SAMPLES) for samples, _ in made]
    assert sizes[:4] == [16, 40, 100, 250] and max(sizes) == 320  # up to 2 x 160
    halves = [plan.decodes for _, plan in made if len(plan.decodes) == 2]
    assert len(halves) == sum(1 for size in sizes if size >= 96)  # every long window, as two halves
    assert all(max(s.frames for s in pair) <= 160 + 2 * policy.seams.context_frames for pair in halves)
    assert paired.runner.paired_windows == len(halves)  # each pair decoded at once, on the two narrow copies
    beside = Harness(u, narrow=2).decode(policy, loads=lambda: Load(in_flight=2), speed=UNIT)
    without = Harness(u).decode(policy, speed=UNIT)
    assert [len(s) for s, _ in beside] == [len(s) for s, _ in without]  # no pair to be had now: as without pairs
    assert all(len(plan.decodes) == 1 for _, plan in beside)
    assert max(len(s) for s, _ in without) == 160 * FRAME_SAMPLES


def test_budgeted_windows_cost_no_more_than_the_budget() -> None:
    """Each window after the first (context included) fits in the budget it was given."""
    policy = without_sustain(replace(WindowPolicy(), budget=replace(WindowPolicy().budget, share=1.0)))
    given = [64.0, 90.0, 120.0, 400.0, 400.0]
    u = utterance(600, 20 * FRAME_SAMPLES, 560 * FRAME_SAMPLES)
    harness = Harness(u)
    loads = budgets([0.0, *given, *[400.0] * 20])  # the opening's load: its listener waits, no budget
    made = harness.decode(policy, loads=loads, speed=UNIT)
    spans = [end - start for start, end in harness.spans]
    assert sum(len(samples) for samples, _ in made) == 540 * FRAME_SAMPLES
    assert spans[0] == policy.opening.least_frames + policy.seams.lead_context_frames + 4  # 4 after the opening
    assert all(span <= budget for span, budget in zip(spans[1:-1], given, strict=False))


def test_the_carried_phase_is_the_running_sum_of_the_pitch() -> None:
    f0 = np.array([[100.0, 150.0, 0.0, 300.0]], dtype=np.float32)
    expected = np.mod(np.mod(np.outer(f0[0, :3], HARMONICS) / 24_000.0, 1.0).sum(axis=0), 1.0)
    np.testing.assert_allclose(sine_phase(f0, 3, HARMONICS, 24_000.0).ravel(), expected, rtol=1e-6)
    assert not sine_phase(f0, 0, HARMONICS, 24_000.0).any()


def _gaps_on_a_slow_decoder(policy: WindowPolicy, rtf: float, frames: int = 1600, opening: int | None = None) -> int:
    """Gaps a real-time listener hears when one long chunk is decoded at ``rtf`` (decoder seconds
    per decoded frame over a frame's audio), on a simulated clock. The buffer is read as the
    scheduler's ``PlaybackClock`` reads it (real time since the first piece, gaps not counted);
    ``opening``: sized by the planner at that speed, as ``opening_size`` gave it (None: the least)."""
    clock, made, gaps = 0.0, 0.0, 0
    started: float | None = None
    first: float | None = None
    frame_s = rtf * FRAME_S

    def decoded(start: int, stop: int) -> None:
        nonlocal clock
        clock += (stop - start) * frame_s

    def load() -> Load:
        return Load(buffered_s=0.0 if first is None else max(0.0, made - (clock - first)))

    harness = Harness(utterance(frames, 0, frames * FRAME_SAMPLES))
    harness.decoders[0].on_run = decoded
    speed = Speed(frame_s, frame_s, frame_s if opening is not None else None)
    steps = UtteranceWindows(harness.runner, policy, harness.u, opens_reply=True, edges=EDGES)
    while not steps.done:
        samples, _ = steps.next(load(), None, speed=speed)
        if started is None:
            started = first = clock
        elif made < clock - started:  # the listener ran dry before this piece came
            gaps += 1
            started = clock - made
        made += len(samples) / SAMPLE_RATE
    return gaps


def test_on_a_decoder_near_real_time_sustainable_windows_end_the_gaps() -> None:
    """Windows sized to a short buffer cost more than they play on a slowed decoder, and every one
    after the buffer runs out is a gap; a sustainable one makes a gap, and the buffer grows."""
    policy, off = WindowPolicy(), without_sustain(WindowPolicy())
    for rtf in (0.6, 0.7, 0.8):
        assert _gaps_on_a_slow_decoder(off, rtf=rtf) >= 40
        assert _gaps_on_a_slow_decoder(policy, rtf=rtf) == 1  # after the opening window
    assert _gaps_on_a_slow_decoder(policy, rtf=0.3) == _gaps_on_a_slow_decoder(off, rtf=0.3) == 0


@given(rtf=st.floats(0.02, 0.35))
def test_a_reply_opened_as_sized_for_its_decoder_plays_without_a_gap(rtf: float) -> None:
    """On a decoder as fast as the planner was told, the opening window and the short window after
    it (sized from the buffer, not the budget's least) keep the listener fed: no gap in a long chunk."""
    policy = WindowPolicy()
    opening = opening_size(policy, rtf * FRAME_S)
    assert opening < policy.budget.least_frames
    assert _gaps_on_a_slow_decoder(policy, rtf=rtf, opening=opening) == 0
