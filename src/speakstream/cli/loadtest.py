"""``speakstream loadtest [SUITE...] [--sessions 1,2,4,8,16] [--quick] [--server URL] [--fake-engine]``."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
from pathlib import Path
from typing import Any

from rich.console import Console

SUITES = ("load", "overload", "faults", "soak", "fuzz", "abuse")


def register(commands: Any) -> None:
    parser = commands.add_parser("loadtest", help="load, overload, fault, soak, fuzz and abuse suites; prints figures")
    parser.add_argument("suites", nargs="*", help=f"any of {', '.join(SUITES)} (default: all)")
    parser.add_argument("--sessions", default="1,2,4,8,16", help="load levels, comma-separated")
    parser.add_argument(
        "--server", "--url", dest="server", help="run the load suite against this running server (base URL)"
    )
    parser.add_argument("--turns", type=int, default=1, help="load: replies each session speaks in turn")
    parser.add_argument("--reply", default="greeting", help="load: which bundled reply (greeting, weather, long, ...)")
    parser.add_argument("--ramp", type=float, default=0.0, help="load: seconds between session starts (0: all at once)")
    parser.add_argument("--fake-engine", action="store_true", help="load a tone engine instead of Kokoro")
    parser.add_argument("--quick", action="store_true", help="bounded sizes (what CI runs)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--readme", type=Path, help="replace the measured part of this page (docs/reliability.md)")
    parser.set_defaults(handler=loadtest_command)


def loadtest_command(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    suites = args.suites or list(SUITES)
    run = asyncio.run(run_suites(suites, args, console))
    if args.json:
        args.json.write_text(json.dumps(run, indent=2) + "\n")
    from speakstream.loadtest.report import END, START, render

    command = (
        "speakstream loadtest" + (" --quick" if args.quick else "") + (" --fake-engine" if args.fake_engine else "")
    )
    text = render(run, command)
    Console().print(text)
    if args.readme:
        from speakstream.bench.report import update_readme

        update_readme(args.readme, text, start=START, end=END)
    return 0


async def run_suites(suites: list[str], args: argparse.Namespace, console: Console) -> dict[str, Any]:
    from speakstream.loadtest import abuse, faults, fuzz, overload, soak

    run: dict[str, Any] = {
        "quick": args.quick,
        "engine": "fake" if args.fake_engine else "Kokoro",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "suites": {},
    }
    for suite in suites:
        console.print(f"[bold]{suite}[/]")
        if suite == "load":
            levels = [int(n) for n in args.sessions.split(",")]
            run["suites"]["load"] = await _load(args, levels)
        elif suite == "overload":
            run["suites"]["overload"] = await overload.run_overload()
        elif suite == "faults":
            run["suites"]["faults"] = await faults.run_faults(vanishing=20 if args.quick else 100)
        elif suite == "soak":
            run["suites"]["soak"] = await soak.run_soak(
                messages=200 if args.quick else 2000, sessions=50 if args.quick else 500
            )
        elif suite == "fuzz":
            run["suites"]["fuzz"] = await fuzz.run_fuzz(
                frames=300 if args.quick else 10_000, bodies=100 if args.quick else 1_000
            )
        elif suite == "abuse":
            run["suites"]["abuse"] = await abuse.run_abuse(fake_engine=args.fake_engine, trials=3 if args.quick else 8)
        else:
            raise SystemExit(f"unknown suite {suite}; choose from {', '.join(SUITES)}")
    return run


async def _load(args: argparse.Namespace, levels: list[int]) -> list[dict[str, Any]]:
    from speakstream.bench.process import ServerProcess
    from speakstream.loadtest import load

    if args.server:
        url = args.server.rstrip("/").replace("http", "ws", 1) + "/invocations-bidirectional-stream"
        return await load.run_load(url, levels, reply_id=args.reply, turns=args.turns, ramp_s=args.ramp)
    extra = ["--fake-engine"] if args.fake_engine else []
    # one reply spoken again and again: without the audio cache, so the engine is what is measured
    with ServerProcess(*extra, "--max-sessions", str(max(levels) + 4), env={"SPEAKSTREAM_CACHE_MB": "0"}) as server:
        return await load.run_load(server.ws_url, levels, reply_id=args.reply, turns=args.turns, ramp_s=args.ramp)
