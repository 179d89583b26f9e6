"""Small statistics helpers shared by the experiments."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def summary(values: Sequence[float], *, scale: float = 1.0, digits: int = 1) -> dict[str, float | int]:
    """mean, p50, p95, min, max (times ``scale``) and n; empty input gives n = 0."""
    if not values:
        return {"n": 0}
    ordered = sorted(v * scale for v in values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * (len(ordered) - 1))))]
    return {
        "n": len(ordered),
        "mean": round(statistics.fmean(ordered), digits),
        "p50": round(statistics.median(ordered), digits),
        "p95": round(p95, digits),
        "min": round(ordered[0], digits),
        "max": round(ordered[-1], digits),
    }


def ratio(a: float | None, b: float | None, digits: int = 2) -> float | None:
    """a / b, or None when either is missing or b is zero."""
    if a is None or b is None or b == 0:
        return None
    return round(a / b, digits)
