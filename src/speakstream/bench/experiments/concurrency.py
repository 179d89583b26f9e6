"""Concurrency: N sessions speaking at once, with and without the first-chunk priority."""

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


async def one_level(ctx: BenchContext, sessions: int, text: str) -> dict[str, Any]:
    async def speaker() -> dict[str, Any] | None:
        try:
            async with SpeechSession(ctx.ws_url) as session:
                _, playback = await speak_timed(session, text)
                return playback.to_dict()
        except SpeakstreamError:
            return None

    loop = asyncio.get_running_loop()
    started = loop.time()
    results = await asyncio.gather(*(speaker() for _ in range(sessions)))
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
    crossing = {
        mode: next((r["sessions"] for r in rows if r["ttfa_ms"].get("p95", 0) > 1000), None)
        for mode, rows in out.items()
    }
    return {"text_chars": len(text), "modes": out, "p95_over_1s_at": crossing}


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for mode, levels in result["modes"].items():
        for r in levels:
            t = r["ttfa_ms"]
            rows.append(
                [
                    mode,
                    r["sessions"],
                    t.get("p50"),
                    t.get("p95"),
                    r["stall_ms"].get("mean"),
                    r["throughput"],
                    r["errors"],
                ]
            )
    crossing = ", ".join(f"{mode}: {n or 'not reached'}" for mode, n in result["p95_over_1s_at"].items())
    headers = [
        "scheduler",
        "sessions",
        "first audio p50 ms",
        "p95 ms",
        "stall ms (mean)",
        "audio s per wall s",
        "errors",
    ]
    return (
        f"Each session speaks a {result['text_chars']}-character reply at the same moment.\n\n"
        + table(headers, rows)
        + f"\np95 first audio crosses 1 s at (sessions): {crossing}.\n"
    )
