"""What each listener of a burst hears: sessions starting together (or apart), run after run on
one in-process server, each speaking the four-sentence bench reply.

    python scripts/gaps_under_load.py --sessions 4 --runs 6
    python scripts/gaps_under_load.py --sessions 3 --stagger 1.5 --runs 2 --admit-all

Prints, for each run, the capacity the server read as the burst came (and whether it was
measured), how many replies it admitted, and each admitted listener's gaps, stall and first
audio. ``--admit-all`` turns admission by capacity off, to see what the engine can sustain.
"""

from __future__ import annotations

import argparse
import asyncio

from speakstream.bench.player import Playback
from speakstream.bench.speech import speak_timed
from speakstream.client import SpeechSession
from speakstream.config import ServerConfig
from speakstream.data import bench_text
from speakstream.engine.kokoro import KokoroEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer


async def listener(server: ThreadedServer, delay_s: float) -> Playback | None:
    """One session speaking the bench reply after ``delay_s``; None: refused for capacity."""
    await asyncio.sleep(delay_s)
    async with SpeechSession(server.ws_url) as session:
        result, playback = await speak_timed(session, bench_text())
    return None if (result.final or {}).get("code") == "overloaded" else playback


async def runs(server: ThreadedServer, sessions: int, stagger_s: float, count: int) -> None:
    async with SpeechSession(server.ws_url) as session:
        await session.collect(await session.speak("Warm up."))
    scheduler = server.runtime.scheduler
    assert scheduler is not None
    for run in range(count):
        reading = scheduler.reading()
        heard = await asyncio.gather(*(listener(server, i * stagger_s) for i in range(sessions)))
        admitted = [p for p in heard if p is not None]
        print(
            f"run {run}: capacity {reading.capacity:.2f} ({'measured' if reading.measured else 'estimated'}), "
            f"admitted {len(admitted)} of {sessions}: gaps {[len(p.gaps) for p in admitted]}, "
            f"stall ms {[round(1000 * p.stall_s) for p in admitted]}, "
            f"first audio ms {[round(1000 * p.ttfa_s) for p in admitted]}",
            flush=True,
        )
        await asyncio.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--stagger", type=float, default=0.0, help="seconds between session starts")
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--admit-all", action="store_true", help="no admission by capacity")
    args = parser.parse_args()
    engine = KokoroEngine()
    engine.warm()
    max_load = 0.0 if args.admit_all else ServerConfig().max_load
    server = start_server(engine, cache_mb=0, max_load=max_load)  # the burst repeats one text
    try:
        asyncio.run(runs(server, args.sessions, args.stagger, args.runs))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
