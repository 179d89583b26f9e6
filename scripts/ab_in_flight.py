"""First audio with the engine told the scheduler's windows in flight (``Lanes.in_flight``) and
without, alternated per trial on one in-process server.

    python scripts/ab_in_flight.py --trials 8

Without the count, two windows dispatched together reach ONNX Runtime a few milliseconds apart:
the first takes the wide session (every core), the second a narrow one, and three threads share
2 cores until the first ends. Each trial runs two sessions at once, two 0.9 s apart and four at
once, each speaking the four-sentence bench reply, in both settings (their order alternating).
Prints p95 first audio, audio seconds per wall second and the stalls a real-time player heard.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import numpy as np

from speakstream.bench.context import BenchContext
from speakstream.bench.experiments.concurrency import STAGGER_S, one_level
from speakstream.config import ServerConfig
from speakstream.data import bench_text
from speakstream.engine.kokoro import KokoroEngine
from speakstream.server.app import create_app
from speakstream.server.serve import ThreadedServer

CASES = (("2 at once", 2, 0.0), ("2 staggered", 2, STAGGER_S), ("4 at once", 4, 0.0))


async def _trials(ctx: BenchContext, lanes: Any, trials: int) -> dict[tuple[str, str], list[tuple[float, ...]]]:
    count = lanes.in_flight
    found: dict[tuple[str, str], list[tuple[float, ...]]] = {}
    await one_level(ctx, 1, "Warm up, please.")
    for trial in range(trials):
        settings = ("counted", "not counted") if trial % 2 == 0 else ("not counted", "counted")
        for name, sessions, stagger in CASES:
            for setting in settings:
                lanes.in_flight = count if setting == "counted" else None
                r = await one_level(ctx, sessions, bench_text(), stagger_s=stagger)
                found.setdefault((name, setting), []).append(
                    (r["ttfa_ms"]["p95"], r["throughput"], r["stall_ms"]["mean"])
                )
    lanes.in_flight = count
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    args = parser.parse_args()
    server = ThreadedServer(create_app(ServerConfig())).start()
    try:
        engine = server.runtime.engine
        if not isinstance(engine, KokoroEngine) or engine.windowed is None or engine.parallel < 2:
            raise SystemExit("needs two engine lanes (a CPU with 2 cores or more, the fast graph)")
        ctx, lanes = BenchContext.in_process(server), engine.windowed.lanes
        found = asyncio.run(_trials(ctx, lanes, args.trials))
    finally:
        server.stop()
    for (name, setting), values in sorted(found.items()):
        a = np.array(values)
        print(
            f"{name:12s} {setting:11s}: p95 first audio mean {a[:, 0].mean():7.1f} ms "
            f"(min {a[:, 0].min():.0f}, max {a[:, 0].max():.0f}, n {len(a)}), "
            f"audio s per s {a[:, 1].mean():.2f}, stall ms per session {a[:, 2].mean():.0f}"
        )


if __name__ == "__main__":
    main()
