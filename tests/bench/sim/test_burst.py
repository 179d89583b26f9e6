"""The simulator end to end: the real replies, scheduler, planner and admission on the simulated
engine, deterministic and fast, and what its listeners hear across machine speeds."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

import pytest

from speakstream.bench.sim.burst import Burst, BurstResult, simulate_burst, tokens
from speakstream.bench.sim.cost import CostModel
from speakstream.bench.sim.engine import SimEngine
from speakstream.bench.sim.sweep import load_levels
from speakstream.config import ServerConfig
from speakstream.data import bench_text
from speakstream.engine.windows.policy import BudgetPolicy, WindowPolicy

COST = CostModel()
"""The defaults: a calibration on this machine's 2 cores (the tests must not depend on a file)."""


def test_a_burst_is_the_same_every_time() -> None:
    burst = Burst(6, "random", seed=3, tokens_per_s=60.0)
    first, again = simulate_burst(COST, burst), simulate_burst(COST, burst)
    assert [h.arrivals for h in first.heard] == [h.arrivals for h in again.heard]
    assert [h.admitted for h in first.heard] == [h.admitted for h in again.heard]


def test_sixteen_sessions_simulate_each_listener_s_whole_reply() -> None:
    result = simulate_burst(COST.at(3.0), Burst(16), ServerConfig(max_load=0))
    spoken = len(bench_text()) * COST.frames_per_char * 0.025
    assert len(result.played) == 16
    assert all(p.audio_s == pytest.approx(spoken, rel=0.1) for p in result.played)


def test_llm_tokens_arrive_at_their_pace_and_the_first_audio_waits_for_the_first_clause() -> None:
    whole = simulate_burst(COST, Burst(1)).played[0]
    slow = simulate_burst(COST, Burst(1, tokens_per_s=20.0)).played[0]
    assert "".join(tokens(bench_text())) == bench_text()
    first_clause = bench_text().index(",") + 1
    assert slow.ttfa_s > whole.ttfa_s + 0.9 * len(tokens(bench_text()[:first_clause])) / 20.0


def test_a_faster_machine_admits_more_and_its_first_audio_comes_sooner() -> None:
    """The typical first audio (the slowest of the many a fast machine admits may be held for a
    start-up buffer the one a slow machine admits does not need)."""
    slow, fast = simulate_burst(COST.at(0.5), Burst(8)), simulate_burst(COST.at(3.0), Burst(8))
    assert len(slow.played) < len(fast.played)
    assert statistics.median(fast.first_audio_s()) < statistics.median(slow.first_audio_s())


def test_the_simulated_engine_plans_its_windows_with_the_real_planner() -> None:
    engine = SimEngine(COST)
    engine.warm()
    assert engine.throughput() > 0 and engine.speed.reading().fastest_s is not None
    stream = engine.stream("Thanks for waiting, I found your booking.", voice="af_heart")
    assert stream.chunk.opens_reply and stream.chunk.boundaries  # words, where the seams go


SPEEDS = (0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0)
ARRIVALS = ("together", "random", "staggered")


def _worst_gaps(speed: float) -> dict[tuple[str, str], float]:
    """At ``speed``: the worst gap an admitted listener heard at N (70% of one session's audio
    rate, 2 to 4) and at 2N+4 sessions, by arrival (random: three draws)."""
    cost = COST.at(speed)
    n, crowd = load_levels(simulate_burst(cost, Burst(1)).played[0].audio_per_wall_s)
    worst = {}
    for level, sessions in (("N", n), ("2N+4", crowd)):
        for arrival in ARRIVALS:
            seeds = range(3) if arrival == "random" else range(1)
            gaps = [g for seed in seeds for g in simulate_burst(cost, Burst(sessions, arrival, seed=seed)).gaps_s()]
            worst[level, arrival] = max(gaps)
    return worst


@pytest.mark.parametrize("speed", SPEEDS, ids=lambda s: f"{s}x")
def test_n_listeners_never_run_dry_however_they_arrive_and_no_gap_anywhere_reaches_the_old_collapse(
    speed: float,
) -> None:
    """At 0.5x to 3x the calibrated speed: N sessions (70% of one session's audio rate) play
    gapless together, at random and staggered, and no admitted listener in any burst hears a gap
    of 0.4 s (before windows were held to the other listeners' buffers, 4 together at 2x heard
    1.2 s: the over-admission the issue measured)."""
    worst = _worst_gaps(speed)
    assert all(worst["N", arrival] == 0.0 for arrival in ARRIVALS), worst
    assert max(worst.values()) < 0.4, worst


def test_openings_held_for_a_start_up_buffer_end_the_gaps_of_listeners_started_together() -> None:
    """N listeners started together, at every speed: with three openings on two lanes none covers
    the windows after it, and some listener ran dry for up to 0.2 s after its first words; each
    such opening now waits (at most ``start_buffer_s``) until it covers them, and none does. Its
    price is first audio that much later for those listeners."""
    unheld = replace(WindowPolicy(), opening=replace(WindowPolicy().opening, start_buffer_s=0.0))

    def heard(speed: float, policy: WindowPolicy | None) -> BurstResult:
        cost = COST.at(speed)
        n, _ = load_levels(simulate_burst(cost, Burst(1)).played[0].audio_per_wall_s)
        return simulate_burst(cost, Burst(n), policy=policy)

    held = [heard(speed, None) for speed in SPEEDS]
    before = [heard(speed, unheld) for speed in SPEEDS]
    assert max(g for r in held for g in r.gaps_s()) == 0.0
    assert max(g for r in before for g in r.gaps_s()) > 0.1
    assert [len(r.played) for r in held] == [len(r.played) for r in before]
    firsts = [(sorted(h.first_audio_s()), sorted(b.first_audio_s())) for h, b in zip(held, before, strict=True)]
    later = [f - b for h, u in firsts for f, b in zip(h, u, strict=True)]
    assert max(later) <= WindowPolicy().opening.start_buffer_s + 0.05


@pytest.mark.xfail(
    strict=True,
    reason="at 2N+4 sessions, gaps of 0.03-0.13 s remain in some cells at 2.5-3x: crowded openings held "
    "as long as the start-up buffer allows still short of their next window, and admission letting in "
    "more than the cores carry (docs/design.md, 'The scheduler's simulator')",
)
def test_no_admitted_listener_runs_dry_at_any_machine_speed() -> None:
    """The goal: every cell of the sweep gapless. Strict: when a policy gets there, this fails and
    the test above becomes this one."""
    assert all(max(_worst_gaps(speed).values()) == 0.0 for speed in SPEEDS)


def test_the_simulator_finds_the_fast_stretch_collapse_the_issue_measured() -> None:
    """With windows sized to their own listener only (the policy before), four listeners started
    together on a machine twice the calibrated speed are all admitted and some run dry for over
    half a second; held to the other listeners' buffers, none does."""
    old = WindowPolicy(budget=BudgetPolicy(others_share=math.inf))
    before, after = simulate_burst(COST.at(2.0), Burst(4), policy=old), simulate_burst(COST.at(2.0), Burst(4))
    assert len(before.played) == len(after.played) == 4
    assert max(before.gaps_s()) > 0.5 and max(after.gaps_s()) == 0.0
