"""Concurrency: N sessions speaking at once, with and without the first-chunk priority; then N
sessions arriving one after another while the others speak, with and without preemption (a
first window pausing the window running). Each admitted listener is played in real time from its
first audio and its gaps counted; a reply the server refuses for capacity, or makes wait for
room, is counted too."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

from speakstream.bench.context import BenchContext
from speakstream.bench.speech import speak_timed
from speakstream.bench.stats import summary
from speakstream.bench.tables import table
from speakstream.client import SpeechSession
from speakstream.data import bench_text, replies
from speakstream.errors import SpeakstreamError

NAME = "concurrency"
TITLE = "Concurrency: simultaneous sessions"


STAGGER_S = 0.9
"""Between two arrivals in the staggered runs: each finds the others mid-reply."""


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a level."""

    sessions: list[dict[str, Any] | None]
    """Each session's playback (None: failed; ``{"refused": True}``: refused for capacity)."""
    wall_s: float
    first_windows_s: float | None = None
    """The engine's seconds on the run's first windows (phonemes, front and decoder), divided by
    how many it runs at once (its lanes, or the sessions when fewer: one alone takes every core):
    before that much time has passed, not every session can have heard its first audio, however
    the scheduler orders the work (None: not our server)."""


ROUNDS = 5
"""Runs of each level of the simultaneous sweep (modes alternated): its percentiles pool every
session of every run, so the one-session value is no single reply and p95 is no single worst.
With 3, the 8-session level's p95 (the 2nd-highest of 24) was one slow run's: two full bench
runs read 537.7 and 729.1 ms with runs from 366.6 to 742.2."""
STAGGERED_ROUNDS = 3
"""Runs of each level of the staggered sweep."""
POOLED = 20
"""... and more runs of a level with few sessions, until it pools this many: a p95 over the 3
replies of 3 one-session runs is their worst (200.5 ms in one bench run, against a median of
152.1), and issue 12's targets divide by it."""


def runs_of(level: int, rounds: int, pooled: int) -> int:
    """Runs of a level of ``level`` sessions: ``rounds``, or as many as pool ``pooled`` sessions."""
    return max(rounds, math.ceil(pooled / level))


def spread(planned: dict[int, int]) -> list[list[int]]:
    """The levels each round of a sweep runs: a level of ``planned[level]`` runs in that many
    rounds, spread evenly over all of them from the first. Run in the first rounds only, the
    levels with few runs (8 sessions: 3) sampled the machine's first minutes and the one-session
    level all of them; on a shared machine whose speed drifts by a third over minutes, their
    ratio then measured the drift as much as the engine."""
    rounds = max(planned.values())
    return [
        [level for level, runs in planned.items() if math.ceil(r * runs / rounds) < math.ceil((r + 1) * runs / rounds)]
        for r in range(rounds)
    ]


async def one_level(
    ctx: BenchContext, sessions: int, text: str, *, stagger_s: float = 0.0, **options: Any
) -> dict[str, Any]:
    """``sessions`` each speaking ``text`` (with the message ``options``), ``stagger_s`` apart."""
    return _pooled(sessions, [await _one_run(ctx, sessions, text, stagger_s, **options)])


async def _one_run(ctx: BenchContext, sessions: int, text: str, stagger_s: float, **options: Any) -> Run:
    async def speaker(i: int) -> dict[str, Any] | None:
        await asyncio.sleep(i * stagger_s)
        try:
            async with SpeechSession(ctx.ws_url) as session:
                result, playback = await speak_timed(session, text, **options)
        except SpeakstreamError:
            return None
        final = result.final or {}
        if final.get("code") == "overloaded":
            return {"refused": True}
        if final.get("type") != "synthesis_complete":
            return None
        waited = float(final.get("timings", {}).get("admission_wait_s", 0.0))
        return {**playback.to_dict(), "waited_s": waited}

    loop = asyncio.get_running_loop()
    engine_s, started = _first_window_seconds(ctx), loop.time()
    results = await asyncio.gather(*(speaker(i) for i in range(sessions)))
    wall_s, after = loop.time() - started, _first_window_seconds(ctx)
    if engine_s is None or after is None or ctx.runtime.scheduler is None:
        return Run(list(results), wall_s)
    return Run(list(results), wall_s, (after - engine_s) / min(sessions, ctx.runtime.scheduler.lanes))


