"""How fast the engine is right now: a fixed sentence synthesised before each experiment.

These machines are shared, and their speed drifts within minutes (on the bench's 2-core AMD EPYC,
one session's first audio moved between about 300 and 550 ms within half an hour, the code
unchanged). A figure measured while the machine ran slow looks like a regression; the probe, in
the report beside each experiment, tells the two apart.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from speakstream.engine.base import Engine

PROBE_TEXT = "The quick brown fox jumps over the lazy dog, then naps in the sun."
TRIES = 2


def engine_rtf(engine: Engine, tries: int = TRIES, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds of compute per second of audio for ``PROBE_TEXT`` decoded whole (the fewest of
    ``tries``: the machine's speed, not one try's hiccup)."""
    best = math.inf
    for _ in range(tries):
        started = clock()
        chunk = engine.synthesize(PROBE_TEXT, voice="af_heart")
        best = min(best, (clock() - started) / max(chunk.duration_s, 1e-9))
    return round(best, 3)
