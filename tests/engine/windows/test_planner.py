"""The planner on its own: plain numbers in, a plan and its reason out; no model, no ONNX Runtime."""

from __future__ import annotations

import ast
import itertools
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from speakstream.engine.runtime.speed import Speed
from speakstream.engine.windows import planner
from speakstream.engine.windows.ends import split
from speakstream.engine.windows.planner import (
    FRAME_S,
    Chunk,
    Situation,
    WindowPlan,
    covers,
    frame_budget,
    held_once_made,
    opening_frames,
    opening_size,
    plan_window,
    start_buffer,
    sustained,
    throughput,
    window_size,
)
from speakstream.engine.windows.policy import BudgetPolicy, OpeningPolicy, SeamPolicy, SplitPolicy, WindowPolicy
from speakstream.types import Load

UNIT = Speed(1.0, 1.0)
"""One second a frame: a buffer of n seconds is a budget of n frames."""


def _policy(**groups: dict[str, object]) -> WindowPolicy:
    """The default policy with some knobs of some groups changed: ``_policy(opening={...})``."""
    policy = WindowPolicy()
    return replace(policy, **{name: replace(getattr(policy, name), **knobs) for name, knobs in groups.items()})


def _plans(
    policy: WindowPolicy,
    start: int,
    end: int,
    *,
    frames: int = 0,
    opening: bool = True,
    budget: float | None = None,
    boundaries: tuple[int, ...] = (),
    speed: Speed | None = None,
    load: Load | None = None,
    silent_s: float = 0.0,
    running: int = 0,
    pair_free: bool = False,
) -> list[WindowPlan]:
    """Every window of frames ``[start, end)``, each planned with ``budget`` frames (None: no
    listener known) on a decoder at ``speed`` (default one second a frame, the opening unmeasured);
    ``frames``: the utterance's (default ``end``)."""
    speed = speed or UNIT
    chunk = Chunk(start, end, frames or end, boundaries, opens_reply=opening, silent_s=silent_s)
    now = Situation(
        speed,
        load or Load(),
        None if budget is None else budget * speed.recent_s,
        running=running,
        pair_free=pair_free,
    )
    plans: list[WindowPlan] = []
    a, previous = start, 0
    while a < end:
        plans.append(plan_window(policy, chunk, len(plans), a, previous, now))
        a, previous = plans[-1].end, plans[-1].planned
    return plans


def _windows(policy: WindowPolicy, start: int, end: int, **kwargs: object) -> list[tuple[int, int]]:
    """The windows' frames, budgets as given (the sustain rule, tested below, off)."""
    unsustained = replace(policy, budget=replace(policy.budget, sustain=0.0))
    return [(p.start, p.end) for p in _plans(unsustained, start, end, **kwargs)]  # type: ignore[arg-type]


def test_the_planner_needs_neither_a_model_nor_onnx_runtime() -> None:
    """Imported in a fresh interpreter that cannot import onnxruntime, it plans a window; and it
    imports nothing of the engine but the policy, the speed it reads and where windows end."""
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "from speakstream.engine.windows.planner import Chunk, Situation, plan_window\n"
        "from speakstream.engine.windows.policy import WindowPolicy\n"
        "from speakstream.engine.runtime.speed import Speed\n"
        "from speakstream.types import Load\n"
        "plan = plan_window(WindowPolicy(), Chunk(0, 100, 100, opens_reply=True), 0, 0, 0,"
        " Situation(Speed.fixed(0.005), Load()))\n"
        "assert (plan.start, plan.end) == (0, 16), plan\n"
        "assert 'onnxruntime' not in {m for m, v in sys.modules.items() if v is not None}\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    source = Path(planner.__file__).read_text()
    imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
    assert {m for m in imported if m and m.startswith("speakstream")} == {
        "speakstream.engine.windows.policy",
        "speakstream.engine.windows.ends",
        "speakstream.engine.runtime.speed",
        "speakstream.types",
    }


def test_the_plan_tiles_the_frames_and_grows() -> None:
    policy = _policy(
        opening={"least_frames": 12}, budget={"growth": 2.5, "most_frames": 160, "later_first_frames": 160}
    )
    plan = _windows(policy, 3, 500)
    assert plan[0] == (3, 15) and plan[-1][1] == 500
    assert all(a2 == b1 for (_, b1), (a2, _) in itertools.pairwise(plan))
    sizes = [b - a for a, b in plan]
    assert all(s <= 160 for s in sizes[:-1]) and sizes[1] > sizes[0]
    assert _windows(policy, 0, 150, opening=False) == [(0, 150)]  # a later chunk of under 4 s: one window


