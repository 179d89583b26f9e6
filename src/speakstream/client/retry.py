"""When and how often a client tries again: backoff with jitter, and what counts as retryable.

A server that is going away (close 1001), restarting (1012), overloaded (1013, HTTP 503), or
whose connection was lost (1006, a refused connection, a broken stream) is worth another try a
little later; bad input is not.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

RETRY_CLOSE_CODES = frozenset({1001, 1006, 1011, 1012, 1013, 1014})
"""WebSocket closes after which the session reconnects (going away, lost, server error, service
restart, try again later, bad gateway)."""
RETRY_HTTP_STATUSES = frozenset({502, 503, 504})


@dataclass(frozen=True, slots=True)
class Backoff:
    """``attempts`` tries after the first failure, waiting ``first_s``, then ``factor`` times
    longer each time up to ``max_s``, each wait drawn between half and all of that (so clients
    dropped together do not return together). ``attempts=0`` never retries."""

    attempts: int = 6
    first_s: float = 0.25
    max_s: float = 8.0
    factor: float = 2.0

    def delays(self) -> Iterator[float]:
        delay = self.first_s
        for _ in range(self.attempts):
            yield random.uniform(delay / 2, delay)
            delay = min(self.max_s, delay * self.factor)


@dataclass(frozen=True, slots=True)
class Reconnect:
    """What a client tells its user when it tries again: the ``attempt`` (1 first), the wait
    before it, and why (``code``: a WebSocket close code, an HTTP status, or 0 for a network
    error)."""

    attempt: int
    delay_s: float
    code: int
    reason: str


OnReconnect = Callable[[Reconnect], None]
