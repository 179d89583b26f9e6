"""Windowed decoding without the model: a decoder whose audio depends only on the absolute sample
position must come out of any window plan exactly as from one whole window."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from speakstream.engine.decoding import (
    FRAME_SAMPLES,
    ListenerBudget,
    Pairs,
    Span,
    WindowPolicy,
    decode_windows,
    sine_phase,
)
from speakstream.types import SAMPLE_RATE

HARMONICS = np.arange(1.0, 10.0)


def _run(
    frames: int,
    head: int,
    end: int,
    policy: WindowPolicy,
    opening: bool = True,
    budgets: list[float] | None = None,
    boundaries: list[int] | None = None,
    paired: bool | None = None,
    pairs_made: list[tuple[Span, Span]] | None = None,
) -> list[NDArray[np.float32]]:
    """``paired``: a long window's halves decoded by ``Pairs`` (None: no pairs), which records
    each pair's spans in ``pairs_made``."""
    f0 = np.linspace(100.0, 220.0, 2 * frames, dtype=np.float32).reshape(1, -1)

    def decode(start: int, stop: int, phase: NDArray[np.float32]) -> NDArray[np.float32]:
        assert phase.shape == (1, 1, 9)
        np.testing.assert_allclose(phase, sine_phase(f0, 2 * start, HARMONICS, 24_000.0))
        positions = np.arange(start * FRAME_SAMPLES, stop * FRAME_SAMPLES, dtype=np.float64)
        return (0.5 * np.sin(positions / 37.0)).astype(np.float32)

    def decode_pair(first: Span, second: Span) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        if pairs_made is not None:
            pairs_made.append((first, second))
        return decode(*first), decode(*second)

    given = iter(budgets or [])
    pieces = decode_windows(
        decode,
        f0,
        frames,
        head=head,
        end=end,
        harmonics=HARMONICS,
        rate=24_000.0,
        policy=policy,
        opening=opening,
        budget=(lambda: next(given, None)) if budgets is not None else None,
        boundaries=boundaries or (),
        pairs=None if paired is None else Pairs(decode_pair, lambda: paired),
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
    budgets=st.none() | st.lists(st.floats(0.0, 500.0), max_size=30),
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
    budgets: list[float] | None,
    paired: bool | None,
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
        gap_context_frames=data.draw(st.integers(1, 20)),
        min_frames=data.draw(st.integers(1, 60)),
        lead_context_frames=context,
        opening_context_frames=data.draw(st.none() | st.integers(1, 20)),
        crossfade_samples=crossfade,
        split_frames=data.draw(st.integers(0, 120)),
        split_reach_frames=data.draw(st.integers(0, 20)),
    )
    boundaries = sorted(set(data.draw(st.lists(st.integers(0, frames), max_size=20))))
    windowed = _run(frames, head, end, policy, opening, budgets, boundaries, paired)
    whole = _run(frames, head, end, WindowPolicy.whole())
    assert len(whole) == 1
    assert sum(len(p) for p in windowed) == end - head  # the window lengths sum to the whole
    np.testing.assert_allclose(np.concatenate(windowed), whole[0], atol=1e-5)


def test_a_long_window_is_split_at_the_word_gap_nearest_its_middle() -> None:
    policy = WindowPolicy(split_frames=96, split_reach_frames=8, first_frames=16)
    assert policy.halves(0, 95, [40]) == ((0, 95),)  # short: one inference
    assert policy.halves(0, 160, [60, 75, 90]) == ((0, 75), (75, 160))  # the gap nearest 80
    assert policy.halves(0, 160, [60, 95]) == ((0, 80), (80, 160))  # none within 8 frames: the middle
    assert WindowPolicy(split_frames=0).halves(0, 300, []) == ((0, 300),)  # never
    close = WindowPolicy(split_frames=8, split_reach_frames=20, first_frames=4)
    assert close.halves(0, 32, [0, 2, 30]) == ((0, 16), (16, 32))  # no half shorter than 4 frames
    assert WindowPolicy.whole().halves(0, 1000, []) == ((0, 1000),)  # whole decoding stays whole


