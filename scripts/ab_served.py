"""First audio under load with one engine setting on and off, alternated per trial on one
in-process server.

    python scripts/ab_served.py --switch in-flight --trials 8
    python scripts/ab_served.py --switch shared-opening --trials 6
    python scripts/ab_served.py --switch pairs --trials 6
    python scripts/ab_served.py --switch opening-context --trials 6
    python scripts/ab_served.py --switch onset-reach --trials 6
    python scripts/ab_served.py --switch crowded-opening --trials 6
    python scripts/ab_served.py --switch crowded-frames --trials 6
    python scripts/ab_served.py --switch opening-reach --trials 6
    python scripts/ab_served.py --switch crowded-decoder --trials 6

Switches:

- ``in-flight``: the engine told the scheduler's windows in flight (``Lanes.in_flight``) or not.
  Without the count, two windows dispatched together reach ONNX Runtime a few milliseconds apart:
  the first takes the wide session (every core), the second a narrow one, and three threads share
  2 cores until the first ends.
- ``shared-opening``: a reply that opens while others share the decoder sized at the shared speed
  (``WindowPolicy.shared_opening``), or at the lone speed, as when alone.
- ``pairs``: a lone reply's long windows decoded as two halves at once on the two narrow lanes
  (``WindowPolicy.split_frames``), or each on the wide session.
- ``opening-context``: the window that opens a reply decoded with its own short context after it
  (``WindowPolicy.opening_context_frames``), or with its seam's.
- ``onset-reach``: a chunk decoded from ``windowed.ONSET_REACH_S`` before its first word and its
  first piece cut to its speech, or cut at the word's frames (losing the start of its sound).
- ``crowded-opening``: a reply that opens while more replies wait for their first audio than the
  engine has lanes opened by a window of ``WindowPolicy.crowded_frames`` (the scheduler's
  ``crowded``), or by one sized as any other reply's.
- ``crowded-frames``: that crowded opening of ``WindowPolicy.crowded_frames`` (8), or of 10 frames
  (the size before).
- ``opening-reach``: the opening window's end moved forward to a word gap by up to
  ``WindowPolicy.opening_snap_frames`` (8), or by up to 4 (the reach before).
- ``crowded-decoder``: that crowded opening decoded by the ``int8`` decoder
  (``EngineConfig.crowded_decoder``), or by the ``mixed`` one, as every other window.

Each trial runs every case (sessions at once, or 0.9 s apart), each session speaking the
four-sentence bench reply (or, in a case named "40 words", the streaming experiment's 40-word
sentence with ``chunking: none``), in both settings (their order alternating). Prints p95 first
audio, audio seconds per wall second and the stalls a real-time player heard.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from speakstream.bench.context import BenchContext
from speakstream.bench.experiments.concurrency import STAGGER_S, one_level
from speakstream.bench.experiments.streaming import FORTY_WORDS
from speakstream.config import ServerConfig
from speakstream.data import bench_text
from speakstream.engine import windowed
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.windowed import WindowedModel
from speakstream.server.app import create_app
from speakstream.server.serve import ThreadedServer

Switch = Callable[[bool], None]
"""Turns the setting on (True) or off."""
CASES = {
    "in-flight": (("2 at once", 2, 0.0), ("2 staggered", 2, STAGGER_S), ("4 at once", 4, 0.0)),
    "shared-opening": (
        ("1 alone", 1, 0.0),
        ("4 at once", 4, 0.0),
        ("8 at once", 8, 0.0),
        ("4 staggered", 4, STAGGER_S),
    ),
    "opening-context": (("1 alone", 1, 0.0), ("40 words alone", 1, 0.0), ("4 at once", 4, 0.0)),
    "onset-reach": (("1 alone", 1, 0.0), ("40 words alone", 1, 0.0), ("4 at once", 4, 0.0), ("8 at once", 8, 0.0)),
    "crowded-opening": (
        ("1 alone", 1, 0.0),
        ("2 at once", 2, 0.0),
        ("4 at once", 4, 0.0),
        ("8 at once", 8, 0.0),
        ("4 staggered", 4, STAGGER_S),
    ),
    "crowded-frames": (("1 alone", 1, 0.0), ("4 at once", 4, 0.0), ("8 at once", 8, 0.0)),
    "opening-reach": (("1 alone", 1, 0.0), ("40 words alone", 1, 0.0), ("2 at once", 2, 0.0), ("4 at once", 4, 0.0)),
    "crowded-decoder": (("1 alone", 1, 0.0), ("4 at once", 4, 0.0), ("8 at once", 8, 0.0)),
    "pairs": (("1 alone", 1, 0.0), ("40 words alone", 1, 0.0), ("2 at once", 2, 0.0), ("2 staggered", 2, STAGGER_S)),
}


POLICY_SWITCHES: dict[str, tuple[str, Any]] = {
    "shared-opening": ("shared_opening", False),
    "pairs": ("split_frames", 0),
    "opening-context": ("opening_context_frames", None),
    "crowded-opening": ("crowded_frames", 1 << 30),
    "crowded-frames": ("crowded_frames", 10),
    "opening-reach": ("opening_snap_frames", 4),
}
"""The switches that set a ``WindowPolicy`` field: the field, and its value when off (on: the default)."""


def switch(name: str, model: WindowedModel) -> Switch:
    """How ``name`` is turned on and off on ``model`` (and back on at the end: every one defaults on)."""
    if name == "in-flight":
        count = model.lanes.in_flight

        def in_flight(on: bool) -> None:
            model.lanes.in_flight = count if on else None

        return in_flight
    if name == "onset-reach":
        reach = windowed.ONSET_REACH_S

        def onset_reach(on: bool) -> None:
            windowed.ONSET_REACH_S = reach if on else 0.0  # read at each chunk's front and opening

        return onset_reach
    if name == "crowded-decoder":
        crowded = model.crowded_sessions

        def crowded_decoder(on: bool) -> None:
            model.crowded_sessions = crowded if on else None

        return crowded_decoder

    field, off = POLICY_SWITCHES[name]
    default = getattr(model.policy, field)

    def policy_field(on: bool) -> None:
        model.policy = dataclasses.replace(model.policy, **{field: default if on else off})

    return policy_field


def _message(case: str) -> tuple[str, dict[str, Any]]:
    """What each session of ``case`` says, and the message's options."""
    return (FORTY_WORDS, {"chunking": "none"}) if case.startswith("40 words") else (bench_text(), {})


