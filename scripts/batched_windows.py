"""Windows of many sessions decoded in one batch against one a run, on the real engine, arms
alternated level by level in one process so both meet the same stretch of the machine's speed.

    python scripts/batched_windows.py --sessions 1,4,8,16 --batch 8 [--rounds 2]
    python scripts/batched_windows.py --scaling     # the batched decoder alone: a batch's time
    taskset -c 0 python scripts/batched_windows.py ...        # one core

Arms: ``alone`` (the default engine: mixed decoder, two lanes, shared weights), ``float`` (the same
on the float decoder, which the batched one is made from: what float costs, apart from batching)
and ``batched`` (``EngineConfig(batch=B)``: the float batched decoder, B lanes, same-length
windows in one run).
Each level sends the bench reply, whole, from N sessions at once through the server's scheduler,
admission by capacity off (every session is served: the throughput is what is measured), a
real-time player per listener. Prints one JSON line per level and arm: audio seconds a second over
the burst (all sessions' audio over the wall time to the last audio), the listeners who heard a
gap and their gaps, p50 / p95 first audio, and the batches the batched arm ran, by size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics

from speakstream.bench.sim.burst import Burst, BurstResult, run_burst
from speakstream.config import ServerConfig
from speakstream.data import bench_text
from speakstream.engine.config import EngineConfig
from speakstream.engine.kokoro import KokoroEngine


def figures(result: BurstResult) -> dict[str, object]:
    """What one burst's listeners heard, and how fast the engine made it."""
    audio = sum(p.audio_s for p in result.played)
    wall = max(at for heard in result.heard for at, _ in heard.arrivals)
    first = sorted(result.first_audio_s())
    gaps = [g for g in result.gaps_s() if g > 0]
    return {
        "audio_s_per_s": round(audio / wall, 2),
        "gapped": len(gaps),
        "gap_s": round(sum(gaps), 3),
        "worst_gap_s": round(max(gaps, default=0.0), 3),
        "first_p50_ms": round(statistics.median(first) * 1000),
        "first_p95_ms": round(first[min(len(first) - 1, round(0.95 * (len(first) - 1)))] * 1000),
        "refused": result.refused,
    }


def scaling() -> None:
    """The batched decoder alone, on this process's cores: the time of a batch of 1, 2, 4 and 8
    copies of one window (24, 48 and 96 frames), the best of 3 runs, as a multiple of one's."""
    import time

    import numpy as np
    import onnxruntime as ort

    from speakstream.engine.model.batch import batched_decoder
    from speakstream.engine.model.feeds import decoder_feed, front_feed

    engine = KokoroEngine()
    decoder = ort.InferenceSession(str(batched_decoder(engine.assets)))
    front = ort.InferenceSession(str(engine.assets.split("front")))
    tokens = engine.phonemizer.phonemize(" ".join([bench_text()] * 2)).tokens[:500]
    style = engine.voice_bank.style("af_heart", len(tokens))
    _, *outputs = front.run(None, front_feed(tokens, style, 1.0))
    for frames in (24, 48, 96):
        one = decoder_feed(outputs, style, np.zeros((1, 1, 9), np.float32), 0, frames)
        times = {}
        for batch in (1, 2, 4, 8):
            feed = {name: np.concatenate([value] * batch) for name, value in one.items()}
            decoder.run(["audio"], feed)
            runs = []
            for _ in range(3):
                started = time.perf_counter()
                decoder.run(["audio"], feed)
                runs.append(time.perf_counter() - started)
            times[batch] = min(runs)
        line = {
            "frames": frames,
            **{f"x{b}": round(t / times[1], 2) for b, t in times.items()},
            "one_ms": round(times[1] * 1000),
        }
        print(json.dumps(line), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", default="1,4,8,16")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--scaling", action="store_true", help="time the batched decoder alone, batch by batch")
    args = parser.parse_args()
    if args.scaling:
        scaling()
        return
    engines = {
        "alone": KokoroEngine(),
        "float": KokoroEngine(EngineConfig(decoder="float")),
        "batched": KokoroEngine(EngineConfig(batch=args.batch)),
    }
    for engine in engines.values():
        engine.warm()
    config = ServerConfig(max_load=0, max_sessions=256)
    cpus = len(os.sched_getaffinity(0))
    for round_ in range(args.rounds):
        for level in (int(n) for n in args.sessions.split(",")):
            for arm, engine in engines.items() if round_ % 2 == 0 else reversed(engines.items()):
                runner = engine.runner
                before = dict(runner.batcher.batches) if runner and runner.batcher else {}
                result = asyncio.run(run_burst(engine, Burst(level), config))
                line = {"arm": arm, "cpus": cpus, "sessions": level, "round": round_, **figures(result)}
                if runner and runner.batcher:
                    line["batches"] = {k: v - before.get(k, 0) for k, v in sorted(runner.batcher.batches.items())}
                print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