def test_windows_decoded_in_pairs_may_be_twice_the_largest_and_each_half_is_decoded_at_once() -> None:
    policy = WindowPolicy(first_frames=16, growth=2.5, max_frames=160, later_first_frames=160, split_frames=96)
    made: list[tuple[Span, Span]] = []
    pieces = _run(900, 0, 900 * FRAME_SAMPLES, policy, paired=True, pairs_made=made)
    sizes = [round(len(p) / FRAME_SAMPLES) for p in pieces]
    assert sizes[:4] == [16, 40, 100, 250] and max(sizes) == 320  # up to 2 x 160
    halves = [(a[1] - a[0], b[1] - b[0]) for a, b in made]
    assert len(made) == sum(1 for size in sizes if size >= 96)  # every long window, as two halves
    assert all(max(h) <= 160 + 2 * policy.context_frames for h in halves)  # each half no longer than a window
    made.clear()
    unpaired = _run(900, 0, 900 * FRAME_SAMPLES, policy, paired=False, pairs_made=made)
    without = _run(900, 0, 900 * FRAME_SAMPLES, policy)
    assert [len(p) for p in unpaired] == [len(p) for p in without]  # no pair to be had now: as without pairs
    assert made == [] and max(len(p) for p in without) == 160 * FRAME_SAMPLES


def test_the_plan_tiles_the_frames_and_grows() -> None:
    policy = WindowPolicy(first_frames=12, growth=2.5, max_frames=160, later_first_frames=160)
    plan = policy.plan(3, 500)
    assert plan[0] == (3, 15) and plan[-1][1] == 500
    assert all(a2 == b1 for (_, b1), (a2, _) in itertools.pairwise(plan))
    sizes = [b - a for a, b in plan]
    assert all(s <= 160 for s in sizes[:-1]) and sizes[1] > sizes[0]
    assert policy.plan(0, 150, opening=False) == [(0, 150)]  # a later chunk of under 4 s: one window


def test_a_budget_sizes_windows_to_what_the_listener_has_buffered() -> None:
    policy = WindowPolicy(first_frames=12, min_frames=40, max_frames=160, context_frames=12, safety=1.0)
    assert policy.size(0, 0, opening=True, budget=500.0) == 12  # the listener is waiting: small
    assert policy.size(1, 12, opening=True, budget=100.0) == 76  # 100 frames of compute: 76 + 2 x 12 of context
    assert policy.size(1, 12, opening=True, budget=0.0) == 12  # nothing buffered after a short window: as short
    assert policy.size(1, 40, opening=True, budget=0.0) == 40  # ... else the smallest that sounds right
    assert policy.size(2, 12, opening=True, budget=0.0) == 40
    assert policy.size(0, 0, opening=False, budget=1000.0) == 160  # a later chunk: up to the largest
    assert policy.size(0, 0, opening=False, budget=30.0) == 12  # ... but small when its listener is waiting
    assert policy.size(2, 40, opening=True, budget=float("inf")) == 160  # no limit: the largest


def test_budgeted_windows_cost_no_more_than_the_budget() -> None:
    """Each window after the first (context included) fits in the budget it was given."""
    policy = WindowPolicy(safety=1.0)
    spans: list[int] = []
    budgets = [64.0, 90.0, 120.0, 400.0, 400.0]
    f0 = np.full((1, 2 * 600), 120.0, dtype=np.float32)

    def decode(start: int, stop: int, phase: NDArray[np.float32]) -> NDArray[np.float32]:
        spans.append(stop - start)
        return np.zeros((stop - start) * FRAME_SAMPLES, np.float32)

    given = iter(budgets)
    pieces = decode_windows(
        decode,
        f0,
        600,
        head=20 * FRAME_SAMPLES,
        end=560 * FRAME_SAMPLES,
        harmonics=HARMONICS,
        rate=24_000.0,
        policy=policy,
        budget=lambda: next(given, 400.0),
    )
    assert sum(len(p) for p, _ in pieces) == 540 * FRAME_SAMPLES
    assert spans[0] == policy.first_frames + policy.lead_context_frames + policy.opening_context_frames
    assert all(span <= budget for span, budget in zip(spans[1:-1], budgets, strict=False))


FRAME_S = FRAME_SAMPLES / SAMPLE_RATE
"""A frame's audio, in seconds."""


def _window(policy: WindowPolicy, budget: float) -> int:
    return policy.size(2, 32, opening=True, budget=budget)


def _plays_longer_than_it_costs(policy: WindowPolicy, window: int, frame_s: float) -> bool:
    return (window + 2 * policy.context_frames) * frame_s < window * FRAME_S


@given(rtf=st.floats(0.05, 0.99), budget=st.floats(0.0, 2000.0))
def test_a_sustained_budget_keeps_a_window_that_plays_longer_than_it_costs_or_makes_one(
    rtf: float, budget: float
) -> None:
    policy, frame_s = WindowPolicy(), rtf * FRAME_S
    sustained = policy.sustained(budget, frame_s)
    window = _window(policy, sustained)
    assert sustained >= budget  # kept, or raised
    assert _plays_longer_than_it_costs(policy, window, frame_s) or window == policy.max_frames


