"""The simulator end to end: the real replies, scheduler, planner and admission on the simulated
engine, deterministic and fast, and what its listeners hear across machine speeds."""

from __future__ import annotations

import math

import pytest

from speakstream.bench.sim.burst import Burst, simulate_burst, tokens
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
    slow, fast = simulate_burst(COST.at(0.5), Burst(8)), simulate_burst(COST.at(3.0), Burst(8))
    assert len(slow.played) < len(fast.played)
    assert max(fast.first_audio_s()) < max(slow.first_audio_s())


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
def test_staggered_listeners_never_run_dry_and_no_gap_anywhere_reaches_the_old_collapse(speed: float) -> None:
    """At 0.5x to 3x the calibrated speed: N sessions arriving one after another play gapless, and
    no admitted listener in any burst hears a gap of 0.4 s (before windows were held to the other
    listeners' buffers, 4 together at 2x heard 1.2 s: the over-admission the issue measured)."""
    worst = _worst_gaps(speed)
    assert worst["N", "staggered"] == 0.0
    assert max(worst.values()) < 0.4, worst


@pytest.mark.xfail(
    strict=True,
    reason="scattered gaps of 0.1-0.35 s remain in about a third of the sweep's cells: crowded openings "
    "that do not cover their next window, and a late opening's next window waiting for windows sized "
    "before it came (docs/design.md, 'The scheduler's simulator')",
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
