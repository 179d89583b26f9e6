"""``speakstream bench``: run experiments against a real server, write results, report and plots."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from speakstream.bench import plots, probe, report
from speakstream.bench.context import BenchContext, EngineHolder, device_info
from speakstream.bench.experiments import EXPERIMENTS


def run_bench(
    names: Sequence[str],
    *,
    out: Path,
    quick: bool,
    server: str | None,
    command: str,
    readme: Path | None,
    console: Console,
) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    names = list(names) or list(EXPERIMENTS)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise SystemExit(f"unknown experiment(s): {', '.join(unknown)}; choose from {', '.join(EXPERIMENTS)}")
    started = time.perf_counter()
    with _server(server, console) as (ws_url, http_url, runtime):
        holder = EngineHolder(runtime.engine if runtime is not None else None)
        ctx = BenchContext(
            out=out,
            quick=quick,
            ws_url=ws_url,
            http_url=http_url,
            engine_source=holder,
            runtime=runtime,
            say=lambda line: console.print(f"  {line}", style="dim"),
        )
        ctx.device = device_info(holder())
        date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        run: dict[str, Any] = {
            "command": command,
            "quick": quick,
            "device": ctx.device,
            "date": date,
            "experiments": {},
            "seconds": {},
            "engine_rtf": {},
        }
        for name in names:
            console.print(f"[bold]{name}[/]: {EXPERIMENTS[name].TITLE}")
            run["engine_rtf"][name] = probe.engine_rtf(holder(), tries=1 if quick else probe.TRIES)
            began = time.perf_counter()
            try:
                run["experiments"][name] = asyncio.run(EXPERIMENTS[name].run(ctx))
            except Exception as exc:  # one failed experiment must not lose the others' results
                console.print(f"[red]{name} failed: {exc}[/]")
                run["experiments"][name] = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
            run["seconds"][name] = round(time.perf_counter() - began, 1)
    run["total_seconds"] = round(time.perf_counter() - started, 1)
    run = report.merged(_earlier(out), run, list(EXPERIMENTS))
    ok = {n: r for n, r in run["experiments"].items() if "error" not in r}
    images = plots.make_all(ok, out)
    path = report.write(out, run, EXPERIMENTS, images)
    if readme is not None:
        image_dir = os.path.relpath(out, readme.parent)
        report.update_readme(readme, report.render(run, EXPERIMENTS, images, image_dir=image_dir))
    console.print(f"wrote {path}, results.json and {len(images)} plot(s) in {out} ({run['total_seconds']} s)")
    return run


class _server:
    """An in-process server with the real engine, or the URL given with ``--server``."""

    def __init__(self, url: str | None, console: Console) -> None:
        self.url, self.console = url, console
        self.threaded: Any = None

    def __enter__(self) -> tuple[str, str, Any]:
        if self.url:
            base = self.url.rstrip("/")
            ws = base.replace("http://", "ws://").replace("https://", "wss://") + "/invocations-bidirectional-stream"
            return ws, base, None
        from speakstream.config import ServerConfig
        from speakstream.server.app import create_app
        from speakstream.server.serve import ThreadedServer

        with self.console.status("loading Kokoro-82M and starting a server on 127.0.0.1"):
            # every experiment speaks its texts again and again: the audio cache stays off, so each
            # trial measures the engine (the cache has its own measurement)
            self.threaded = ThreadedServer(create_app(ServerConfig.from_env(cache_mb=0))).start()
        return self.threaded.ws_url, self.threaded.url, self.threaded.runtime

    def __exit__(self, *_: object) -> None:
        if self.threaded is not None:
            self.threaded.stop()


def _earlier(out: Path) -> dict[str, Any] | None:
    """The run already in ``out`` (its results.json), if any."""
    path = out / "results.json"
    try:
        earlier: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return earlier
