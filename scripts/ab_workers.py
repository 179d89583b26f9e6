"""First audio and throughput with one engine worker against two (``ServerConfig.lanes``), side by side.

    python scripts/ab_workers.py --rounds 2 --trials 2

Each round starts one in-process server per setting in turn and runs, per trial: one session
alone, two sessions 0.9 s apart (the second finds the first mid-reply), and four at once, each
speaking the four-sentence bench reply. Prints p95 first audio and audio seconds per wall second.
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
from speakstream.server.app import create_app
from speakstream.server.serve import ThreadedServer

CASES = (("1 alone", 1, 0.0), ("2 staggered", 2, STAGGER_S), ("4 at once", 4, 0.0))


async def _trials(ctx: BenchContext, trials: int) -> dict[str, list[tuple[float, float]]]:
    found: dict[str, list[tuple[float, float]]] = {}
    for _ in range(trials):
        for name, sessions, stagger in CASES:
            result = await one_level(ctx, sessions, bench_text(), stagger_s=stagger)
            found.setdefault(name, []).append((result["ttfa_ms"]["p95"], result["throughput"]))
    return found


def _measure(workers: int, trials: int) -> dict[str, list[tuple[float, float]]]:
    server = ThreadedServer(create_app(ServerConfig(lanes=workers))).start()
    try:
        ctx = BenchContext.in_process(server)
        return asyncio.run(_trials(ctx, trials))
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--trials", type=int, default=2)
    args = parser.parse_args()
    found: dict[tuple[str, int], list[Any]] = {}
    for _ in range(args.rounds):
        for workers in (1, 2):
            for name, values in _measure(workers, args.trials).items():
                found.setdefault((name, workers), []).extend(values)
    for (name, workers), values in sorted(found.items()):
        firsts = [v[0] for v in values]
        print(
            f"{name:12s} workers={workers}: p95 first audio mean {np.mean(firsts):7.1f} ms "
            f"(min {min(firsts):.0f}, max {max(firsts):.0f}, n {len(firsts)}), "
            f"audio s per s {np.mean([v[1] for v in values]):.2f}"
        )


if __name__ == "__main__":
    main()