def test_a_decoder_slower_than_real_time_gets_the_largest_window() -> None:
    policy = WindowPolicy()
    assert _window(policy, policy.sustained(10.0, 1.2 * FRAME_S)) == policy.max_frames


def test_on_a_fast_decoder_every_budget_stays_as_it_is() -> None:
    """At the decoder's quiet speed on 2 cores (about 9 ms a decoded frame, RTF 0.35) even the
    smallest window plays longer than it costs: what the listener has buffered sizes them."""
    policy = WindowPolicy()
    assert all(policy.sustained(b, 0.35 * FRAME_S) == b for b in (0.0, 10.0, 57.0, 200.0))


def _budget(readings: list[float | None], alone: bool = True, policy: WindowPolicy | None = None) -> ListenerBudget:
    given = iter(readings)
    return ListenerBudget(policy or WindowPolicy(), lambda: next(given), lambda: (0.015, 0.02), lambda: alone)


def test_a_lone_reply_gets_a_window_that_keeps_up_whatever_its_buffer() -> None:
    policy = WindowPolicy()
    raised = policy.sustained(0.0, 0.02)  # at the lone speed
    budget = _budget([0.0, 0.3, 10.0])
    assert [budget(), budget(), budget()] == [raised, raised, 10.0 / 0.015]
    assert raised > 0.3 / 0.015


def test_a_listener_budget_keeps_to_the_buffer_beside_other_sessions_or_without_sustain() -> None:
    shared = _budget([0.0, 0.6], alone=False)
    assert [shared(), shared()] == [0.0, 40.0]
    off = _budget([0.0, 0.6], policy=WindowPolicy(sustain=0.0))
    assert [off(), off()] == [0.0, 40.0]
    assert _budget([None])() is None


def _gaps_on_a_slow_decoder(policy: WindowPolicy, rtf: float, frames: int = 1600, opening: int | None = None) -> int:
    """Gaps a real-time listener hears when one long chunk is decoded at ``rtf`` (decoder seconds
    per decoded frame over a frame's audio), on a simulated clock. The budget reads the buffer as
    the scheduler's ``PlaybackClock`` does (real time since the first piece, gaps not counted)."""
    clock, made, started, gaps = 0.0, 0.0, None, 0
    first: float | None = None
    frame_s = rtf * FRAME_S

    def ahead() -> float:
        return 0.0 if first is None else max(0.0, made - (clock - first))

    def decode(start: int, stop: int, phase: NDArray[np.float32]) -> NDArray[np.float32]:
        nonlocal clock
        clock += (stop - start) * frame_s
        return np.zeros((stop - start) * FRAME_SAMPLES, np.float32)

    f0 = np.full((1, 2 * frames), 120.0, dtype=np.float32)
    budget = ListenerBudget(policy, ahead, lambda: (frame_s, frame_s), lambda: True)
    for piece, _ in decode_windows(
        decode,
        f0,
        frames,
        head=0,
        end=frames * FRAME_SAMPLES,
        harmonics=HARMONICS,
        rate=24_000.0,
        policy=policy,
        budget=budget,
        opening_frames=opening,
    ):
        if started is None:
            started = first = clock
        elif made < clock - started:  # the listener ran dry before this piece came
            gaps += 1
            started = clock - made
        made += len(piece) / SAMPLE_RATE
    return gaps


def test_on_a_decoder_near_real_time_sustainable_windows_end_the_gaps() -> None:
    """Windows sized to a short buffer cost more than they play on a slowed decoder, and every one
    after the buffer runs out is a gap; a sustainable one makes a gap, and the buffer grows."""
    policy = WindowPolicy()
    for rtf in (0.6, 0.7, 0.8):
        assert _gaps_on_a_slow_decoder(WindowPolicy(sustain=0.0), rtf=rtf) >= 40
        assert _gaps_on_a_slow_decoder(policy, rtf=rtf) == 1  # after the opening window
    assert _gaps_on_a_slow_decoder(policy, rtf=0.3) == _gaps_on_a_slow_decoder(WindowPolicy(sustain=0.0), rtf=0.3) == 0


def test_a_seam_between_words_is_decoded_with_less_context_than_one_inside_a_word() -> None:
    policy = WindowPolicy(
        first_frames=20,
        min_frames=32,
        max_frames=160,
        context_frames=12,
        gap_context_frames=8,
        opening_context_frames=None,
    )
    spans = _spans(policy, 300, 250, boundaries=[55])
    # windows (0, 20) (20, 55) (55, 180) (180, 250): the seams at 20 and 180 fall inside words, 55 between
    assert spans == [(0, 32), (8, 63), (47, 192), (168, 262)]


