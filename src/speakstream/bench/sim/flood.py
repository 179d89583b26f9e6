"""One client's flood in the simulator, and what another client's listener hears meanwhile: the
abuse suite's parallel flood (``speakstream loadtest abuse``) on the real scheduler in virtual time,
so the fairness between clients is tested at every machine speed in seconds, not minutes."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from dataclasses import dataclass

from speakstream.bench.player import Playback, play
from speakstream.bench.sim.burst import scheduler_for, server_reply
from speakstream.bench.sim.cost import CostModel
from speakstream.bench.sim.engine import SimEngine, SimExecutor
from speakstream.bench.sim.loop import simulate
from speakstream.config import ServerConfig
from speakstream.data import replies
from speakstream.errors import Overloaded
from speakstream.scheduler import Scheduler
from speakstream.server.reply import Reply
from speakstream.types import SAMPLE_RATE

POLITE_TEXT = "Thanks for waiting, I found your booking. Your flight leaves at nine forty."
"""The well-behaved client's reply (the abuse suite's)."""
RETRY_S = 0.2
"""A refused client asks again after this long (here and the abuse suite's well-behaved client)."""
ABUSE_CONFIG = ServerConfig(max_load=0, max_client_queue=32)
"""The abuse suite's limits: no admission by capacity (turns are what is measured), a public
address's cap of queued chunks a client."""


@dataclass(frozen=True, slots=True)
class Flood:
    """One client (``flooder``) asking for ``parallel`` long replies, each again as it ends, while
    another (``polite``) asks for ``replies`` short ones, one after another."""

    parallel: int = 24
    reading: bool = True
    """The flooder reads its replies; False: it takes the first audio and never reads again, and
    the server drops the reply after ``send_timeout_s`` (a send that cannot finish)."""
    replies: int = 6
    start_s: float = 0.5
    """The polite client's first request, after the flood began."""
    send_timeout_s: float = 3.0
    text: str = ""
    """The flooder's reply (empty: the corpus's long reply)."""


def simulate_flood(cost: CostModel, flood: Flood, config: ServerConfig = ABUSE_CONFIG) -> list[Playback]:
    """What the polite client's listener heard of each of its replies, in virtual time on the
    simulated engine, the retries after a refusal counted in its first audio."""

    async def main() -> list[Playback]:
        engine = SimEngine(cost)
        engine.warm()
        scheduler = scheduler_for(engine, config, lambda threads, name: SimExecutor())
        await scheduler.start()
        ids = itertools.count()
        text = flood.text or replies()["long"]["text"]

        async def flooding() -> None:
            while True:
                await _asked(scheduler, config, ids, "flooder", text, None if flood.reading else flood.send_timeout_s)

        flooders = [asyncio.create_task(flooding()) for _ in range(flood.parallel)]
        try:
            await asyncio.sleep(flood.start_s)
            return [await _asked(scheduler, config, ids, "polite", POLITE_TEXT) for _ in range(flood.replies)]
        finally:
            for task in flooders:
                task.cancel()
            await asyncio.gather(*flooders, return_exceptions=True)
            await scheduler.stop()

    return simulate(main())


async def _asked(
    scheduler: Scheduler,
    config: ServerConfig,
    ids: itertools.count[int],
    client: str,
    text: str,
    stops_reading_s: float | None = None,
) -> Playback:
    """One reply, asked again ``RETRY_S`` after each refusal; ``stops_reading_s``: the client
    takes its first audio, then stops reading and the reply is dropped that long after."""
    sent = time.perf_counter()
    while True:
        reply = server_reply(scheduler, config, next(ids), client)
        reply.push(text)
        reply.end_input()
        try:
            return await _heard(reply, sent, stops_reading_s)
        except Overloaded:
            await asyncio.sleep(RETRY_S)


async def _heard(reply: Reply, sent: float, stops_reading_s: float | None) -> Playback:
    arrivals: list[tuple[float, float]] = []
    async with contextlib.aclosing(reply.outputs()) as outputs:  # a reply dropped ends at once
        async for out in outputs:
            if out.data:
                arrivals.append((time.perf_counter(), len(out.data) / 2 / SAMPLE_RATE))
                if stops_reading_s is not None:
                    await asyncio.sleep(stops_reading_s)
                    break
    return play(arrivals, sent)
