"""First audio under load with one engine setting on and off, alternated per trial on one
in-process server.

    python scripts/ab_served.py --switch pairs --trials 6
    python scripts/ab_served.py --switch opening-context --trials 6
    python scripts/ab_served.py --switch onset-reach --trials 6
    python scripts/ab_served.py --switch crowded-opening --trials 6
    python scripts/ab_served.py --switch crowded-frames --trials 6
    python scripts/ab_served.py --switch opening-reach --trials 6
    python scripts/ab_served.py --switch crowded-decoder --trials 6

Each switch is a setting built with ``dataclasses.replace`` (``OFF``): the engine speaks with it
through ``KokoroEngine.using`` for the "off" trials, with its own settings for the "on" ones.

- ``pairs``: a lone reply's long windows decoded as two halves at once on the two narrow copies
  (``SplitPolicy.frames``), or each in one inference.
- ``opening-context``: the window that opens a reply decoded with its own short context after it
  (``OpeningPolicy.context_after_frames``), or with its seam's.
- ``onset-reach``: a chunk decoded from ``EdgePolicy.onset_reach_s`` before its first word and its
  first piece cut to its speech, or cut at the word's frames (losing the start of its sound).
- ``crowded-opening``: a reply that opens while more replies wait for their first audio than the
  engine has lanes opened by a window of ``OpeningPolicy.crowded_frames``, or as any other reply.
- ``crowded-frames``: that crowded opening of ``crowded_frames`` (8), or of 10 frames.
- ``opening-reach``: the opening window's end moved forward to a word gap by up to
  ``OpeningPolicy.reach_frames`` (8), or by up to 4.
- ``crowded-decoder``: that crowded opening decoded by the ``int8`` decoder
  (``OpeningPolicy.crowded_decoder``), or by the ``mixed`` one, as every other window.

Each trial runs every case (sessions at once, or 0.9 s apart), each session speaking the
four-sentence bench reply (or, in a case named "40 words", the streaming experiment's 40-word
sentence with ``chunking: none``), in both settings (their order alternating). Prints p95 first
audio, audio seconds per wall second and the stalls a real-time player heard.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from speakstream.bench.context import BenchContext
from speakstream.bench.experiments.concurrency import STAGGER_S, one_level
from speakstream.bench.experiments.streaming import FORTY_WORDS
from speakstream.config import ServerConfig
from speakstream.data import bench_text
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.windows.edges import EdgePolicy
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.server.app import create_app
from speakstream.server.serve import ThreadedServer

Setting = tuple[WindowPolicy, EdgePolicy]
CASES = {
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


def _opening(setting: Setting, **knobs: Any) -> Setting:
    policy, edges = setting
    return replace(policy, opening=replace(policy.opening, **knobs)), edges


OFF: dict[str, Callable[[Setting], Setting]] = {
    "pairs": lambda s: (replace(s[0], split=replace(s[0].split, frames=0)), s[1]),
    "opening-context": lambda s: _opening(s, context_after_frames=None),
    "onset-reach": lambda s: (s[0], replace(s[1], onset_reach_s=0.0)),
    "crowded-opening": lambda s: _opening(s, crowded_frames=1 << 30),
    "crowded-frames": lambda s: _opening(s, crowded_frames=10),
    "opening-reach": lambda s: _opening(s, reach_frames=4),
    "crowded-decoder": lambda s: _opening(s, crowded_decoder=False),
}
"""Each switch's "off" setting, built from the engine's own."""


def _message(case: str) -> tuple[str, dict[str, Any]]:
    """What each session of ``case`` says, and the message's options."""
    return (FORTY_WORDS, {"chunking": "none"}) if case.startswith("40 words") else (bench_text(), {})


async def _trials(
    ctx: BenchContext,
    engine: KokoroEngine,
    off: Setting,
    cases: tuple[tuple[str, int, float], ...],
    trials: int,
) -> dict[tuple[str, str], list[tuple[float, ...]]]:
    found: dict[tuple[str, str], list[tuple[float, ...]]] = {}
    on = (engine.policy, engine.edges)
    await one_level(ctx, 1, "Warm up, please.")
    for trial in range(trials):
        for name, sessions, stagger in cases:
            for setting in ("on", "off") if trial % 2 == 0 else ("off", "on"):
                policy, edges = on if setting == "on" else off
                text, options = _message(name)
                async with ctx.configured(engine=engine.configured(policy, edges)):
                    r = await one_level(ctx, sessions, text, stagger_s=stagger, **options)
                found.setdefault((name, setting), []).append(
                    (r["ttfa_ms"]["p95"], r["throughput"], r["stall_ms"]["mean"])
                )
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
        if not isinstance(engine, KokoroEngine) or engine.runner is None or engine.lanes < 2:
            raise SystemExit("needs two engine lanes (a CPU with 2 cores or more, the fast graph)")
        ctx = BenchContext.in_process(server)
        off = OFF[args.switch]((engine.policy, engine.edges))
        cases = tuple(c for c in CASES[args.switch] if not args.case or c[0] in args.case)
        if not cases:
            raise SystemExit(f"no such case; {args.switch} has: {', '.join(c[0] for c in CASES[args.switch])}")
        found = asyncio.run(_trials(ctx, engine, off, cases, args.trials))
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