def _spans(
    policy: WindowPolicy, frames: int, end: int, opening: bool = True, boundaries: list[int] | None = None
) -> list[tuple[int, int]]:
    """The frames each window is decoded over (context included) for frames ``[0, end)`` of ``frames``."""
    made: list[tuple[int, int]] = []
    f0 = np.full((1, 2 * frames), 120.0, dtype=np.float32)

    def decode(start: int, stop: int, phase: NDArray[np.float32]) -> NDArray[np.float32]:
        made.append((start, stop))
        return np.zeros((stop - start) * FRAME_SAMPLES, np.float32)

    pieces = decode_windows(
        decode,
        f0,
        frames,
        head=0,
        end=end * FRAME_SAMPLES,
        harmonics=HARMONICS,
        rate=24_000.0,
        policy=policy,
        opening=opening,
        boundaries=boundaries or (),
    )
    assert sum(len(p) for p, _ in pieces) == end * FRAME_SAMPLES
    return made


def test_the_window_that_opens_a_reply_takes_its_own_context_after_it() -> None:
    policy = WindowPolicy(
        first_frames=20, min_frames=32, context_frames=12, gap_context_frames=8, opening_context_frames=4
    )
    # the opening window (0, 20) ends 4 frames on, not 12; the next one starts with the seam's own 12
    assert _spans(policy, 300, 250)[:2] == [(0, 24), (8, 82)]  # (20, 70) from 8 to 82
    # a later chunk's first window is no opening: its seam takes the seam's context
    assert _spans(policy, 300, 250, opening=False)[0] == (0, 172)


def test_the_carried_phase_is_the_running_sum_of_the_pitch() -> None:
    f0 = np.array([[100.0, 150.0, 0.0, 300.0]], dtype=np.float32)
    expected = np.mod(np.mod(np.outer(f0[0, :3], HARMONICS) / 24_000.0, 1.0).sum(axis=0), 1.0)
    np.testing.assert_allclose(sine_phase(f0, 3, HARMONICS, 24_000.0).ravel(), expected, rtol=1e-6)
    assert not sine_phase(f0, 0, HARMONICS, 24_000.0).any()


def test_later_seams_move_back_between_words() -> None:
    policy = WindowPolicy(first_frames=20, min_frames=32, snap_frames=16, growth=2.5, max_frames=160)
    plain = policy.plan(0, 100)
    assert plain == [(0, 20), (20, 70), (70, 100)]
    snapped = list(policy.windows(0, 100, boundaries=[10, 55, 90]))
    assert snapped == [(0, 20), (20, 55), (55, 100)]  # the first window keeps its size; 70 -> 55, a word gap
    # not moved: a boundary at the seam, too far back, or leaving a short window or rest:
    assert list(policy.windows(0, 100, boundaries=[70])) == plain
    assert list(policy.windows(0, 100, boundaries=[50])) == plain  # 50 is more than 16 frames back
    assert list(policy.windows(0, 100, boundaries=[30])) == plain  # (20, 30) would be under first_frames
    assert list(policy.windows(0, 100, boundaries=[90])) == plain  # (90, 100) would be under first_frames
    # with no boundary behind, a little forward (within the budget's safety share), never more:
    assert list(policy.windows(0, 100, boundaries=[73])) == [(0, 20), (20, 73), (73, 100)]
    assert list(policy.windows(0, 100, boundaries=[75])) == plain
    # a window shorter than min_frames is better than a seam inside a word (planned (0, 39)):
    assert next(policy.windows(0, 100, opening=False, budget=lambda: 84.0, boundaries=[25])) == (0, 25)
    # a later chunk's first window (sized by the budget, not for a waiting listener) snaps too:
    later = list(policy.windows(0, 300, opening=False, budget=lambda: 100.0, boundaries=[40, 120]))
    assert later[0] == (0, 40)  # planned (0, 51): int(100 x 0.75) - 2 x 12


