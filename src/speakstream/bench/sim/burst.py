"""A burst of listeners, each speaking a reply through the real ``Reply`` and ``Scheduler`` (whole
text, or fragments at an LLM's pace), and what each hears: the same driver on the simulated engine
in virtual time (``simulate_burst``) and on a real engine in wall time (``run_burst``)."""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace

from speakstream.bench.player import Playback, play
from speakstream.bench.sim.cost import CostModel
from speakstream.bench.sim.engine import SimEngine, SimExecutor
from speakstream.bench.sim.loop import simulate
from speakstream.config import ServerConfig
from speakstream.data import bench_text
from speakstream.engine.base import Engine
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.errors import Overloaded
from speakstream.scheduler import Scheduler
from speakstream.server import runtime
from speakstream.server.reading import ReplySettings
from speakstream.server.reply import Reply
from speakstream.types import SAMPLE_RATE

_TOKEN = re.compile(r"\s*\w+|\s*[^\w\s]+")
ARRIVALS = ("together", "staggered", "random")


@dataclass(frozen=True, slots=True)
class Burst:
    """Who asks, when, for what."""

    sessions: int
    arrival: str = "together"
    """``together``; ``staggered``: evenly over ``spread_s``; ``random``: uniformly within it."""
    spread_s: float = 1.0
    text: str = field(default_factory=bench_text)
    tokens_per_s: float | None = None
    """The text arrives as LLM tokens at this pace (None: whole, at once)."""
    seed: int = 0

    def starts(self) -> list[float]:
        """Each session's start, in seconds from the burst's."""
        if self.arrival == "together":
            return [0.0] * self.sessions
        if self.arrival == "staggered":
            return [i * self.spread_s / max(1, self.sessions) for i in range(self.sessions)]
        rng = random.Random(self.seed)
        return sorted(rng.uniform(0.0, self.spread_s) for _ in range(self.sessions))


@dataclass(frozen=True, slots=True)
class Heard:
    """One session: what its listener heard, or that it was refused."""

    playback: Playback | None
    """None: refused."""
    waited_s: float = 0.0
    """Time it waited for admission."""
    arrivals: tuple[tuple[float, float], ...] = ()
    """(seconds from its request, audio seconds) of each piece."""

    @property
    def admitted(self) -> bool:
        return self.playback is not None


@dataclass(frozen=True, slots=True)
class BurstResult:
    burst: Burst
    heard: tuple[Heard, ...]

    @property
    def played(self) -> list[Playback]:
        return [h.playback for h in self.heard if h.playback is not None]

    @property
    def refused(self) -> int:
        return sum(not h.admitted for h in self.heard)

    def gaps_s(self) -> list[float]:
        """Each admitted listener's stall."""
        return [p.stall_s for p in self.played]

    def first_audio_s(self) -> list[float]:
        return [p.ttfa_s for p in self.played]


def tokens(text: str) -> list[str]:
    """``text`` as an LLM streams it: words and marks, each with the space before it."""
    return _TOKEN.findall(text)


def server_reply(scheduler: Scheduler, config: ServerConfig, i: int, client: str) -> Reply:
    """Reply ``i`` of ``client`` as the server makes one for ``config`` (raw PCM)."""
    return Reply(
        scheduler,
        session_id=f"s{i}",
        request_id=f"r{i}",
        settings=ReplySettings(format="pcm"),
        policy=config.policy,
        lookahead=config.lookahead,
        client=client,
        admission_wait_s=config.admission_wait_s,
    )


async def speak(scheduler: Scheduler, config: ServerConfig, burst: Burst, i: int, start_s: float) -> Heard:
    """Session ``i``: waits ``start_s``, then speaks the burst's text and plays what comes."""
    await asyncio.sleep(start_s)
    sent = time.perf_counter()
    reply = server_reply(scheduler, config, i, f"c{i}")
    feeder = asyncio.create_task(_feed(reply, burst))
    arrivals: list[tuple[float, float]] = []
    try:
        async for out in reply.outputs():
            if out.data:
                arrivals.append((time.perf_counter(), len(out.data) / 2 / SAMPLE_RATE))
    except Overloaded:
        return Heard(None, time.perf_counter() - sent)
    finally:
        feeder.cancel()
        await asyncio.gather(feeder, return_exceptions=True)
    since = tuple((at - sent, seconds) for at, seconds in arrivals)
    return Heard(play(arrivals, sent), reply.stats.admission_wait_s, since)


async def _feed(reply: Reply, burst: Burst) -> None:
    if burst.tokens_per_s is None:
        reply.push(burst.text)
    else:
        for token in tokens(burst.text):
            reply.push(token)
            await asyncio.sleep(1.0 / burst.tokens_per_s)
    reply.end_input()


async def drive(scheduler: Scheduler, config: ServerConfig, burst: Burst) -> BurstResult:
    """The burst's sessions on ``scheduler``, started as the burst says."""
    heard = await asyncio.gather(*(speak(scheduler, config, burst, i, s) for i, s in enumerate(burst.starts())))
    return BurstResult(burst, tuple(heard))


def scheduler_for(
    engine: Engine,
    config: ServerConfig,
    executors: Callable[[int, str], Executor] | None = None,
    *,
    beside: bool = True,
) -> Scheduler:
    """The server's scheduler for ``config`` (``runtime.scheduler_for``) with its audio cache off:
    every session speaks the same text, and real replies rarely repeat whole chunks."""
    return runtime.scheduler_for(engine, replace(config, cache_mb=0), executors=executors, beside=beside)


def simulate_burst(
    cost: CostModel,
    burst: Burst,
    config: ServerConfig | None = None,
    policy: WindowPolicy | None = None,
    *,
    beside: bool = True,
) -> BurstResult:
    """``burst`` in virtual time on the simulated engine, warmed as a server warms (``policy``:
    its windows', default the engine's; ``beside``: the scheduler's ``Priority.beside``)."""
    config = config or ServerConfig()

    async def main() -> BurstResult:
        engine = SimEngine(cost, policy=policy)
        engine.warm()
        return await _driven(
            scheduler_for(engine, config, lambda threads, name: SimExecutor(), beside=beside), config, burst
        )

    return simulate(main())


async def run_burst(
    engine: Engine, burst: Burst, config: ServerConfig | None = None, *, beside: bool = True
) -> BurstResult:
    """``burst`` in wall time on a real (warmed) engine, through a fresh scheduler (``beside``:
    its ``Priority.beside``)."""
    config = config or ServerConfig()
    return await _driven(scheduler_for(engine, config, beside=beside), config, burst)


async def _driven(scheduler: Scheduler, config: ServerConfig, burst: Burst) -> BurstResult:
    """``burst`` through ``scheduler``, started for it and stopped after."""
    await scheduler.start()
    try:
        return await drive(scheduler, config, burst)
    finally:
        await scheduler.stop()