def _first_window_seconds(ctx: BenchContext) -> float | None:
    """The in-process server's engine seconds on first windows so far (its metric; None: not ours)."""
    if ctx.runtime is None:
        return None
    sample = ctx.runtime.metrics.registry.get_sample_value("speakstream_engine_seconds_total", {"window": "first"})
    return float(sample or 0.0)


def _pooled(sessions: int, runs: list[Run]) -> dict[str, Any]:
    every = [r for run in runs for r in run.sessions]
    ok = [r for r in every if r is not None and not r.get("refused")]
    firsts = [run.first_windows_s for run in runs if run.first_windows_s is not None]
    return {
        "sessions": sessions,
        "runs": len(runs),
        "errors": sum(1 for r in every if r is None),
        "refused": sum(1 for r in every if r is not None and r.get("refused")),
        "delayed": sum(1 for r in ok if r.get("waited_s", 0.0) > 0.05),
        "gaps": round(sum(r["stalls"] for r in ok) / max(1, len(ok)), 2),
        "ttfa_ms": summary([r["ttfa_ms"] for r in ok]),
        "stall_ms": summary([r["stall_ms"] for r in ok]),
        "throughput": round(sum(r["audio_s"] for r in ok) / sum(run.wall_s for run in runs), 3),
        "first_windows_ms": round(1000 * sum(firsts) / len(firsts), 1) if firsts else None,
    }


async def run(ctx: BenchContext) -> dict[str, Any]:
    levels = (1, 2, 4) if ctx.quick else (1, 2, 4, 8, 16)
    text = replies()["greeting"]["text"] if ctx.quick else bench_text()
    modes = {"priority": True, "no priority": False}
    rounds, pooled = ctx.trials(ROUNDS, 1), ctx.trials(POOLED, 0)
    out = await _sweep(ctx, text, levels, "first_chunk_priority", modes, rounds=rounds, pooled=pooled)
    staggered: dict[str, list[dict[str, Any]]] = {}
    if ctx.runtime is not None:  # arrivals are compared through our own runtime only
        modes = {"preempt": True, "no preempt": False}
        arrivals = (4,) if ctx.quick else (2, 4, 8, 16)
        staggered = await _sweep(  # one run a level swung from 180 to 670 ms at 4 sessions
            ctx,
            text,
            arrivals,
            "preempt",
            modes,
            stagger_s=STAGGER_S,
            label="staggered",
            rounds=ctx.trials(STAGGERED_ROUNDS, 1),
        )
    crossing = {
        mode: next((r["sessions"] for r in rows if r["ttfa_ms"].get("p95", 0) > 1000), None)
        for mode, rows in out.items()
    }
    return {"text_chars": len(text), "modes": out, "p95_over_1s_at": crossing, "staggered": staggered, "spread": True}


async def _sweep(
    ctx: BenchContext,
    text: str,
    levels: tuple[int, ...],
    setting: str,
    modes: dict[str, bool],
    *,
    stagger_s: float = 0.0,
    label: str = "concurrency",
    rounds: int = 1,
    pooled: int = 0,
) -> dict[str, list[dict[str, Any]]]:
    """Each level ``rounds`` times, or as many as pool ``pooled`` sessions (``runs_of``), its runs
    spread over the sweep (``spread``), with the scheduler's ``setting`` switched per mode (the
    order alternated run by run), the configured value put back after; against a server that is
    not ours, one mode: as configured."""
    scheduler = ctx.runtime.scheduler if ctx.runtime is not None else None
    values: dict[str, bool | None] = dict(modes) if scheduler is not None else {"as configured": None}
    runs: dict[tuple[str, int], list[Run]] = {}
    planned = {level: runs_of(level, rounds, pooled) for level in levels}
    for round_ in spread(planned):
        for level in round_:
            done = len(runs.get((next(iter(values)), level), []))
            for mode, value in list(values.items())[:: 1 if done % 2 == 0 else -1]:
                async with ctx.configured(None, **({} if value is None else {setting: value})):
                    runs.setdefault((mode, level), []).append(await _one_run(ctx, level, text, stagger_s))
                ttfa = _pooled(level, runs[mode, level][-1:])["ttfa_ms"].get("p95")
                ctx.say(f"{label} {level} sessions ({mode}) {done + 1}/{planned[level]}: p95 first audio {ttfa} ms")
    return {mode: [_pooled(level, runs[mode, level]) for level in levels] for mode in values}