def test_a_budget_sizes_windows_to_what_the_listener_has_buffered() -> None:
    policy = _policy(
        opening={"least_frames": 12},
        budget={"least_frames": 40, "most_frames": 160, "share": 1.0},
        seams={"context_frames": 12},
    )

    def size(index: int, previous: int, opening: bool, budget: float | None) -> int:
        return window_size(policy, index, previous, opening=opening, budget=budget)

    assert size(0, 0, True, 500.0) == 12  # the listener is waiting: small
    assert size(1, 12, True, 100.0) == 76  # 100 frames of compute: 76 + 2 x 12 of context
    assert size(1, 12, True, 0.0) == 12  # nothing buffered after a short window: as short
    assert size(1, 40, True, 0.0) == 40  # ... else the smallest that sounds right
    assert size(2, 12, True, 0.0) == 40
    assert size(0, 0, False, 1000.0) == 160  # a later chunk: up to the largest
    assert size(0, 0, False, 30.0) == 12  # ... but small when its listener is waiting
    assert size(2, 40, True, float("inf")) == 160  # no limit: the largest


def _window(policy: WindowPolicy, budget: float) -> int:
    return window_size(policy, 2, 32, opening=True, budget=budget)


def _plays_longer_than_it_costs(policy: WindowPolicy, window: int, frame_s: float) -> bool:
    return (window + 2 * policy.seams.context_frames) * frame_s < window * FRAME_S


@given(rtf=st.floats(0.05, 0.99), budget=st.floats(0.0, 2000.0))
def test_a_sustained_budget_keeps_a_window_that_plays_longer_than_it_costs_or_makes_one(
    rtf: float, budget: float
) -> None:
    policy, frame_s = WindowPolicy(), rtf * FRAME_S
    kept = sustained(policy, budget, frame_s)
    window = _window(policy, kept)
    assert kept >= budget  # kept, or raised
    assert _plays_longer_than_it_costs(policy, window, frame_s) or window == policy.budget.most_frames


def test_a_decoder_slower_than_real_time_gets_the_largest_window() -> None:
    policy = WindowPolicy()
    assert _window(policy, sustained(policy, 10.0, 1.2 * FRAME_S)) == policy.budget.most_frames


def test_on_a_fast_decoder_every_budget_stays_as_it_is() -> None:
    """At the decoder's quiet speed on 2 cores (about 9 ms a decoded frame, RTF 0.35) even the
    smallest window plays longer than it costs: what the listener has buffered sizes them."""
    policy = WindowPolicy()
    assert all(sustained(policy, b, 0.35 * FRAME_S) == b for b in (0.0, 10.0, 57.0, 200.0))


def _budget(buffered: float | None, *, alone: bool = True, policy: WindowPolicy | None = None) -> float | None:
    """The frame budget of a listener ``buffered`` seconds ahead, at 15 ms a frame lately and 20 ms
    alone."""
    now = Situation(Speed(0.015, 0.02), Load(in_flight=1 if alone else 2), buffered)
    return frame_budget(policy or WindowPolicy(), now)[0]


def test_a_lone_reply_gets_a_window_that_keeps_up_whatever_its_buffer() -> None:
    """Alone, the window runs at the lone speed: the buffer is counted in frames at that speed."""
    policy = WindowPolicy()
    raised = sustained(policy, 0.0, 0.02)
    assert [_budget(0.0), _budget(0.3), _budget(10.0)] == [raised, raised, 10.0 / 0.02]
    assert raised > 0.3 / 0.02


def test_a_listener_budget_keeps_to_the_buffer_without_sustain() -> None:
    """Without the sustain rule the budget is the buffer in frames where the window runs: beside
    other sessions at the shared speed (15 ms here), alone at the lone one (20 ms)."""
    off = _policy(budget={"sustain": 0.0})
    assert [_budget(0.0, alone=False, policy=off), _budget(0.6, alone=False, policy=off)] == [0.0, 40.0]
    assert [_budget(0.0, policy=off), _budget(0.6, policy=off)] == [0.0, 30.0]
    assert _budget(None) is None


def test_a_window_keeps_up_while_the_other_replies_take_their_turns() -> None:
    """A reply's window costs its frames times the replies that take turns on its lane: the budget
    is raised to a window that keeps up at that cost, and with no limit once the turns make it
    slower than real time (then the largest window, the least context decoded twice, loses least)."""
    policy, speed = WindowPolicy(), Speed(0.015, 0.015)

    def budget(load: Load, buffered: float) -> float | None:
        return frame_budget(policy, Situation(speed, load, buffered, running=1))[0]

    two_lanes = Load(playing=True, replies=2, in_flight=2, lanes=2)
    assert budget(two_lanes, 0.0) == sustained(policy, 0.0, 0.015)  # one reply a lane
    assert budget(replace(two_lanes, replies=3), 0.0) == sustained(policy, 0.0, 0.015 * 1.5)
    assert budget(replace(two_lanes, replies=4, lanes=1), 0.0) == float("inf")  # 4 x 15 ms > 25 ms a frame
    assert budget(two_lanes, 100.0) == 100.0 / 0.015  # a long buffer sizes it itself


