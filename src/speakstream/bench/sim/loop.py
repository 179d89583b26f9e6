"""An asyncio event loop on a virtual clock: when nothing is ready to run, time jumps to the next
timer instead of waiting for it, so minutes of a burst simulate in milliseconds, the same way
every run. ``virtual_time`` points ``time.perf_counter`` and ``time.monotonic`` at it for the
simulation's own thread, so code that reads the clock (the scheduler, admission, the playback
clocks) reads the simulated one while every other thread of the process keeps the machine's.
"""

from __future__ import annotations

import asyncio
import contextlib
import selectors
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import Any, TypeVar

T = TypeVar("T")
START_S = 1000.0
"""Where virtual time starts (any positive reading)."""
HORIZON_S = 4 * 3600.0
"""The most virtual time a simulation may take: past it, something waits for ever by polling (a
paused inference never resumed), which a blocking wait would have shown as a ``Deadlock``."""


class Deadlock(RuntimeError):
    """Nothing can ever run again: every task waits for something no timer or I/O will bring."""


class _Selector(selectors.BaseSelector):
    """The loop's selector, but a wait for a timer moves the virtual clock instead of blocking."""

    def __init__(self, real: selectors.BaseSelector, advance: Callable[[float], None]) -> None:
        self._real, self._advance = real, advance

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise Deadlock("the simulation waits for something that never comes")
        self._advance(timeout)
        return []

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()


class VirtualLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose ``time()`` is virtual and advances only when it idles."""

    def __init__(self, horizon_s: float = HORIZON_S) -> None:
        self._now, self._horizon = START_S, START_S + horizon_s
        super().__init__(_Selector(selectors.DefaultSelector(), self.advance))

    def time(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += max(0.0, seconds)
        if self._now > self._horizon:
            raise Deadlock(f"the simulation ran past {self._horizon - START_S:g} virtual seconds")

    def _run_once(self) -> None:
        """asyncio runs the timers due within its clock's resolution without waiting for them:
        here the clock is moved to the last of them first, or a loop waiting for a deadline that
        close (a wait for room up to its deadline) would run again and again at the same instant."""
        horizon = self._now + self._clock_resolution  # type: ignore[attr-defined]
        timers = self._scheduled  # type: ignore[attr-defined]
        due = max((t.when() for t in timers if not t.cancelled() and t.when() <= horizon), default=self._now)
        self._now = max(self._now, due)
        super()._run_once()  # type: ignore[misc]


@contextlib.contextmanager
def virtual_time(loop: VirtualLoop) -> Iterator[None]:
    """``time.perf_counter`` and ``time.monotonic`` read ``loop``'s clock inside the block, in
    this thread only: threads that earlier work left running (a server, an engine's) keep the
    machine's clock."""
    saved = time.perf_counter, time.monotonic
    owner = threading.get_ident()

    def clock(real: Callable[[], float]) -> Callable[[], float]:
        return lambda: loop.time() if threading.get_ident() == owner else real()

    time.perf_counter, time.monotonic = clock(saved[0]), clock(saved[1])
    try:
        yield
    finally:
        time.perf_counter, time.monotonic = saved


def simulate(main: Coroutine[Any, Any, T], horizon_s: float = HORIZON_S) -> T:
    """Run ``main`` to the end on a fresh virtual loop, with the clocks pointed at it, or raise
    ``Deadlock`` past ``horizon_s`` virtual seconds; what it left running is cancelled and awaited
    before the loop closes (``asyncio.Runner``, as ``asyncio.run``)."""
    with asyncio.Runner(loop_factory=lambda: VirtualLoop(horizon_s)) as runner:
        loop = runner.get_loop()
        assert isinstance(loop, VirtualLoop)
        with virtual_time(loop):
            try:
                return runner.run(main)
            finally:
                runner.close()  # inside the virtual clock: the tasks it cancels read it
