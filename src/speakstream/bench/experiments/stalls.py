"""Stalls: a long reply streamed by the agent (bidi, replay at 60 tokens/s) and played by a
simulated real-time player, for the default chunk policy and the alternatives it was chosen over;
then on a slowed machine (two busy loops in other processes for every core), with the engine's
sustainable windows (``BudgetPolicy.sustain``) and without, alternated."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
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
from speakstream.engine.kokoro import KokoroEngine
from speakstream.text import ChunkPolicy

NAME = "stalls"
TITLE = "Stalls: a long reply through a simulated real-time player"
POLICIES = {
    f"default: clause first, soft limits {'/'.join(map(str, ChunkPolicy().schedule))}": ChunkPolicy(),
    "phrase cut too (after 5 words)": ChunkPolicy(first_phrase_words=5),
    "shorter schedule 80/160": ChunkPolicy(schedule=(80, 160)),
    "no schedule": ChunkPolicy(schedule=()),
    "whole sentences only": ChunkPolicy(first_clause=False, schedule=()),
}
FLOORS = {"sustainable windows (default)": None, "sized to the buffer only (sustain 0)": 0.0}
"""The slowed machine's arms: the policy's ``sustain`` (None: the engine's own)."""
BUSY_LOOP = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    for _ in range(100_000): pass"
"""Spins until its parent (the bench) is gone, even if that is killed without its ``finally``."""
BUSY_LOOPS_PER_CORE = 2
KEYS = ("ttfa_ms", "stalls", "stall_ms", "audio_s", "audio_per_wall_s")


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
        slowed = await _slowed(ctx, session, reply_id)
    result: dict[str, Any] = {"reply_id": reply_id, "policies": _summaries(runs)}
    if slowed is not None:
        result["slowed"] = _summaries(slowed)
    return result


async def _slowed(ctx: BenchContext, session: SpeechSession, reply_id: str) -> dict[str, list[dict[str, Any]]] | None:
    """The default chunk policy with every core shared with two busy loops (the decoder at about a
    third of its speed, near real time: one loop a core left it fast enough that no window had
    to be raised), each arm of ``FLOORS`` in turn (None without an in-process Kokoro engine)."""
    engine = ctx.runtime.engine if ctx.runtime is not None else None
    if not isinstance(engine, KokoroEngine) or engine.runner is None:
        return None
    base = engine.policy
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in FLOORS}
    burners = [
        await asyncio.create_subprocess_exec(sys.executable, "-c", BUSY_LOOP)
        for _ in range(BUSY_LOOPS_PER_CORE * (os.cpu_count() or 1))
    ]
    try:
        for trial in range(ctx.trials(2, 1)):
            for name in FLOORS if trial % 2 == 0 else reversed(FLOORS):
                sustain = FLOORS[name]
                budget = base.budget if sustain is None else dataclasses.replace(base.budget, sustain=sustain)
                async with ctx.configured(engine=engine.configured(dataclasses.replace(base, budget=budget))):
                    runs[name].append(await one_reply(session, reply_id, ChunkPolicy()))
                ctx.say(f"stalls, slowed, trial {trial + 1}: {name}")
    finally:
        for burner in burners:
            burner.kill()
            await burner.wait()
    return runs


def _summaries(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return {name: {key: summary([r[key] for r in rs]) for key in KEYS} for name, rs in runs.items()}


def markdown(result: dict[str, Any]) -> str:
    headers = ["first audio ms", "gaps", "total gap ms", "audio s", "audio s per wall s"]
    text = f"Reply `{result['reply_id']}` from `replies.jsonl`, agent in bidi mode:\n\n" + table(
        ["chunk policy", *headers], _rows(result["policies"])
    )
    if "slowed" in result:
        text += (
            "\n\nThe same reply with the default chunk policy on a slowed machine (two busy loops "
            "in other processes for every core), a lone reply's windows raised when they would cost more "
            "than they play (`BudgetPolicy.sustain`) and not, alternated:\n\n"
            + table(["windows", *headers], _rows(result["slowed"]))
        )
    return text


def _rows(policies: dict[str, dict[str, Any]]) -> list[list[Any]]:
    return [[name, *(r[key]["mean"] for key in KEYS)] for name, r in policies.items()]