def test_a_seam_between_words_is_decoded_with_less_context_than_one_inside_a_word() -> None:
    policy = _policy(
        opening={"least_frames": 20, "context_after_frames": None},
        budget={"least_frames": 32, "most_frames": 160},
        seams={"context_frames": 12, "gap_context_frames": 8},
    )
    plans = _plans(policy, 0, 250, frames=300, boundaries=(55,))
    # windows (0, 20) (20, 55) (55, 180) (180, 250): the seams at 20 and 180 fall inside words, 55 between
    assert [(p.start, p.end) for p in plans] == [(0, 20), (20, 55), (55, 180), (180, 250)]
    assert [(p.decodes[0].start, p.decodes[0].end) for p in plans] == [(0, 32), (8, 63), (47, 192), (168, 262)]


def test_the_window_that_opens_a_reply_takes_its_own_context_after_it() -> None:
    policy = _policy(
        opening={"least_frames": 20, "context_after_frames": 4},
        budget={"least_frames": 32},
        seams={"context_frames": 12, "gap_context_frames": 8},
    )
    spans = [(p.decodes[0].start, p.decodes[0].end) for p in _plans(policy, 0, 250, frames=300)]
    # the opening window (0, 20) ends 4 frames on, not 12; the next one starts with the seam's own 12
    assert spans[:2] == [(0, 24), (8, 82)]  # (20, 70) from 8 to 82
    # a later chunk's first window is no opening: its seam takes the seam's context
    first = _plans(policy, 0, 250, frames=300, opening=False)[0].decodes[0]
    assert (first.start, first.end) == (0, 172)


def test_later_seams_move_back_between_words() -> None:
    policy = _policy(
        opening={"least_frames": 20},
        budget={"least_frames": 32, "growth": 2.5, "most_frames": 160},
        seams={"back_frames": 16},
    )
    plain = _windows(policy, 0, 100)
    assert plain == [(0, 20), (20, 70), (70, 100)]
    snapped = _windows(policy, 0, 100, boundaries=(10, 55, 90))
    assert snapped == [(0, 20), (20, 55), (55, 100)]  # the first window keeps its size; 70 -> 55, a word gap
    # not moved: a boundary at the seam, too far back, or leaving a short window or rest:
    assert _windows(policy, 0, 100, boundaries=(70,)) == plain
    assert _windows(policy, 0, 100, boundaries=(50,)) == plain  # 50 is more than 16 frames back
    assert _windows(policy, 0, 100, boundaries=(30,)) == plain  # (20, 30) would be under the least opening
    assert _windows(policy, 0, 100, boundaries=(90,)) == plain  # (90, 100) would be under it too
    # with no boundary behind, a little forward (within the budget's share), never more:
    assert _windows(policy, 0, 100, boundaries=(73,)) == [(0, 20), (20, 73), (73, 100)]
    assert _windows(policy, 0, 100, boundaries=(75,)) == plain
    # a window shorter than the budget's least is better than a seam inside a word (planned (0, 39)):
    assert _windows(policy, 0, 100, opening=False, budget=84.0, boundaries=(25,))[0] == (0, 25)
    # a later chunk's first window (sized by the budget, not for a waiting listener) snaps too:
    later = _windows(policy, 0, 300, opening=False, budget=100.0, boundaries=(40, 120))
    assert later[0] == (0, 40)  # planned (0, 51): int(100 x 0.75) - 2 x 12


def test_the_opening_seam_moves_forward_to_a_word_gap_within_its_reach() -> None:
    """The opening window may end up to ``reach_frames`` later at a word gap, never earlier (its
    audio covers the next window's compute), and the window after it starts with 8 frames of
    context, not 12 (the opening window with its seam's context after it)."""
    policy = _policy(
        opening={"least_frames": 20, "context_after_frames": None, "reach_frames": 4},
        budget={"least_frames": 32},
        seams={"context_frames": 12, "gap_context_frames": 8},
    )
    assert _windows(policy, 0, 100, boundaries=(21, 24))[0] == (0, 21)  # the first gap at or after 20
    assert _windows(policy, 0, 100, boundaries=(20,))[0] == (0, 20)
    assert _windows(policy, 0, 100, boundaries=(24,))[0] == (0, 24)
    assert _windows(policy, 0, 100, boundaries=(25,))[0] == (0, 20)  # beyond its reach
    assert _windows(policy, 0, 100, boundaries=(12, 18))[0] == (0, 20)  # never back
    assert _windows(policy, 0, 42, boundaries=(23,))[0] == (0, 20)  # (23, 42) would be under 20 frames
    spans = [(p.decodes[0].start, p.decodes[0].end) for p in _plans(policy, 0, 100, boundaries=(22,))]
    assert spans[:2] == [(0, 30), (14, 84)]  # (0, 22) with 8 after it; (22, 72) with 8 before it


