"""Linear time, proved by ratio: ten times the input must cost about ten times the time.

A quadratic entry point costs about 100x at ten times the input, a linear one about 10x; the
limit sits between, far from both, and each cost is the best of several runs (a busy machine
only ever makes one run slower). Hostile inputs are one short unit repeated: runs of spaces,
punctuation, digits, markdown marks, abbreviations, mixed scripts.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from hypothesis import strategies as st

RATIO_LIMIT = 35.0
HOSTILE = " \t\n.,;:!?…。，、！？-—_*`~#[]()<>|@/\\\"'1234567890aeZé你好"
UNITS = [" ", "\n", ".", ",", "!", "1", "a.", "e.g. ", "Mr. ", "*", "[", "(", "_", "`", "#", "a", "@a", "1:", "你好，"]
"""Units seen to be slow somewhere, kept as explicit cases besides the generated ones."""


def hostile_units() -> st.SearchStrategy[str]:
    return st.text(alphabet=HOSTILE, min_size=1, max_size=6)


def repeated(unit: str, length: int) -> str:
    return "Hello. " + (unit * (length // len(unit) + 1))[:length] + " end."


def _cost(work: Callable[[str], object], text: str, runs: int) -> float:
    best = float("inf")
    gc.disable()  # a collection inside one run is noise, not the entry point's cost
    try:
        for _ in range(runs):
            started = time.perf_counter()
            work(text)
            best = min(best, time.perf_counter() - started)
    finally:
        gc.enable()
    return best


def growth(work: Callable[[str], object], unit: str, length: int = 2_000, rounds: int = 3) -> float:
    """Cost of ``unit`` repeated to 10 x ``length`` characters over its cost at ``length``
    (20,000 characters: the server's limit on one reply's text). A busy machine can only make a
    ratio look worse, so a ratio over the limit is measured again, up to ``rounds`` times, and
    the best one counts: a quadratic entry point is over the limit every time."""
    small, big = repeated(unit, length), repeated(unit, 10 * length)
    work(small)  # warm caches and lazy imports
    best = float("inf")
    for _ in range(rounds):
        best = min(best, _cost(work, big, 3) / max(_cost(work, small, 5), 1e-5))
        if best < RATIO_LIMIT:
            break
    return best
