"""Peers: kokoro-onnx's own streaming API (``create_stream``) against our server, same texts,
same run: time to first audio and real-time factor."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from speakstream.bench.context import BenchContext
from speakstream.bench.experiments.engine import peer
from speakstream.bench.speech import speak_timed
from speakstream.bench.stats import ratio, summary
from speakstream.bench.tables import table
from speakstream.client import SpeechSession
from speakstream.data import bench_text, replies

NAME = "peers"
TITLE = "Peers: kokoro-onnx create_stream vs speakstream"


async def _peer_stream(kokoro: Any, text: str) -> dict[str, float]:
    started = time.perf_counter()
    first = None
    audio_s = 0.0
    async for samples, rate in kokoro.create_stream(text, voice="af_heart"):
        first = first or time.perf_counter()
        audio_s += len(samples) / rate
    total = time.perf_counter() - started
    return {"ttfa_ms": 1000 * ((first or started) - started), "rtf": total / audio_s}


async def run(ctx: BenchContext) -> dict[str, Any]:
    texts = (
        {"4 sentences": ctx.sized(bench_text(), quick_sentences=2)}
        if ctx.quick
        else {"4 sentences": bench_text(), "long reply": replies()["long"]["text"]}
    )
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        kokoro = peer(ctx.engine_source().assets, Path(tmp))
        async with SpeechSession(ctx.ws_url) as session:
            for label, text in texts.items():
                runs: dict[str, list[dict[str, float]]] = {"kokoro-onnx create_stream": [], "speakstream": []}
                for trial in range(ctx.trials(3, 1)):
                    runs["kokoro-onnx create_stream"].append(await _peer_stream(kokoro, text))
                    _result, playback = await speak_timed(session, text)
                    total = playback.wall_s
                    runs["speakstream"].append({"ttfa_ms": playback.ttfa_s * 1000, "rtf": total / playback.audio_s})
                    ctx.say(f"peers {label} trial {trial + 1}")
                out[label] = {
                    name: {
                        "ttfa_ms": summary([r["ttfa_ms"] for r in rs]),
                        "rtf": summary([r["rtf"] for r in rs], digits=3),
                    }
                    for name, rs in runs.items()
                }
                out[label]["ttfa_ratio"] = ratio(
                    out[label]["kokoro-onnx create_stream"]["ttfa_ms"]["mean"],
                    out[label]["speakstream"]["ttfa_ms"]["mean"],
                )
    return out


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for label, r in result.items():
        for name in ("kokoro-onnx create_stream", "speakstream"):
            rows.append([label, name, r[name]["ttfa_ms"]["mean"], r[name]["rtf"]["mean"]])
        rows.append([label, "**first audio: kokoro-onnx / speakstream**", f"**{r['ttfa_ratio']}x**", ""])
    return table(["text", "system", "first audio mean ms", "RTF (total time / audio)"], rows)
