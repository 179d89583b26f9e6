"""The concurrency experiment pools every session of every run of a level."""

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from speakstream.bench.context import BenchContext
from speakstream.bench.experiments import concurrency
from speakstream.config import ServerConfig
from speakstream.engine.fake import FakeEngine
from speakstream.server.runtime import Runtime


def _session(ttfa_ms: float, audio_s: float = 10.0) -> dict[str, Any]:
    return {"ttfa_ms": ttfa_ms, "stall_ms": 0.0, "stalls": 0, "audio_s": audio_s}


def test_a_level_pools_the_sessions_of_all_its_runs() -> None:
    runs = [
        concurrency.Run([_session(400), None], 5.0, 0.3),
        concurrency.Run([_session(600), _session(800)], 10.0, 0.5),
    ]
    level = concurrency._pooled(2, runs)
    assert level["runs"] == 2 and level["errors"] == 1 and level["refused"] == 0
    assert level["ttfa_ms"]["n"] == 3 and level["ttfa_ms"]["max"] == 800
    assert level["throughput"] == 2.0  # 30 audio seconds in 15 wall seconds
    assert level["first_windows_ms"] == 400.0  # the mean of the runs' first windows' engine time per lane


def test_a_level_counts_gaps_refusals_and_waits_apart_from_errors() -> None:
    """A reply refused for capacity is no error, and a reply that waited for room counts as
    delayed; gaps are averaged over the admitted replies only."""
    waited = {**_session(900), "stalls": 2, "waited_s": 1.5}
    runs = [concurrency.Run([_session(400), {"refused": True}, waited, None], 10.0)]
    level = concurrency._pooled(4, runs)
    assert (level["errors"], level["refused"], level["delayed"]) == (1, 1, 1)
    assert level["gaps"] == 1.0 and level["ttfa_ms"]["n"] == 2
    row = concurrency._rows({"priority": [level]}, bound=False)[0]
    assert "1 / 1" in row and 1.0 in row


def _result(runs: int | None, first_windows_s: float | None = None) -> dict[str, Any]:
    level = concurrency._pooled(1, [concurrency.Run([_session(400)], 10.0, first_windows_s)])
    if runs is None:  # a run from before the field
        del level["runs"]
    else:
        level["runs"] = runs
    return {"text_chars": 100, "modes": {"priority": [level]}, "p95_over_1s_at": {"priority": None}}


def test_the_report_says_how_many_runs_a_level_pools() -> None:
    assert "each level ran 3 times" in concurrency.markdown(_result(3))
    assert "each level ran" not in concurrency.markdown(_result(1))
    assert "each level ran" not in concurrency.markdown(_result(None))


def test_the_report_sets_first_audio_beside_the_compute_its_first_windows_took() -> None:
    """Against our own server each run measures its first windows' engine time per lane (the
    metric ``speakstream_engine_seconds_total``); a run without it (another server, or from
    before the field) has no such column."""
    measured = concurrency.markdown(_result(3, first_windows_s=0.3456))
    assert concurrency.BOUND in measured and "| 345.6 |" in measured and "bound by compute" in measured
    for report in (concurrency.markdown(_result(3)), concurrency.markdown(_result(None))):
        assert concurrency.BOUND not in report and "bound by compute" not in report


def test_the_report_says_how_many_runs_a_staggered_level_pools() -> None:
    """A staggered run's p95 swings with the arrival phase (one run a level: 180 to 670 ms at 4
    sessions), so its levels pool several runs too, and the report says how many."""
    result = _result(3)
    result["staggered"] = {"preempt": _result(3)["modes"]["priority"]}
    staggered = concurrency.markdown(result).split("arriving", 1)[1]
    assert "each level ran 3 times" in staggered
    result["staggered"] = {"preempt": _result(1)["modes"]["priority"]}
    assert "each level ran" not in concurrency.markdown(result).split("arriving", 1)[1]


def test_a_level_with_few_sessions_runs_until_it_pools_enough_of_them() -> None:
    """p95 over the replies of 3 one-session runs is their worst, and issue 12's targets divide
    by it: levels with few sessions run until they pool ``POOLED`` sessions."""
    assert [concurrency.runs_of(level, 3, 20) for level in (1, 2, 4, 8)] == [20, 10, 5, 3]
    assert [concurrency.runs_of(level, 1, 0) for level in (1, 2, 4)] == [1, 1, 1]  # a quick run


def test_the_report_says_how_many_runs_each_level_pooled_when_they_differ() -> None:
    levels = []
    for sessions, runs in ((1, 20), (8, 3)):
        level = concurrency._pooled(sessions, [concurrency.Run([_session(400)] * sessions, 10.0)])
        level["runs"] = runs
        levels.append(level)
    result = {"text_chars": 100, "modes": {"priority": levels}, "p95_over_1s_at": {"priority": None}}
    said = concurrency.markdown(result)
    assert "each level ran 3 times or more, pooling at least 20 sessions (runs: 20 at 1, 3 at 8 sessions)" in said


@given(st.dictionaries(st.integers(1, 16), st.integers(1, 40), min_size=1, max_size=5))
def test_a_sweep_spreads_each_level_s_runs_evenly_over_its_rounds_from_the_first(planned: dict[int, int]) -> None:
    """A level with few runs samples the same stretch of the machine's time as one with many."""
    rounds = concurrency.spread(planned)
    assert len(rounds) == max(planned.values()) and sorted(rounds[0]) == sorted(planned)
    for level, runs in planned.items():
        at = [r for r, levels in enumerate(rounds) if level in levels]
        assert len(at) == runs
        gaps = [b - a for a, b in itertools.pairwise([*at, len(rounds)])]
        assert max(gaps) - min(gaps) <= 1, (level, at)


async def test_a_sweep_runs_its_levels_spread_and_alternates_the_modes_run_by_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each mode an arm of the server (``Runtime.configured``), the server's own config after."""
    ran: list[tuple[int, bool]] = []
    runtime = Runtime(ServerConfig(fake_engine=True), FakeEngine)

    async def one_run(ctx: Any, level: int, text: str, stagger_s: float) -> concurrency.Run:
        ran.append((level, runtime.require_scheduler().priority.first_chunk_priority))
        return concurrency.Run([_session(100.0 * level)] * level, 1.0)

    monkeypatch.setattr(concurrency, "_one_run", one_run)
    await runtime.start()
    try:
        await asyncio.wait_for(runtime.wait_ready(), 10)
        ctx = BenchContext(Path("."), True, "", "", FakeEngine, runtime=runtime, say=lambda _: None)  # type: ignore[arg-type]
        modes = {"on": True, "off": False}
        out = await concurrency._sweep(ctx, "Hi.", (1, 8), "first_chunk_priority", modes, rounds=3, pooled=8)
        assert runtime.require_scheduler().priority.first_chunk_priority is True  # the server's own after
    finally:
        await runtime.stop()
    assert [row["runs"] for row in out["on"]] == [8, 3]
    eights = [mode for level, mode in ran if level == 8]
    assert eights == [True, False, False, True, True, False]  # alternated run by run
    rounds = [[1, 8], [1], [1, 8], [1], [1], [1, 8], [1], [1]]  # 8 not in the first three rounds only
    assert [level for level, _ in ran] == [level for levels in rounds for level in levels for _ in modes]


def test_the_report_says_the_runs_were_spread_only_where_they_were() -> None:
    result = _result(5)
    assert "spread evenly over the sweep" not in concurrency.markdown(result)  # a run from before
    result["spread"] = True
    assert "spread evenly over the sweep" in concurrency.markdown(result)