HEADERS = [
    "scheduler",
    "sessions",
    "first audio p50 ms",
    "p95 ms",
    "gaps a reply",
    "stall ms (mean)",
    "audio s per wall s",
    "refused / delayed",
    "errors",
]
SPREAD = (
    "; a level's runs are spread evenly over the sweep, so every level samples the same stretch of the machine's time"
)
BOUND = "first windows' engine time / lanes, ms"
BOUND_NOTE = (
    "\nFirst windows' engine time / lanes (mean per run): the engine's seconds on the run's first windows "
    "(phonemes, front and decoder; two that share the cores each take longer) divided by how many it runs "
    "at once (its lanes, or the sessions when fewer). The last session of a run cannot hear its first audio "
    "sooner, however the work is ordered: where p95 is near it, first audio is bound by compute, not by the "
    "scheduler.\n"
)


def markdown(result: dict[str, Any]) -> str:
    crossing = ", ".join(f"{mode}: {n or 'not reached'}" for mode, n in result["p95_over_1s_at"].items())
    bound, pooled = _has_bound(result["modes"]), _rounds(result["modes"])
    text = (
        f"Each session speaks a {result['text_chars']}-character reply at the same moment{pooled}"
        + (SPREAD if result.get("spread") and pooled else "")
        + ".\n\n"
        + table(_headers(bound), _rows(result["modes"], bound))
        + f"\np95 first audio crosses 1 s at (sessions): {crossing}.\n"
        + (BOUND_NOTE if bound else "")
    )
    if result.get("staggered"):
        text += (
            f"\nSessions arriving {STAGGER_S} s apart, each finding the others mid-reply"
            f"{_rounds(result['staggered'])}. "
            "With preemption a first window pauses the window running (which then runs again) when the wait saved "
            "is longer than the stall added; without it, it always waits for that window:\n\n"
            + table(HEADERS, _rows(result["staggered"], bound=False))
        )
    return text


def _rounds(modes: dict[str, list[dict[str, Any]]]) -> str:
    """How many runs each row pools (runs before the field was recorded: one)."""
    rows = next(iter(modes.values()))
    runs = [row.get("runs", 1) for row in rows]
    if max(runs) == 1:
        return ""
    if len(set(runs)) == 1:
        ran = f"{runs[0]} times"
    else:
        each = ", ".join(f"{n} at {row['sessions']}" for n, row in zip(runs, rows, strict=True))
        ran = f"{min(runs)} times or more, pooling at least {POOLED} sessions (runs: {each} sessions)"
    return (
        f"; each level ran {ran}, the two settings alternated, and its first-audio figures pool every session "
        "of every run"
    )


def _has_bound(modes: dict[str, list[dict[str, Any]]]) -> bool:
    """Whether the runs measured their first windows' engine time (our own server, since it was recorded)."""
    return any(r.get("first_windows_ms") is not None for levels in modes.values() for r in levels)


def _headers(bound: bool) -> list[str]:
    return [*HEADERS[:4], BOUND, *HEADERS[4:]] if bound else HEADERS


def _rows(modes: dict[str, list[dict[str, Any]]], bound: bool) -> list[list[Any]]:
    return [
        [
            mode,
            r["sessions"],
            r["ttfa_ms"].get("p50"),
            r["ttfa_ms"].get("p95"),
            *([r.get("first_windows_ms")] if bound else []),
            r.get("gaps", "?"),
            r["stall_ms"].get("mean"),
            r["throughput"],
            f"{r.get('refused', 0)} / {r.get('delayed', 0)}",
            r["errors"],
        ]
        for mode, levels in modes.items()
        for r in levels
    ]
