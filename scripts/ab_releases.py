"""Two checkouts' schedulers on the real engine, alternated process by process, so both meet the
same stretch of the machine's speed.

    git worktree add --detach /tmp/old <ref>
    python scripts/ab_releases.py --old /tmp/old/src --rounds 3 --runs 5 [--cpus 0] [--crowd]

Each process warms an engine, reads one session's first audio and audio rate (two bursts of one),
then runs ``--runs`` times two sessions at random over a second and two together (and 2N+4, eight,
together with ``--crowd``) through ``run_burst``: the bench reply, whole, a real-time player per
listener. Prints one JSON line a burst, then per arm and burst: admitted listeners with a gap, the
gaps, the refused, p50 / p95 first audio and p95 over one session's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent / "src"


def burst_lines(arm: str, runs: int, seed0: int, crowd: bool) -> None:
    """The worker: this process's bursts, one JSON line each."""
    from speakstream.bench.sim.burst import Burst, run_burst
    from speakstream.engine.kokoro import KokoroEngine

    engine = KokoroEngine()
    engine.warm()
    ones = [asyncio.run(run_burst(engine, Burst(1))) for _ in range(2)]
    rate = statistics.median(r.played[0].audio_per_wall_s for r in ones)
    one_s = statistics.median(r.first_audio_s()[0] for r in ones)
    for run in range(runs):
        bursts = [Burst(2, "random", seed=seed0 + run), Burst(2)] + ([Burst(8)] if crowd else [])
        for burst in bursts:
            result = asyncio.run(run_burst(engine, burst))
            line = {
                "arm": arm,
                "cpus": len(os.sched_getaffinity(0)),
                "rate": round(rate, 2),
                "one_s": round(one_s, 3),
                "burst": f"{burst.sessions} {burst.arrival}",
                "refused": result.refused,
                "gaps_ms": [round(1000 * g) for g in result.gaps_s()],
                "first_ms": [round(1000 * t) for t in result.first_audio_s()],
            }
            print(json.dumps(line), flush=True)


def tally(lines: list[dict[str, Any]]) -> list[str]:
    groups: dict[tuple[int, str, str], list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        groups[(line["cpus"], line["burst"], line["arm"])].append(line)
    out = []
    for (cpus, burst, arm), rows in sorted(groups.items()):
        gaps = [g for row in rows for g in row["gaps_ms"]]
        firsts = sorted(t for row in rows for t in row["first_ms"])
        ratios = sorted(t / 1000 / row["one_s"] for row in rows for t in row["first_ms"])
        out.append(
            f"{cpus} cpus, {burst}, {arm}: {sum(g > 0 for g in gaps)} of {len(gaps)} admitted with a gap "
            f"({sum(gaps)} ms, the worst {max(gaps, default=0)}), {sum(row['refused'] for row in rows)} refused; "
            f"first audio p50 {statistics.median(firsts):.0f} p95 {_p95(firsts):.0f} ms, "
            f"p95 over one {_p95(ratios):.2f}"
        )
    return out


def _p95(values: list[float]) -> float:
    return values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the other checkout's src folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cpus", default="", help="taskset's list, e.g. 0 (default: every CPU)")
    parser.add_argument("--crowd", action="store_true", help="eight together too")
    parser.add_argument("--worker", default="", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        burst_lines(args.worker, args.runs, args.seed, args.crowd)
        return
    lines: list[dict[str, Any]] = []
    for round_ in range(args.rounds):
        for arm, src in (("old", args.old.resolve()), ("new", HERE)):
            command = [sys.executable, __file__, "--old", str(args.old), "--worker", arm, "--runs", str(args.runs)]
            command += ["--seed", str(10 * round_)] + (["--crowd"] if args.crowd else [])
            if args.cpus:
                command = ["taskset", "-c", args.cpus, *command]
            env = {**os.environ, "PYTHONPATH": str(src)}
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            for text in done.stdout.splitlines():
                print(text, flush=True)
                lines.append(json.loads(text))
    print("\n".join(tally(lines)))


if __name__ == "__main__":
    main()
