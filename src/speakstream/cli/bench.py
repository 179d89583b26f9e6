"""``speakstream bench [EXPERIMENT...] [--quick] [--out DIR] [--server URL] [--readme docs/performance.md]``."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

EXPERIMENT_NAMES = (
    "engine streaming precision accuracy languages text isolated agent stalls sound formats cache"
    " concurrency loaded peers dialects"
).split()
"""``bench.experiments.EXPERIMENTS``' names, in their order (that module takes seconds to import)."""


def register(commands: Any) -> None:
    parser = commands.add_parser("bench", help="run the benchmark suite; writes results.json, report.md, plots")
    parser.add_argument(
        "experiments",
        nargs="*",
        help="any of: " + " ".join(EXPERIMENT_NAMES) + " (default: all)",
    )
    parser.add_argument("--quick", action="store_true", help="fewer trials and smaller inputs (minutes)")
    parser.add_argument("--out", type=Path, default=Path("bench-out"))
    parser.add_argument("--server", help="measure a running server (base URL) instead of starting one")
    parser.add_argument("--readme", type=Path, help="also replace the measured part of this page (docs/performance.md)")
    parser.set_defaults(handler=bench_command)


def bench_command(args: argparse.Namespace) -> int:
    from speakstream.bench.runner import run_bench

    command = "speakstream " + " ".join(shlex.quote(a) for a in sys.argv[1:] if a != "-v")
    run = run_bench(
        args.experiments,
        out=args.out,
        quick=args.quick,
        server=args.server,
        command=command,
        readme=args.readme,
        console=Console(stderr=True),
    )
    failed = [n for n, r in run["experiments"].items() if "error" in r]
    return 1 if failed else 0