def test_the_opening_seam_moves_forward_to_a_word_gap_within_its_reach() -> None:
    """The opening window may end up to ``opening_snap_frames`` later at a word gap, never
    earlier (its audio covers the next window's compute), and the window after it starts with 8
    frames of context, not 12 (the opening window with its seam's context after it:
    ``opening_context_frames`` None)."""
    policy = WindowPolicy(
        first_frames=20,
        min_frames=32,
        context_frames=12,
        gap_context_frames=8,
        opening_context_frames=None,
        opening_snap_frames=4,
    )
    assert next(policy.windows(0, 100, boundaries=[21, 24])) == (0, 21)  # the first gap at or after 20
    assert next(policy.windows(0, 100, boundaries=[20])) == (0, 20)
    assert next(policy.windows(0, 100, boundaries=[24])) == (0, 24)
    assert next(policy.windows(0, 100, boundaries=[25])) == (0, 20)  # beyond its reach
    assert next(policy.windows(0, 100, boundaries=[12, 18])) == (0, 20)  # never back
    assert next(policy.windows(0, 42, boundaries=[23])) == (0, 20)  # (23, 42) would be under 20 frames
    spans = _spans(policy, 120, 100, boundaries=[22])
    assert spans[:2] == [(0, 30), (14, 84)]  # (0, 22) with 8 after it; (22, 72) with 8 before it


def test_a_crowded_opening_reaches_less_far_for_a_word_gap() -> None:
    """A reply's opening reaches 8 frames for a word gap by default; a crowded one 4: each of its
    frames delays every listener behind it."""
    policy = WindowPolicy(first_frames=16, crowded_frames=8)
    assert (policy.opening_snap_frames, policy.crowded_snap_frames) == (8, 4)
    assert next(policy.windows(0, 100, boundaries=[23])) == (0, 23)
    crowded = policy.crowding()
    assert crowded.opening_snap_frames == 4 and crowded.crowded_frames == policy.crowded_frames
    assert next(crowded.windows(0, 100, opening_frames=8, boundaries=[12])) == (0, 12)
    assert next(crowded.windows(0, 100, opening_frames=8, boundaries=[13])) == (0, 8)


def test_a_slow_decoder_opens_a_reply_with_a_longer_window() -> None:
    """The opening window's audio covers the compute of the windows after it, each sized from what
    the listener has buffered and taking at most 0.8 of it (``covers``), from ``first_frames`` up
    to ``min_frames``."""
    policy = WindowPolicy(first_frames=16, min_frames=32, context_frames=12, opening_safety=0.8)
    assert policy.opening(None) == 16  # not measured yet
    assert policy.opening(0.0005) == 16  # a GPU: never under first_frames
    # at 7 ms: 16 + 24 frames, 280 ms <= 0.8 x 400 ms buffered; then 32 + 24, 392 ms <= 0.8 x 520 ms
    assert policy.opening(0.007) == 16
    assert policy.opening(0.0099) == 25  # an AMD EPYC's 2 cores
    assert not policy.covers(24, 0.0099) and policy.covers(25, 0.0099)  # 24: the third window runs short
    assert policy.opening(0.05) == 32  # slower than real time: a gap comes anyway; first audio stays bounded
    plan = list(policy.windows(0, 100, opening_frames=policy.opening(0.0099)))
    assert plan[0] == (0, 25)
    assert policy.opening(0.0099, shared=True) == 25  # shared, at a speed that still covers: the same
    # shared, at a speed that covers nothing (one of 2 cores): every waiting listener's opening is short
    assert policy.opening(0.0149, shared=True) == 16 and policy.opening(0.0149) == 32
    later = list(policy.windows(0, 100, opening=False, opening_frames=25, budget=lambda: 1000.0))
    assert later[0] == (0, 100)  # a later chunk is sized by its budget


def test_an_opening_whose_start_may_be_cut_as_silence_is_longer() -> None:
    """A chunk is decoded from before its speech can begin and its first piece cut to its speech
    (``windowed.ONSET_REACH_S``): the opening covers the windows after it with what is left."""
    policy = WindowPolicy(first_frames=16, min_frames=32, context_frames=12, opening_safety=0.8)
    assert policy.opening(0.0045, silent_s=0.13) == 16  # fast enough: no longer
    assert policy.opening(0.007, silent_s=0.13) == 20 and policy.opening(0.007) == 16
    assert policy.covers(30, 0.0099, silent_s=0.13) and not policy.covers(29, 0.0099, silent_s=0.13)
    assert policy.covers(25, 0.0099)  # 5.2 frames of silence more: 5 frames more


@given(rtf=st.floats(0.02, 0.35))
def test_a_reply_opened_as_sized_for_its_decoder_plays_without_a_gap(rtf: float) -> None:
    """On a decoder as fast as ``opening`` was told, the opening window and the short window after
    it (sized from the buffer, not ``min_frames``) keep the listener fed: no gap in a long chunk."""
    policy = WindowPolicy()
    opening = policy.opening(rtf * FRAME_S)
    assert opening < policy.min_frames
    assert _gaps_on_a_slow_decoder(policy, rtf=rtf, opening=opening) == 0
