"""Where the decoder's time goes: ONNX Runtime's per-operator profile of one window.

    python scripts/profile_decoder.py [--frames 41] [--threads 2] [--runs 8] [--top 12] [--decoder mixed]

Decodes one window of ``--frames`` frames (the default is a reply's opening window on an AMD EPYC
with AVX2: 25 frames, 4 of lead context and 12 on the right; with AVX-512 it is 36, 20 of them
audio) of a real front output, with the engine's own
decoder graph and session options, and prints the kernel time per operator type and the slowest
nodes. Operators that ONNX Runtime runs on one thread show up as the same time at ``--threads 1``
and ``2``: compare the two to see what a second core cannot help.
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from speakstream.engine.config import EngineConfig, session_options
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.model.feeds import FEATURES
from speakstream.engine.windows.planner import Decode

VOICE = "af_heart"
WARM_UP = 3
"""Runs before the timed ones (they are in the profile too)."""
TEXT = "Thanks for waiting, I found your booking for Thursday morning, and your seat is confirmed."


def window_feed(engine: KokoroEngine, frames: int) -> dict[str, Any]:
    """The decoder's inputs for a window that starts, as a reply's first does, its lead context
    before the speech."""
    runner = engine.runner
    assert runner is not None
    part = engine.phoneme_windows(TEXT, engine.check_voice(VOICE).speaks)[0]
    style = engine.voice_bank.style(VOICE, len(part.tokens))
    u = runner.front(part, style, 1.0, TEXT, None, edges=engine.edges)
    start = max(0, u.first_frame - engine.policy.seams.lead_context_frames)
    end = min(u.frames, start + frames)
    return runner.feed(u, Decode(start, end, start, end))


def _profile(engine: KokoroEngine, feed: dict[str, Any], threads: int, runs: int) -> tuple[list[float], list[Any]]:
    import onnxruntime as ort

    options = session_options(threads, 1, engine.config.spin_threads)
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as folder:
        options.profile_file_prefix = str(Path(folder) / "decoder")
        path = engine.assets.decoder(engine.config.decoder)
        session = ort.InferenceSession(str(path), options, providers=engine.providers)
        for _ in range(WARM_UP):
            session.run(None, feed)
        seconds = []
        for _ in range(runs):
            started = time.perf_counter()
            session.run(None, feed)
            seconds.append(time.perf_counter() - started)
        events = json.loads(Path(session.end_profiling()).read_text())
    return seconds, events


def _report(seconds: list[float], events: list[Any], runs: int, top: int) -> None:
    by_op: collections.Counter[str] = collections.Counter()
    by_node: collections.Counter[str] = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            by_op[event["args"]["op_name"]] += event["dur"]
            by_node[event["name"].removesuffix("_kernel_time")] += event["dur"]
    calls = runs + WARM_UP
    total = sum(by_op.values()) / calls / 1000
    print(f"wall per run: min {1000 * min(seconds):.1f} ms, median {1000 * float(np.median(seconds)):.1f} ms")
    print(f"kernel time per run: {total:.1f} ms")
    for op, us in by_op.most_common(top):
        print(f"  {op:24s} {us / calls / 1000:7.1f} ms  {100 * us / calls / 1000 / total:5.1f}%")
    print("slowest nodes:")
    for node, us in by_node.most_common(top):
        print(f"  {node[-70:]:70s} {us / calls / 1000:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=41)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--decoder", choices=("mixed", "float"), default="mixed")
    args = parser.parse_args()
    engine = KokoroEngine(EngineConfig(lanes=1, decoder=args.decoder))
    if engine.runner is None:
        raise SystemExit("needs the fast graph (the decoder part)")
    feed = window_feed(engine, args.frames)
    print(f"decoder window: {feed[FEATURES].shape[2]} frames, {args.threads} thread(s), {engine.providers[0]}")
    seconds, events = _profile(engine, feed, args.threads, args.runs)
    _report(seconds, events, args.runs, args.top)


if __name__ == "__main__":
    main()
