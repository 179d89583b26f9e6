"""``speakstream sim calibrate|sweep|compare|levels``: the simulator of the engine's time."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console


def register(commands: Any) -> None:
    parser = commands.add_parser("sim", help="the scheduler's simulator: calibrate it, sweep it, check it")
    steps = parser.add_subparsers(dest="step", required=True)
    calibrate = steps.add_parser("calibrate", help="time the real engine's inferences and save the cost model")
    calibrate.add_argument("--runs", type=int, default=5, help="timings of each inference (median)")
    calibrate.set_defaults(handler=calibrate_command)
    sweep = steps.add_parser("sweep", help="speed x arrivals x load x text pace in the simulator")
    sweep.add_argument("--out", type=Path, default=Path("bench-out"), help="writes sim-sweep.md and sim-sweep.png")
    sweep.add_argument("--cores", type=int, default=2, help="the calibration to use (CPUs it was made on)")
    sweep.set_defaults(handler=sweep_command)
    compare = steps.add_parser("compare", help="calibrate, then the same bursts simulated and on the real engine")
    compare.set_defaults(handler=compare_command)
    levels = steps.add_parser("levels", help="the issue's load levels on the real engine, new and old policy")
    levels.add_argument("--rounds", type=int, default=2)
    levels.add_argument(
        "--arms", default="new,old", help="policies in turn, of new (the defaults), unheld (no opening held), old"
    )
    levels.set_defaults(handler=levels_command)


def calibrate_command(args: argparse.Namespace) -> int:
    from speakstream.bench.sim.calibrate import calibrate

    cost = calibrate(runs=args.runs)
    path = cost.save()
    print(json.dumps(asdict(cost), indent=2))
    Console(stderr=True).print(f"saved to {path}")
    return 0


def sweep_command(args: argparse.Namespace) -> int:
    from speakstream.bench.sim.cost import CostModel, calibration
    from speakstream.bench.sim.sweep import markdown, plot, sweep

    saved = calibration(args.cores)
    Console(stderr=True).print(f"cost model: {saved if saved.exists() else 'the defaults (2 cores)'}")
    cells = sweep(CostModel.load(args.cores))
    args.out.mkdir(parents=True, exist_ok=True)
    text = markdown(cells)
    (args.out / "sim-sweep.md").write_text(text + "\n")
    plot(cells, args.out / "sim-sweep.png")
    print(text)
    gapped = [c for c in cells if c.gapped]
    Console(stderr=True).print(f"{len(cells)} cells, {len(gapped)} with an admitted listener's gap; {args.out}")
    return 0


def compare_command(args: argparse.Namespace) -> int:
    from speakstream.bench.sim.agreement import PAIR_HEADERS, compare, pair_row
    from speakstream.bench.tables import table
    from speakstream.engine.kokoro import KokoroEngine

    engine = KokoroEngine()
    engine.warm()
    cost, pairs = compare(engine)
    print(json.dumps(asdict(cost)))
    print(table(PAIR_HEADERS, [pair_row(p) for p in pairs]))
    return 0 if all(p.agrees() for p in pairs) else 1


def levels_command(args: argparse.Namespace) -> int:
    from speakstream.bench.sim.agreement import ARMS, LEVEL_HEADERS, levels
    from speakstream.bench.tables import table
    from speakstream.engine.kokoro import KokoroEngine

    engine = KokoroEngine()
    engine.warm()
    arms = [arm for arm in args.arms.split(",") if arm]
    if unknown := set(arms) - set(ARMS):
        raise SystemExit(f"unknown arms {sorted(unknown)}: choose from {', '.join(ARMS)}")
    print(table(LEVEL_HEADERS, [level.row() for level in levels(engine, args.rounds, arms=arms)]))
    return 0
