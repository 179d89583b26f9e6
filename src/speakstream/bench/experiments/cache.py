"""The audio cache: a phrase an agent says again, answered with no engine time.

Two servers on the bench's engine, one with the cache (``cache_mb``) and one without, the trials
alternated: first audio of the same phrase repeated against the same phrase made each time, and
the engine seconds each took. Then the hit ratio of the agent demo's replies spoken as a
conversation repeats them, and the cache's bound under a flood of distinct texts.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import httpx

from speakstream.bench.context import BenchContext
from speakstream.bench.speech import speak_timed
from speakstream.bench.stats import summary
from speakstream.bench.tables import table
from speakstream.client import SpeechSession
from speakstream.config import ServerConfig
from speakstream.data import replies
from speakstream.server.app import create_app
from speakstream.server.serve import ThreadedServer

NAME = "cache"
TITLE = "Audio cache: a repeated phrase against the same phrase made again"
PHRASES = ("One moment, please.", "Sure, let me check that for you.", "Is there anything else I can help with?")
FLOOD_MB = 1
"""The small cache the flood of distinct texts is sent to."""


def _server(ctx: BenchContext, cache_mb: int) -> ThreadedServer:
    engine = ctx.engine_source()
    return ThreadedServer(create_app(ServerConfig(cache_mb=cache_mb), engine_factory=lambda: engine)).start()


def _stats(server: ThreadedServer) -> dict[str, float]:
    found: dict[str, float] = {}
    for line in httpx.get(f"{server.url}/metrics", timeout=10).text.splitlines():
        for name in ("hits_total", "misses_total", "bytes", "max_bytes", "entries"):
            if line.startswith(f"speakstream_cache_{name} "):
                found[name] = float(line.split()[1])
    return found


def _engine_ms(result: Any) -> float:
    timings = (result.final or {}).get("timings", {})
    return 1000 * float(timings.get("phonemize_s", 0.0)) + 1000 * float(timings.get("inference_s", 0.0))


async def run(ctx: BenchContext) -> dict[str, Any]:
    cached, plain = _server(ctx, ServerConfig().cache_mb), _server(ctx, 0)
    try:
        async with AsyncExitStack() as stack:
            sessions = {
                name: await stack.enter_async_context(SpeechSession(server.ws_url))
                for name, server in (("cached", cached), ("made", plain))
            }
            for session in sessions.values():
                await speak_timed(session, "Warm up.")
            for phrase in PHRASES:  # the cached server has said each once
                await speak_timed(sessions["cached"], phrase)
            runs: dict[str, dict[str, list[float]]] = {n: {"ttfa_ms": [], "engine_ms": []} for n in sessions}
            trials = ctx.trials(5, 1)
            for trial in range(trials):
                for name in sessions if trial % 2 == 0 else reversed(list(sessions)):
                    for phrase in PHRASES:
                        result, playback = await speak_timed(sessions[name], phrase)
                        runs[name]["ttfa_ms"].append(1000 * playback.ttfa_s)
                        runs[name]["engine_ms"].append(_engine_ms(result))
                ctx.say(f"cache trial {trial + 1}/{trials}")
        conversation = await _conversation(cached, ctx)
        flood = await _flood(ctx)
    finally:
        cached.stop()
        plain.stop()
    out: dict[str, Any] = {n: {k: summary(v) for k, v in r.items()} for n, r in runs.items()}
    out["ratio"] = round(out["made"]["ttfa_ms"]["mean"] / max(out["cached"]["ttfa_ms"]["mean"], 1e-3), 1)
    return {"phrases": list(PHRASES), "first_audio": out, "conversation": conversation, "flood": flood}


async def _conversation(server: ThreadedServer, ctx: BenchContext) -> dict[str, Any]:
    """Every bundled reply spoken in turn, twice, as a conversation repeats itself: the share of
    chunks the cache answered."""
    before = _stats(server)
    texts = [r["text"] for r in replies().values()][: 3 if ctx.quick else None]
    async with SpeechSession(server.ws_url) as session:
        for _ in range(2):
            for text in texts:
                await speak_timed(session, text)
    after = _stats(server)
    hits = after.get("hits_total", 0.0) - before.get("hits_total", 0.0)
    misses = after.get("misses_total", 0.0) - before.get("misses_total", 0.0)
    return {
        "replies": len(texts),
        "hits": int(hits),
        "misses": int(misses),
        "hit_ratio": round(hits / max(1.0, hits + misses), 3),
    }


async def _flood(ctx: BenchContext) -> dict[str, Any]:
    """Distinct texts sent to a small cache: what it holds never passes its bound."""
    server = _server(ctx, FLOOD_MB)
    peak = 0.0
    try:
        async with SpeechSession(server.ws_url) as session:
            for i in range(12 if ctx.quick else 60):
                await speak_timed(session, f"Your confirmation number is {1000 + i}, and the gate is {i % 9 + 1}.")
                peak = max(peak, _stats(server).get("bytes", 0.0))
        stats = _stats(server)
    finally:
        server.stop()
    return {
        "texts": 12 if ctx.quick else 60,
        "peak_bytes": int(peak),
        "max_bytes": int(stats.get("max_bytes", 0)),
        "entries": int(stats.get("entries", 0)),
    }


def markdown(result: dict[str, Any]) -> str:
    fa = result["first_audio"]
    rows = [
        [
            name,
            r["ttfa_ms"]["p50"],
            r["ttfa_ms"]["mean"],
            r["ttfa_ms"]["p95"],
            r["engine_ms"]["mean"],
            r["ttfa_ms"]["n"],
        ]
        for name, r in ((n, fa[n]) for n in ("cached", "made"))
    ]
    c, f = result["conversation"], result["flood"]
    return "\n".join(
        [
            f"Phrases: {', '.join(repr(p) for p in result['phrases'])}, each spoken once before on the cached server; "
            "the two servers share the engine, their trials alternated.\n",
            table(["server", "first audio p50 ms", "mean ms", "p95 ms", "engine ms (mean)", "requests"], rows),
            f"\nA repeated phrase's first audio: **{fa['ratio']}x** sooner from the cache. "
            f"The bundled replies ({c['replies']}) spoken twice in turn: {c['hits']} of {c['hits'] + c['misses']} "
            f"chunks answered from the cache (hit ratio {c['hit_ratio']}). "
            f"{f['texts']} distinct texts to a {FLOOD_MB} MB cache: at most {f['peak_bytes']:,} bytes held "
            f"(bound {f['max_bytes']:,}), {f['entries']} chunks kept at the end.",
        ]
    )
