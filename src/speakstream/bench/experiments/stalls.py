"""Stalls: a long reply streamed by the agent (bidi, replay at 60 tokens/s) and played by a
simulated real-time player, for the default chunk policy and the alternatives it was chosen over."""

from __future__ import annotations

import time
from typing import Any

from speakstream.agent.events import AgentDone, AudioChunkEvent
from speakstream.agent.sources import ReplaySource
from speakstream.agent.voice_agent import VoiceAgent
from speakstream.bench.context import BenchContext
from speakstream.bench.player import play
from speakstream.bench.stats import summary
from speakstream.bench.tables import table
from speakstream.client import SpeechSession
from speakstream.text import ChunkPolicy

NAME = "stalls"
TITLE = "Stalls: a long reply through a simulated real-time player"
POLICIES = {
    f"default: clause or phrase first, soft limits {'/'.join(map(str, ChunkPolicy().schedule))}": ChunkPolicy(),
    "no phrase cut (clause first only)": ChunkPolicy(first_phrase_words=0),
    "shorter schedule 80/160": ChunkPolicy(schedule=(80, 160)),
    "no schedule": ChunkPolicy(schedule=()),
    "whole sentences only": ChunkPolicy(first_clause=False, schedule=()),
}


async def one_reply(session: SpeechSession, reply_id: str, policy: ChunkPolicy) -> dict[str, Any]:
    agent = VoiceAgent(ReplaySource(reply_id=reply_id), session, policy=policy)
    arrivals: list[tuple[float, float]] = []
    start = time.perf_counter()
    async for event in agent.run("Tell me about the plans."):
        if isinstance(event, AudioChunkEvent):
            arrivals.append((start + event.t, event.size / 2 / 24_000))
        elif isinstance(event, AgentDone):
            break
    return play(arrivals, start).to_dict()


async def run(ctx: BenchContext) -> dict[str, Any]:
    reply_id = "weather" if ctx.quick else "long"
    policies = dict(list(POLICIES.items())[:2]) if ctx.quick else POLICIES
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in policies}
    async with SpeechSession(ctx.ws_url) as session:
        for trial in range(ctx.trials(2, 1)):
            for name, policy in policies.items():
                runs[name].append(await one_reply(session, reply_id, policy))
                ctx.say(f"stalls trial {trial + 1}: {name}")
    return {
        "reply_id": reply_id,
        "policies": {
            name: {
                key: summary([r[key] for r in rs])
                for key in ("ttfa_ms", "stalls", "stall_ms", "audio_s", "audio_per_wall_s")
            }
            for name, rs in runs.items()
        },
    }


def markdown(result: dict[str, Any]) -> str:
    rows = [
        [
            name,
            r["ttfa_ms"]["mean"],
            r["stalls"]["mean"],
            r["stall_ms"]["mean"],
            r["audio_s"]["mean"],
            r["audio_per_wall_s"]["mean"],
        ]
        for name, r in result["policies"].items()
    ]
    headers = ["chunk policy", "first audio ms", "gaps", "total gap ms", "audio s", "audio s per wall s"]
    return f"Reply `{result['reply_id']}` from `replies.jsonl`, agent in bidi mode:\n\n" + table(headers, rows)