def test_a_crowded_opening_reaches_less_far_for_a_word_gap() -> None:
    """A reply's opening reaches 8 frames for a word gap by default; a crowded one 4: each of its
    frames delays every listener behind it."""
    policy = _policy(opening={"least_frames": 16, "crowded_frames": 8})
    assert (policy.opening.reach_frames, policy.opening.crowded_reach_frames) == (8, 4)
    assert _windows(policy, 0, 100, boundaries=(23,))[0] == (0, 23)
    crowded = Load(crowded=True)
    assert _windows(policy, 0, 100, boundaries=(12,), load=crowded)[0] == (0, 12)
    assert _windows(policy, 0, 100, boundaries=(13,), load=crowded)[0] == (0, 8)


def test_a_slow_decoder_opens_a_reply_with_a_longer_window() -> None:
    """The opening window's audio covers the compute of the windows after it, each sized from what
    the listener has buffered and taking at most 0.8 of it (``covers``), from the least opening up
    to the longest opening."""
    policy = _policy(
        opening={"least_frames": 16, "cover_share": 0.8}, budget={"least_frames": 32}, seams={"context_frames": 12}
    )
    assert opening_size(policy, None) == 16  # not measured yet
    assert opening_size(policy, 0.0005) == 16  # a GPU: never under the least
    # at 7 ms: 16 + 24 frames, 280 ms <= 0.8 x 400 ms buffered; then 32 + 24, 392 ms <= 0.8 x 520 ms
    assert opening_size(policy, 0.007) == 16
    assert opening_size(policy, 0.0099) == 25  # an AMD EPYC's 2 cores
    assert not covers(policy, 24, 0.0099) and covers(policy, 25, 0.0099)  # 24: the third window runs short
    # at 15 ms only an opening of 45 frames would cover what follows: longer than the longest (32),
    # which comes closest, alone or shared (a short one is followed by windows that cost as much
    # as they play: a gap after each)
    assert not covers(policy, 44, 0.0149) and covers(policy, 45, 0.0149)
    assert opening_size(policy, 0.0149) == 32 and opening_size(policy, 0.0149, shared=True) == 32
    wider = _policy(
        opening={"least_frames": 16, "cover_share": 0.8, "longest_frames": 48},
        budget={"least_frames": 32},
        seams={"context_frames": 12},
    )
    assert opening_size(wider, 0.0149) == 45  # a policy that allows it gets the covering opening
    assert opening_size(policy, 0.05) == 32  # slower than real time: a gap comes anyway; first audio stays bounded
    assert _windows(policy, 0, 100, speed=Speed.fixed(0.0099))[0] == (0, 25)
    assert opening_size(policy, 0.0099, shared=True) == 25  # shared, at a speed that still covers: the same
    # at a speed that covers nothing: the longest, shared or not
    assert opening_size(policy, 0.02, shared=True) == 32 and opening_size(policy, 0.02) == 32
    later = _windows(policy, 0, 100, opening=False, speed=Speed.fixed(0.0099), budget=1000.0)
    assert later[0] == (0, 100)  # a later chunk is sized by its budget


def test_an_opening_whose_start_may_be_cut_as_silence_is_longer() -> None:
    """A chunk is decoded from before its speech can begin and its first piece cut to its speech
    (``EdgePolicy.onset_reach_s``): the opening covers the windows after it with what is left."""
    policy = _policy(
        opening={"least_frames": 16, "cover_share": 0.8}, budget={"least_frames": 32}, seams={"context_frames": 12}
    )
    assert opening_size(policy, 0.0045, silent_s=0.13) == 16  # fast enough: no longer
    assert opening_size(policy, 0.007, silent_s=0.13) == 20 and opening_size(policy, 0.007) == 16
    assert covers(policy, 30, 0.0099, silent_s=0.13) and not covers(policy, 29, 0.0099, silent_s=0.13)
    assert covers(policy, 25, 0.0099)  # 5.2 frames of silence more: 5 frames more


