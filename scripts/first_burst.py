"""The first bursts of listeners a fresh server meets, its sessions warmed at start-up or not.

    python scripts/first_burst.py [--trials 2] [--sessions 4,8,8,8]

Each trial starts a fresh in-process server twice, once with every copy of every part run once
on an opening's frames (``EngineConfig.warm_runs=1``) and once with only the wide copies warmed
(``warm_runs=0``, the default with shared weights: one synthesis), the order alternating. The
audio cache is off (each burst repeats one text). Each server meets one listener, then
``--sessions`` at once in turn, each speaking the four-sentence bench reply. Prints each burst's
p95 first audio and the first windows' engine time per lane: a burst that pays sessions' first
runs shows in both, the first crowded one most (its openings run on the narrow copies of the
``int8`` decoder, which nothing else ran).
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import replace
from typing import Any

from speakstream.bench.context import BenchContext
from speakstream.bench.experiments.concurrency import one_level
from speakstream.config import ServerConfig
from speakstream.data import bench_text
from speakstream.engine.kokoro import KokoroEngine
from speakstream.server.app import create_app
from speakstream.server.serve import ThreadedServer

ARMS = {"warm": 1, "wide only": 0}
"""Each arm's ``EngineConfig.warm_runs``."""


def bursts(arm: str, levels: list[int]) -> list[dict[str, Any]]:
    """One fresh server with ``arm``'s warm-up: one listener, then each level at once."""
    config = ServerConfig(cache_mb=0)  # each burst repeats one text: the cache would answer it

    def factory() -> KokoroEngine:
        return KokoroEngine(replace(config.engine_config(), warm_runs=ARMS[arm]))

    server = ThreadedServer(create_app(config, engine_factory=factory)).start()
    try:
        ctx = BenchContext.in_process(server)

        async def run() -> list[dict[str, Any]]:
            await one_level(ctx, 1, "Hello there.")
            return [await one_level(ctx, level, bench_text()) for level in levels]

        return asyncio.run(run())
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--sessions", default="4,8,8,8", help="the bursts, in order (sessions at once)")
    args = parser.parse_args()
    levels = [int(n) for n in args.sessions.split(",")]
    for trial in range(args.trials):
        for arm in list(ARMS)[:: 1 if trial % 2 == 0 else -1]:
            rows = bursts(arm, levels)
            cells = [f"{r['sessions']}: {r['ttfa_ms']['p95']:.1f} ({r['first_windows_ms']:.1f})" for r in rows]
            print(
                f"trial {trial + 1}, {arm:9s} p95 first audio ms (first windows / lane): {', '.join(cells)}", flush=True
            )


if __name__ == "__main__":
    main()
