"""Concurrency: N sessions speaking at once, with and without the first-chunk priority; then N
sessions arriving one after another while the others speak, with and without preemption (a
first window pausing the window running)."""

from __future__ import annotations

import asyncio
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


async def one_level(ctx: BenchContext, sessions: int, text: str, *, stagger_s: float = 0.0) -> dict[str, Any]:
    async def speaker(i: int) -> dict[str, Any] | None:
        await asyncio.sleep(i * stagger_s)
        try:
            async with SpeechSession(ctx.ws_url) as session:
                _, playback = await speak_timed(session, text)
                return playback.to_dict()
        except SpeakstreamError:
            return None

    loop = asyncio.get_running_loop()
    started = loop.time()
    results = await asyncio.gather(*(speaker(i) for i in range(sessions)))
    wall = loop.time() - started
    ok = [r for r in results if r is not None]
    return {
        "sessions": sessions,
        "errors": sessions - len(ok),
        "ttfa_ms": summary([r["ttfa_ms"] for r in ok]),
        "stall_ms": summary([r["stall_ms"] for r in ok]),
        "throughput": round(sum(r["audio_s"] for r in ok) / wall, 3),
    }


async def run(ctx: BenchContext) -> dict[str, Any]:
    levels = (1, 2, 4) if ctx.quick else (1, 2, 4, 8)
    text = replies()["greeting"]["text"] if ctx.quick else bench_text()
    out = await _sweep(ctx, text, levels, "first_chunk_priority", {"priority": True, "no priority": False})
    staggered: dict[str, list[dict[str, Any]]] = {}
    if ctx.runtime is not None:  # arrivals are compared through our own runtime only
        modes = {"preempt": True, "no preempt": False}
        staggered = await _sweep(
            ctx, text, (4,) if ctx.quick else (2, 4, 8), "preempt", modes, stagger_s=STAGGER_S, label="staggered"
        )
    crossing = {
        mode: next((r["sessions"] for r in rows if r["ttfa_ms"].get("p95", 0) > 1000), None)
        for mode, rows in out.items()
    }
    return {"text_chars": len(text), "modes": out, "p95_over_1s_at": crossing, "staggered": staggered}


async def _sweep(
    ctx: BenchContext,
    text: str,
    levels: tuple[int, ...],
    setting: str,
    modes: dict[str, bool],
    *,
    stagger_s: float = 0.0,
    label: str = "concurrency",
) -> dict[str, list[dict[str, Any]]]:
    """Each level with the scheduler's ``setting`` switched per mode, the configured value put
    back after; against a server that is not ours, one mode: as configured."""
    scheduler = ctx.runtime.scheduler if ctx.runtime is not None else None
    values: dict[str, bool | None] = dict(modes) if scheduler is not None else {"as configured": None}
    out: dict[str, list[dict[str, Any]]] = {mode: [] for mode in values}
    try:
        for level in levels:
            for mode, value in values.items():
                if scheduler is not None:
                    setattr(scheduler, setting, value)
                out[mode].append(await one_level(ctx, level, text, stagger_s=stagger_s))
                ctx.say(f"{label} {level} sessions ({mode}): p95 first audio {out[mode][-1]['ttfa_ms'].get('p95')} ms")
    finally:
        if scheduler is not None:
            setattr(scheduler, setting, getattr(ctx.runtime.config, setting))
    return out


HEADERS = ["scheduler", "sessions", "first audio p50 ms", "p95 ms", "stall ms (mean)", "audio s per wall s", "errors"]


def markdown(result: dict[str, Any]) -> str:
    crossing = ", ".join(f"{mode}: {n or 'not reached'}" for mode, n in result["p95_over_1s_at"].items())
    text = (
        f"Each session speaks a {result['text_chars']}-character reply at the same moment.\n\n"
        + table(HEADERS, _rows(result["modes"]))
        + f"\np95 first audio crosses 1 s at (sessions): {crossing}.\n"
    )
    if result.get("staggered"):
        text += (
            f"\nSessions arriving {STAGGER_S} s apart, each finding the others mid-reply. With preemption a first "
            "window pauses the window running (which then runs again) when the wait saved is longer than the "
            "stall added; without it, it always waits for that window:\n\n" + table(HEADERS, _rows(result["staggered"]))
        )
    return text


def _rows(modes: dict[str, list[dict[str, Any]]]) -> list[list[Any]]:
    return [
        [
            mode,
            r["sessions"],
            r["ttfa_ms"].get("p50"),
            r["ttfa_ms"].get("p95"),
            r["stall_ms"].get("mean"),
            r["throughput"],
            r["errors"],
        ]
        for mode, levels in modes.items()
        for r in levels
    ]