def test_a_reply_opening_on_a_shared_decoder_is_sized_at_the_shared_speed() -> None:
    """While other replies' windows run or are about to, the opening is sized at the speed the
    decoder has then (a narrow copy's: measured, else guessed 1.5x the lone), and when that covers
    nothing it is the longest, which comes closest."""
    policy, lone = WindowPolicy(), Speed(0.0103, 0.0103, 0.0103)
    beside = Load(in_flight=2)  # the scheduler is starting another reply's window

    def frames(speed: Speed, load: Load = beside, running: int = 0) -> int:
        return opening_frames(policy, Situation(speed, load, running=running), 0.13, crowded=False)[0]

    assert lone.shared_s == 0.0103 * 1.5  # guessed until one is measured
    assert frames(lone) == policy.opening.longest_frames
    assert frames(lone, Load()) == 31  # alone: the lone speed sizes it
    assert frames(lone, Load(), running=1) == policy.opening.longest_frames  # another inference runs
    assert frames(replace(lone, measured_shared_s=0.0005)) == policy.opening.least_frames  # never shorter than alone's
    assert frames(replace(lone, measured_shared_s=0.0103)) == 31
    assert frames(replace(lone, measured_shared_s=0.05)) == policy.opening.longest_frames


def test_a_crowded_opening_is_the_shortest_never_longer_than_it_would_be() -> None:
    policy = WindowPolicy()
    now = Situation(Speed(0.0103, 0.0103, 0.0103), Load(crowded=True, in_flight=2, waiting_first=5, lanes=2))
    frames, reason = opening_frames(policy, now, 0.13, crowded=True)
    assert frames == policy.opening.crowded_frames < policy.opening.least_frames
    assert "crowded" in reason and "2 rounds of openings behind" in reason  # 3 beyond the 2 lanes
    roomy = _policy(opening={"crowded_frames": 1 << 30})
    assert opening_frames(roomy, now, 0.13, crowded=True)[0] <= opening_frames(roomy, now, 0.13, crowded=False)[0]


def test_an_opening_covers_the_windows_after_it_where_they_will_run() -> None:
    """An opening that runs alone (it paused the other reply's window) is followed by windows that
    run beside that reply, on a narrow copy: it covers them at the shared speed. When none covers,
    the longest, which comes closest (after a short one every window costs about as much as it
    plays, a gap after each); crowded, the shortest."""
    policy = WindowPolicy()
    slow = Speed(0.0103, 0.0103, 0.0103, measured_shared_s=0.0155)  # beside another: no opening covers

    def opening(load: Load) -> tuple[int, str]:
        return opening_frames(policy, Situation(slow, load), 0.13, crowded=load.crowded)

    alone = opening(Load())
    assert alone[0] == 31 and "10.3 ms" in alone[1]  # no other reply: the windows run alone too
    beside = opening(Load(in_flight=1, replies=2, waiting_first=1, lanes=2))  # it runs alone, then shares
    assert beside[0] == policy.opening.longest_frames and "no opening covers at 15.5 ms" in beside[1]
    together = opening(Load(in_flight=2, replies=2, waiting_first=2, lanes=2))
    assert together[0] == policy.opening.longest_frames
    crowded = Load(in_flight=2, replies=3, waiting_first=3, lanes=2, crowded=True)
    assert opening(crowded)[0] == policy.opening.crowded_frames


def test_an_opening_no_size_covers_is_held_just_long_enough_to_cover() -> None:
    """Where no opening covers the windows after it (three replies opening on two lanes), the
    opening is held before it is sent: the least hold, in 10 ms steps, after which it covers them
    (``covers`` with all of the buffer), at most ``start_buffer_s``; none where it covers already,
    and none for an opening that is its chunk's last window (nothing comes after it)."""
    policy = WindowPolicy()
    speed = Speed(0.0103, 0.0103, 0.0103)
    crowded = Situation(speed, Load(in_flight=2, replies=3, waiting_first=3, lanes=2, crowded=True))
    frames = opening_frames(policy, crowded, 0.13, crowded=True)[0]
    held = start_buffer(_policy(opening={"start_buffer_s": 5.0}), crowded, frames, 0.13, crowded=True)
    assert 0.0 < held < 5.0 and round(held * 100) == pytest.approx(held * 100)

    def plays_through(h: float) -> bool:
        speed_s, turns, behind = planner._after_opening(crowded, crowded=True)
        assert speed_s is not None
        return covers(policy, frames, speed_s, turns, behind, silent_s=0.13, held_s=h, share=1.0)

    assert plays_through(held) and not plays_through(held - 0.01)
    assert start_buffer(policy, crowded, frames, 0.13, crowded=True) == min(held, policy.opening.start_buffer_s)
    alone = Situation(speed, Load())
    assert start_buffer(policy, alone, opening_frames(policy, alone, 0.13, crowded=False)[0], 0.13, crowded=False) == 0
    assert start_buffer(_policy(opening={"start_buffer_s": 0.0}), crowded, frames, 0.13, crowded=True) == 0

    def plan(stop: int) -> WindowPlan:
        return plan_window(policy, Chunk(0, stop, stop, opens_reply=True, silent_s=0.13), 0, 0, 0, crowded)

    assert plan(200).hold_s == start_buffer(policy, crowded, plan(200).frames, 0.13, crowded=True) > 0
    assert "held" in plan(200).reason
    assert plan(12).last and plan(12).hold_s == 0.0