async def _trials(
    ctx: BenchContext, turn: Switch, cases: tuple[tuple[str, int, float], ...], trials: int
) -> dict[tuple[str, str], list[tuple[float, ...]]]:
    found: dict[tuple[str, str], list[tuple[float, ...]]] = {}
    await one_level(ctx, 1, "Warm up, please.")
    try:
        for trial in range(trials):
            settings = ("on", "off") if trial % 2 == 0 else ("off", "on")
            for name, sessions, stagger in cases:
                for setting in settings:
                    turn(setting == "on")
                    text, options = _message(name)
                    r = await one_level(ctx, sessions, text, stagger_s=stagger, **options)
                    found.setdefault((name, setting), []).append(
                        (r["ttfa_ms"]["p95"], r["throughput"], r["stall_ms"]["mean"])
                    )
    finally:
        turn(True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switch", choices=sorted(CASES), required=True)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--case", action="append", help="run only this case (repeatable; default: every one)")
    args = parser.parse_args()
    server = ThreadedServer(create_app(ServerConfig())).start()
    try:
        engine = server.runtime.engine
        if not isinstance(engine, KokoroEngine) or engine.windowed is None or engine.parallel < 2:
            raise SystemExit("needs two engine lanes (a CPU with 2 cores or more, the fast graph)")
        ctx = BenchContext.in_process(server)
        turn = switch(args.switch, engine.windowed)
        cases = tuple(c for c in CASES[args.switch] if not args.case or c[0] in args.case)
        if not cases:
            raise SystemExit(f"no such case; {args.switch} has: {', '.join(c[0] for c in CASES[args.switch])}")
        found = asyncio.run(_trials(ctx, turn, cases, args.trials))
    finally:
        server.stop()
    for (name, setting), values in sorted(found.items()):
        a = np.array(values)
        print(
            f"{name:12s} {args.switch} {setting:3s}: p95 first audio mean {a[:, 0].mean():7.1f} ms "
            f"(min {a[:, 0].min():.0f}, max {a[:, 0].max():.0f}, n {len(a)}), "
            f"audio s per s {a[:, 1].mean():.2f}, stall ms per session {a[:, 2].mean():.0f}"
        )


if __name__ == "__main__":
    main()
