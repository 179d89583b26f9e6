"""Engine against kokoro-onnx's ``Kokoro.create`` on the same model file, text and machine.

Interleaved trials in one process: time to audio and real-time factor for a one-sentence and a
four-sentence text; peak memory of each engine measured in its own subprocess.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from speakstream.bench.context import BenchContext
from speakstream.bench.process import ServerProcess
from speakstream.bench.stats import ratio, summary
from speakstream.bench.tables import table
from speakstream.data import bench_text
from speakstream.engine.model.assets import Assets

NAME = "engine"
TITLE = "Engine: speakstream vs kokoro-onnx (Kokoro.create)"


def texts(quick: bool = False) -> dict[str, str]:
    four = bench_text()
    one = {"1 sentence": four.split(". ")[0] + "."}
    return one if quick else {**one, "4 sentences": four}


def voices_npz(assets: Assets, directory: Path) -> Path:
    """kokoro-onnx reads all voices from one .npz; build it from our voice files."""
    path = directory / "voices.npz"
    arrays = {name: np.fromfile(p, dtype="<f4").reshape(510, 1, 256) for name, p in assets.voice_files().items()}
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path


def peer(assets: Assets, directory: Path) -> Any:
    from kokoro_onnx import Kokoro

    return Kokoro(str(assets.model), str(voices_npz(assets, directory)))


async def run(ctx: BenchContext) -> dict[str, Any]:
    ours = ctx.engine_source()
    with tempfile.TemporaryDirectory() as tmp:
        kokoro_onnx = peer(ours.assets, Path(tmp))
        engines: dict[str, Callable[[str], float]] = {
            "speakstream": lambda t: ours.synthesize(t, voice="af_heart").duration_s,
            "kokoro-onnx": lambda t: _peer_seconds(kokoro_onnx, t),
        }
        chosen = texts(ctx.quick)
        timings = await asyncio.to_thread(_measure, engines, chosen, ctx.trials(5, 1), ctx.say)
        longest = list(chosen.values())[-1]
        probes = (SERVER, "speakstream engine", "speakstream engine (int8 graph)", "kokoro-onnx")
        memory = {name: await asyncio.to_thread(_peak_memory, name, longest) for name in probes}
    return _summarise(timings, memory, chosen)


def _peer_seconds(kokoro: Any, text: str) -> float:
    audio, rate = kokoro.create(text, voice="af_heart")
    return float(len(audio) / rate)


def _measure(
    engines: dict[str, Callable[[str], float]], chosen: dict[str, str], trials: int, say: Callable[[str], None]
) -> dict[str, Any]:
    timings: dict[str, dict[str, list[tuple[float, float]]]] = {t: {n: [] for n in engines} for t in chosen}
    for trial in range(trials):
        order = list(engines) if trial % 2 == 0 else list(reversed(engines))
        for label, text in chosen.items():
            for name in order:
                started = time.perf_counter()
                audio_s = engines[name](text)
                timings[label][name].append((time.perf_counter() - started, audio_s))
        say(f"engine trial {trial + 1}/{trials}")
    return timings


def _summarise(timings: dict[str, Any], memory: dict[str, float | None], chosen: dict[str, str]) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for label, by_engine in timings.items():
        rows[label] = {}
        for name, runs in by_engine.items():
            seconds = [s for s, _ in runs]
            rows[label][name] = {
                "time_ms": summary(seconds, scale=1000),
                "audio_s": round(runs[0][1], 2),
                "rtf": round(float(np.median([s / a for s, a in runs])), 3),
            }
        ours, theirs = rows[label]["speakstream"], rows[label]["kokoro-onnx"]
        rows[label]["speedup"] = ratio(theirs["time_ms"]["p50"], ours["time_ms"]["p50"])
    return {"texts": chosen, "rows": rows, "peak_rss_mb": memory}


SERVER = "speakstream server (default settings)"
"""The memory probe of a server as ``speakstream serve`` starts it: two lanes, every decoder it uses."""


def _peak_memory(name: str, text: str) -> float | None:
    """Peak RSS (MB, VmHWM) of a fresh process that loads one engine (or a whole server, asked
    over HTTP) and speaks ``text``."""
    if name == SERVER:
        return _server_peak(text)
    code = "import sys\nfrom speakstream.bench.experiments.engine import _probe\n_probe(sys.argv[1], sys.argv[2])\n"
    result = subprocess.run([sys.executable, "-c", code, name, text], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        return None
    return round(float(result.stdout.strip().splitlines()[-1]), 1)


def _server_peak(text: str) -> float | None:
    with ServerProcess() as server:
        body = {"model": "kokoro", "input": text, "voice": "af_heart", "response_format": "pcm"}
        response = httpx.post(f"{server.url}/v1/audio/speech", json=body, timeout=300)
        if response.status_code != 200 or not response.content:
            return None
        return round(server.peak_rss_mb(), 1)


def _probe(name: str, text: str) -> None:
    from speakstream.engine.config import EngineConfig
    from speakstream.engine.kokoro import KokoroEngine
    from speakstream.engine.model.assets import locate

    if name.startswith("speakstream"):
        graph = "timed" if "int8" in name else "fast"  # the engine used directly: no scheduler
        KokoroEngine(EngineConfig(graph=graph)).synthesize(text, voice="af_heart")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            peer(locate(), Path(tmp)).create(text, voice="af_heart")
    status = Path("/proc/self/status").read_text()
    peak_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
    print(peak_kb / 1024)


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for label, by_engine in result["rows"].items():
        for name in ("speakstream", "kokoro-onnx"):
            r = by_engine[name]
            t = r["time_ms"]
            rows.append([label, name, t["p50"], t["mean"], t["n"], r["audio_s"], r["rtf"]])
        rows.append(
            [label, "**speed-up (kokoro-onnx / speakstream, p50)**", f"**{by_engine['speedup']}x**", "", "", "", ""]
        )
    headers = ["text", "engine", "time to audio p50 ms", "mean ms", "trials", "audio s", "RTF"]
    memory = table(["own process, longest text", "peak RSS MB"], list(result["peak_rss_mb"].items()))
    return table(headers, rows) + "\n" + memory