def test_an_opening_whose_next_window_waits_for_a_lane_covers_the_wait_too() -> None:
    """A reply arriving while every lane runs a long window: its second window waits for one
    (``Load.lane_wait_s``, less the opening's own time), so an opening that covers with a lane free
    does not, and the longest is held for what it lacks."""
    policy = WindowPolicy()
    speed = Speed(0.003, 0.003, 0.003, measured_shared_s=0.0044)  # a fast stretch, beside others
    free = Load(in_flight=1, replies=4, waiting_first=1, lanes=2)
    frames, reason = opening_frames(policy, Situation(speed, free), 0.13, crowded=False)
    assert frames < policy.opening.longest_frames and "covers" in reason
    assert start_buffer(policy, Situation(speed, free), frames, 0.13, crowded=False) == 0.0
    busy = Situation(speed, replace(free, lane_wait_s=0.7))
    assert not covers(policy, frames, 0.0044, 2.0, silent_s=0.13, wait_s=0.7)
    longest, why = opening_frames(policy, busy, 0.13, crowded=False)
    assert longest == policy.opening.longest_frames and "no opening covers" in why
    assert start_buffer(policy, busy, longest, 0.13, crowded=False) > 0.0


def test_which_decoder_opens_a_reply() -> None:
    """The crowded decoder decodes a crowded opening only, where the engine has one and the policy
    asks for it; every other window is the main decoder's."""
    chunk = Chunk(0, 200, 200, opens_reply=True)

    def decoders(load: Load, crowded_decoder: bool = True, policy: WindowPolicy | None = None) -> list[str]:
        now = Situation(Speed.fixed(0.005), load, crowded_decoder=crowded_decoder)
        first = plan_window(policy or WindowPolicy(), chunk, 0, 0, 0, now)
        later = plan_window(policy or WindowPolicy(), chunk, 1, first.end, first.frames, now)
        return [first.decoder, later.decoder]

    assert decoders(Load(crowded=True)) == ["crowded", "main"]
    assert decoders(Load()) == ["main", "main"]
    assert decoders(Load(crowded=True), crowded_decoder=False) == ["main", "main"]
    assert decoders(Load(crowded=True), policy=_policy(opening={"crowded_decoder": False})) == ["main", "main"]


def test_a_long_window_is_split_at_the_word_gap_nearest_its_middle() -> None:
    policy = _policy(split={"frames": 96, "reach_frames": 8}, opening={"least_frames": 16})
    assert split(policy, 0, 95, [40]) == ((0, 95),)  # short: one inference
    assert split(policy, 0, 160, [60, 75, 90]) == ((0, 75), (75, 160))  # the gap nearest 80
    assert split(policy, 0, 160, [60, 95]) == ((0, 80), (80, 160))  # none within 8 frames: the middle
    assert split(_policy(split={"frames": 0}), 0, 300, []) == ((0, 300),)  # never
    close = _policy(split={"frames": 8, "reach_frames": 20}, opening={"least_frames": 4})
    assert split(close, 0, 32, [0, 2, 30]) == ((0, 16), (16, 32))  # no half shorter than 4 frames
    assert split(WindowPolicy.whole(), 0, 1000, []) == ((0, 1000),)  # whole decoding stays whole


# Properties over any policy, chunk and load: what every plan must be.

