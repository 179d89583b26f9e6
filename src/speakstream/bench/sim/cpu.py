"""The machine's cores as the simulator sees them: inferences share them (processor sharing), each
at most at the speed its copy's threads give it alone, all slowed when the threads asked for pass
the cores and a little for each other running beside it (``CostModel.contention``).

It lends copies as ``engine.runtime.cores`` does (the wide one to an inference that starts alone,
else a narrow one while one is free), and honours a ``CancelToken`` as ONNX Runtime's terminate
flag does: a cancel ends the inference with ``SynthesisCancelled``; a pause stops it, and once
resumed it runs again from the start.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from speakstream.engine.cancel import CancelToken, SynthesisCancelled

DONE_S = 1e-7
"""Work left under this is done (the clock's rounding)."""
PAUSED_POLL_S = 0.002
"""How often a paused inference looks whether it may run again (``wait_turn``'s wake-up)."""


@dataclass(eq=False)
class Work:
    """One inference: what it costs alone on each kind of copy, and where it stands."""

    wide_s: float
    narrow_s: float
    part: str
    token: CancelToken | None
    shared: bool
    pair: bool = False
    """Two halves at once on two narrow copies (``narrow_s`` is the longer half's)."""
    done: asyncio.Future[float] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    narrow: bool = False
    left_s: float = 0.0
    started_at: float = 0.0
    rate: float = 0.0

    @property
    def count(self) -> int:
        return 2 if self.pair else 1


class Cpu:
    """Runs ``Work`` in virtual time on ``cores`` cores, with ``lanes`` narrow copies of each part."""

    def __init__(self, cores: int, lanes: int, contention: float) -> None:
        self.cores, self.lanes, self.contention = cores, lanes, contention
        self.active: list[Work] = []
        self._free: dict[str, int] = {}
        self._updated = 0.0
        self._timer: asyncio.TimerHandle | None = None

    @property
    def running(self) -> int:
        """Inferences running (two a pair): ``Cores.running``."""
        return sum(work.count for work in self.active)

    def free(self, part: str) -> int:
        """Narrow copies of ``part`` not lent out."""
        return self._free.get(part, self.lanes if self.lanes > 1 else 0)

    async def run(self, work: Work, expected_s: float | None = None) -> float:
        """The seconds the attempt that completed took."""
        while True:
            await self._turn(work.token)
            self._start(work)
            stoppable = None if work.token is None else work.token.interruptible(lambda: self._stop(work), expected_s)
            if stoppable is not None:
                stoppable.__enter__()
            try:
                return await asyncio.shield(work.done)
            except _Stopped:
                work.done = asyncio.get_running_loop().create_future()
            except asyncio.CancelledError:
                self._abandon(work)
                raise
            finally:
                if stoppable is not None:
                    stoppable.__exit__(None, None, None)

    async def _turn(self, token: CancelToken | None) -> None:
        # a token says nothing when resumed (a thread waits on it): look again, which costs no
        # time in the simulation
        while token is not None and token.paused and not token.cancelled:  # noqa: ASYNC110
            await asyncio.sleep(PAUSED_POLL_S)
        if token is not None:
            token.check()

    def _start(self, work: Work) -> None:
        self._settle()
        if work.pair:
            work.narrow = True
            self._free[work.part] = self.free(work.part) - 2
        elif (self.active or work.shared) and self.free(work.part) > 0:
            work.narrow = True
            self._free[work.part] = self.free(work.part) - 1
        else:
            work.narrow = False
        work.left_s = work.narrow_s if work.narrow else work.wide_s
        work.started_at = asyncio.get_running_loop().time()
        self.active.append(work)
        self._plan()

    def _stop(self, work: Work) -> None:
        """The token's interrupt: the attempt ends (cancelled, or paused to run again)."""
        if work not in self.active:
            return
        self._settle()
        self._leave(work)
        error = SynthesisCancelled("synthesis cancelled") if work.token and work.token.cancelled else _Stopped()
        work.done.set_exception(error)
        self._plan()

    def _abandon(self, work: Work) -> None:
        """The task waiting for ``work`` was cancelled: it stops holding the cores."""
        if work in self.active:
            self._settle()
            self._leave(work)
            self._plan()

    def _leave(self, work: Work) -> None:
        self.active.remove(work)
        if work.narrow:
            self._free[work.part] = self.free(work.part) + work.count

    def _rates(self) -> None:
        threads = sum(self._threads(work) for work in self.active)
        share = min(1.0, self.cores / threads) if threads else 1.0
        others = self.running - 1
        for work in self.active:
            work.rate = share / (1.0 + self.contention * max(0, others - (work.count - 1)))

    def _threads(self, work: Work) -> int:
        narrow = max(1, self.cores // max(1, self.lanes))
        return work.count * narrow if work.narrow else self.cores

    def _settle(self) -> None:
        """Every active inference's progress up to now, at the rates it ran at."""
        now = asyncio.get_running_loop().time()
        elapsed, self._updated = now - self._updated, now
        for work in self.active:
            work.left_s -= elapsed * work.rate

    def _plan(self) -> None:
        """Rates for the inferences running now, and a timer for the first to end."""
        self._rates()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.active:
            return
        first = min(self.active, key=lambda work: work.left_s / work.rate)
        delay = max(0.0, first.left_s / first.rate)
        self._timer = asyncio.get_running_loop().call_later(delay, self._finish)

    def _finish(self) -> None:
        self._timer = None
        self._settle()
        now = asyncio.get_running_loop().time()
        for work in [w for w in self.active if w.left_s <= DONE_S]:
            self._leave(work)
            work.done.set_result(now - work.started_at)
        self._plan()


class _Stopped(Exception):
    """An attempt stopped by a pause: it runs again once resumed."""
