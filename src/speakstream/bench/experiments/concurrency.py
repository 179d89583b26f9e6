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
    modes = ["priority", "no priority"] if ctx.runtime is not None else ["as configured"]
    out: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for level in levels:
        for mode in modes:
            if ctx.runtime is not None:
                ctx.runtime.scheduler.first_chunk_priority = mode == "priority"
            out[mode].append(await one_level(ctx, level, text))
            ctx.say(f"concurrency {level} sessions ({mode}): p95 first audio {out[mode][-1]['ttfa_ms'].get('p95')} ms")
    if ctx.runtime is not None:
        ctx.runtime.scheduler.first_chunk_priority = ctx.runtime.config.first_chunk_priority
    staggered = await _staggered(ctx, text, (4,) if ctx.quick else (2, 4, 8))
    crossing = {
        mode: next((r["sessions"] for r in rows if r["ttfa_ms"].get("p95", 0) > 1000), None)
        for mode, rows in out.items()
    }
    return {"text_chars": len(text), "modes": out, "p95_over_1s_at": crossing, "staggered": staggered}


async def _staggered(ctx: BenchContext, text: str, levels: tuple[int, ...]) -> dict[str, list[dict[str, Any]]]:
    """Arrivals ``STAGGER_S`` apart, preemption on and off in turn (through our own runtime only)."""
    if ctx.runtime is None:
        return {}
    scheduler = ctx.runtime.scheduler
    out: dict[str, list[dict[str, Any]]] = {"preempt": [], "no preempt": []}
    try:
        for level in levels:
            for mode in out:
                scheduler.preempt = mode == "preempt"
                out[mode].append(await one_level(ctx, level, text, stagger_s=STAGGER_S))
                ctx.say(
                    f"staggered {level} sessions ({mode}): p95 first audio {out[mode][-1]['ttfa_ms'].get('p95')} ms"
                )
    finally:
        scheduler.preempt = ctx.runtime.config.preempt
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