_POLICIES = st.builds(
    WindowPolicy,
    opening=st.builds(
        OpeningPolicy,
        least_frames=st.integers(1, 40),
        crowded_frames=st.integers(1, 40),
        reach_frames=st.integers(0, 12),
        crowded_reach_frames=st.integers(0, 12),
        context_after_frames=st.none() | st.integers(0, 12),
    ),
    seams=st.builds(
        SeamPolicy,
        context_frames=st.integers(0, 20),
        gap_context_frames=st.integers(0, 20),
        lead_context_frames=st.integers(0, 20),
        back_frames=st.integers(0, 20),
        ahead_frames=st.integers(0, 8),
    ),
    budget=st.builds(
        BudgetPolicy,
        least_frames=st.integers(1, 60),
        most_frames=st.integers(1, 200),
        growth=st.floats(1.0, 4.0),
        sustain=st.sampled_from([0.0, 1.5]),
    ),
    split=st.builds(SplitPolicy, frames=st.integers(0, 120), reach_frames=st.integers(0, 20)),
)
_LOADS = st.builds(
    Load,
    lanes=st.integers(1, 4),
    in_flight=st.integers(1, 4),
    replies=st.integers(1, 8),
    crowded=st.booleans(),
    buffered_s=st.none() | st.floats(0.0, 10.0),
    playing=st.booleans(),
)
_SPEEDS = st.builds(
    Speed,
    recent_s=st.floats(0.0005, 0.05),
    lone_s=st.floats(0.0005, 0.05),
    fastest_s=st.none() | st.floats(0.0005, 0.05),
    measured_shared_s=st.none() | st.floats(0.0005, 0.05),
)


@st.composite
def _cases(draw: st.DrawFn) -> tuple[WindowPolicy, Chunk, list[Situation]]:
    frames = draw(st.integers(2, 600))
    first = draw(st.integers(0, frames - 1))
    stop = draw(st.integers(first + 1, frames))
    boundaries = tuple(sorted(set(draw(st.lists(st.integers(0, frames), max_size=30)))))
    chunk = Chunk(first, stop, frames, boundaries, opens_reply=draw(st.booleans()), silent_s=draw(st.floats(0, 0.2)))
    situations = draw(
        st.lists(
            st.builds(
                Situation,
                _SPEEDS,
                _LOADS,
                st.none() | st.floats(0.0, 10.0),
                running=st.integers(0, 3),
                pair_free=st.booleans(),
                crowded_decoder=st.booleans(),
            ),
            min_size=1,
            max_size=8,
        )
    )
    return draw(_POLICIES), chunk, situations


def _plan_all(policy: WindowPolicy, chunk: Chunk, situations: list[Situation]) -> list[tuple[WindowPlan, Situation]]:
    made: list[tuple[WindowPlan, Situation]] = []
    start, previous = chunk.first, 0
    while start < chunk.stop:
        now = situations[len(made) % len(situations)]
        plan = plan_window(policy, chunk, len(made), start, previous, now)
        made.append((plan, now))
        start, previous = plan.end, plan.planned
        assert len(made) <= chunk.stop - chunk.first  # every window adds a frame at least
    return made


@given(_cases())
def test_every_plan_tiles_its_chunk_and_its_decodes_cover_their_windows(
    case: tuple[WindowPolicy, Chunk, list[Situation]],
) -> None:
    policy, chunk, situations = case
    plans = [plan for plan, _ in _plan_all(policy, chunk, situations)]
    assert plans[0].start == chunk.first and plans[-1].end == chunk.stop and plans[-1].last
    assert all(a.end == b.start for a, b in itertools.pairwise(plans))
    assert not any(plan.last for plan in plans[:-1])
    for plan in plans:
        halves = [(s.keep_start, s.keep_end) for s in plan.decodes]
        assert halves[0][0] == plan.start and halves[-1][1] == plan.end
        assert all(a[1] == b[0] for a, b in itertools.pairwise(halves))
        assert all(0 <= s.start <= s.keep_start < s.keep_end <= s.end <= chunk.frames for s in plan.decodes)
        assert plan.reason


@given(_cases())
def test_no_cut_or_moved_seam_leaves_a_window_or_rest_under_the_shortest(
    case: tuple[WindowPolicy, Chunk, list[Situation]],
) -> None:
    """What follows every window but the last is at least ``shortest`` long; a window is as long as
    it was planned or at least ``shortest``; and so is each half of a split window."""
    policy, chunk, situations = case
    shortest = policy.shortest
    for plan, _ in _plan_all(policy, chunk, situations):
        if not plan.last:
            assert chunk.stop - plan.end >= shortest
            assert plan.frames >= min(plan.planned, shortest)
        if len(plan.decodes) == 2:
            assert all(s.keep_end - s.keep_start >= shortest for s in plan.decodes)


@given(_cases())
def test_halves_only_when_nothing_else_runs_and_no_other_reply_waits(
    case: tuple[WindowPolicy, Chunk, list[Situation]],
) -> None:
    policy, chunk, situations = case
    for plan, now in _plan_all(policy, chunk, situations):
        if len(plan.decodes) == 2:
            assert now.alone and now.pair_free and now.load.replies <= 1 and policy.split.frames
            assert plan.frames >= policy.split.frames and plan.decoder == "main"


@given(_cases())
def test_the_crowded_decoder_only_ever_opens_a_crowded_reply(case: tuple[WindowPolicy, Chunk, list[Situation]]) -> None:
    policy, chunk, situations = case
    for index, (plan, now) in enumerate(_plan_all(policy, chunk, situations)):
        if plan.decoder == "crowded":
            assert index == 0 and chunk.opens_reply and now.load.crowded and now.crowded_decoder


@given(frame_s=st.floats(0.0005, 0.03), silent_s=st.floats(0.0, 0.13))
def test_an_opening_covers_what_follows_at_the_stated_speed_whenever_any_can(frame_s: float, silent_s: float) -> None:
    """The opening the planner sizes alone covers its next windows at the speed it was told, unless
    no opening up to the longest could (then a gap comes whatever it is)."""
    policy = WindowPolicy()
    frames = opening_size(policy, frame_s, silent_s=silent_s)
    longest = policy.opening.longest_frames
    could = any(covers(policy, n, frame_s, silent_s=silent_s) for n in range(policy.opening.least_frames, longest + 1))
    assert covers(policy, frames, frame_s, silent_s=silent_s) or not could
    assert policy.opening.least_frames <= frames <= max(longest, policy.budget.least_frames)


def test_the_capacity_estimate_is_what_starting_replies_windows_make() -> None:
    """Before the scheduler measures what the engine delivers, admission reads the planner's
    estimate: the budget's least window with its context between words, on every lane at the
    shared speed; the largest windows would make more, and admit a fresh server's first burst
    into a stall."""
    policy, speed = WindowPolicy(), Speed.fixed(0.01)
    assert throughput(policy, speed, 1) == pytest.approx(32 * FRAME_S / (48 * 0.01))
    shared = replace(speed, measured_shared_s=0.015)
    assert throughput(policy, shared, 2) == pytest.approx(2 * 32 * FRAME_S / (48 * 0.015))


def test_a_window_holds_a_lane_no_longer_than_another_listener_can_wait() -> None:
    """Beside another playing listener, a window's budget is at most ``others_share`` of that
    listener's buffer, whatever its own (and whatever the sustain rule would raise it to): a lane
    held longer leaves the other listener dry while its next window waits for one."""
    policy, speed = WindowPolicy(), Speed(0.015, 0.015)
    load = Load(playing=True, replies=2, in_flight=2, lanes=2)
    own = frame_budget(policy, Situation(speed, load, 10.0))[0]
    held, why = frame_budget(policy, Situation(speed, load, 10.0, others_buffered_s=0.9))
    assert own == 10.0 / 0.015 and held == pytest.approx(0.9 * policy.budget.others_share / 0.015)
    assert "another listener" in why
    assert (
        frame_budget(policy, Situation(speed, load, 0.3, others_buffered_s=9.0))[0]
        == frame_budget(policy, Situation(speed, load, 0.3))[0]
    )  # a fuller listener holds nothing back
    assert Load(others_buffered_s=1.0, taken_at=5.0).others_at(5.4) == pytest.approx(0.6)
    assert Load().others_at(5.0) is None


def test_an_opening_planned_alone_is_held_once_made_when_a_reply_came_while_it_ran() -> None:
    """Planned alone, an opening covers at the wide copy's speed; a reply that came while it ran
    puts the windows after it on a narrow copy, so once made it is held for that
    (``held_once_made``). Where nothing changed the hold planned stands, and a chunk's later
    windows, or an opening that ends its chunk, are never held."""
    policy = WindowPolicy()
    speed = Speed(0.0076, 0.0076, 0.0076, measured_shared_s=0.0117)  # a slow stretch, 2 cores
    chunk = Chunk(0, 200, 200, opens_reply=True, silent_s=0.13)
    alone = Situation(speed, Load(in_flight=1, replies=1, waiting_first=1, lanes=2))
    plan = plan_window(policy, chunk, 0, 0, 0, alone)
    assert plan.hold_s == 0.0 and held_once_made(policy, chunk, plan, 1, alone) == 0.0
    joined = Situation(speed, Load(in_flight=2, replies=2, waiting_first=2, lanes=2))
    held = held_once_made(policy, chunk, plan, 1, joined)
    assert 0.0 < held <= policy.opening.start_buffer_s
    assert held == start_buffer(policy, joined, plan.frames, 0.13, crowded=False)
    assert held_once_made(policy, chunk, replace(plan, hold_s=0.5), 1, joined) == 0.5
    assert held_once_made(policy, replace(chunk, opens_reply=False), plan, 1, joined) == 0.0
    assert held_once_made(policy, chunk, plan, 2, joined) == 0.0
    short = Chunk(0, 12, 12, opens_reply=True, silent_s=0.13)
    assert held_once_made(policy, short, plan_window(policy, short, 0, 0, 0, alone), 1, joined) == 0.0
