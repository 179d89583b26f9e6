"""First-window priority and preemption: a reply's first window is what its listener waits for,
unless a listener already hearing its reply is about to run dry.

A later window whose listener has less buffered than two first windows take (``running_dry``)
goes first, beside anything: a gap once speech has started is worse than first audio a little
later. Of those, a client with fewer sessions ready goes first, then the closest to dry: a client
with many listeners starved (or never reading: their clocks say they ran dry) would otherwise take
every turn from another client's one listener. Another client's first window still gets its
client's turn: such a client cannot starve everyone's first audio either.
Otherwise the first window of any reply jumps the queue, and runs
beside other first windows only: one alone has every core, so it waits for a later window to end,
or, with ``preempt``, pauses it (ONNX Runtime's terminate flag stops its inference, which runs
again, whole, once no first window waits) on a lane of its own, when that adds no stall for that
window's listener while it still hears speech (``worth_pausing``), at most once per
window so every window ends, and only for the first windows queued when the pause began, so a
client opening reply after reply cannot keep another's window paused. When no later window may be
paused, a first window still runs on the urgent lane, beside them (``beside``): waiting for them
to end left a reply arriving mid-burst without audio for half a second (the simulator's sweep,
``docs/design.md``). No other later window starts while a first one that jumped runs or waits.

While other clients have work, a client's opening jumps only when that client holds no lane and
no opening of its ran since another client's turn ended (``opened``); otherwise it waits its
turn like any window. A client opening reply after reply (short replies, or replies dropped after
their first audio) would otherwise take every lane, and another client's listener would be served
only once it ran dry, beside those openings. One client alone opens as fast as it asks.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable

from speakstream.engine.runtime.speed import NARROW_SLOWDOWN, smoothed
from speakstream.scheduler.job import Job

FIRST_WINDOW_GUESS_S = 0.4
"""Seconds a first window takes before one is measured (2 CPU cores)."""
NextOf = Callable[[list[Job]], Job | None]
"""``Turns.next_of``: the first of the ready jobs whose client's turn is next."""


def worth_pausing(remaining_s: float, expected_s: float, buffered_s: float, first_window_s: float) -> bool:
    """Pausing a window saves the first window waiting the rest of it (``remaining_s``), and costs
    its own listener (``buffered_s`` ahead) a first window plus the window run again, whole
    (``expected_s``): a stall when that is more than the listener has. A listener still hearing speech is
    never given a gap for another's first word; one already dry is, when the wait saved is longer
    than the stall added."""
    added_stall = max(0.0, first_window_s + expected_s - buffered_s) - max(0.0, remaining_s - buffered_s)
    if buffered_s > 0:
        return added_stall <= 0.0 < remaining_s
    return remaining_s > added_stall


def _remaining_s(job: Job) -> float:
    """Seconds the inference ``job`` runs now should still take (0: none, or not known)."""
    run = job.token.running()
    return 0.0 if run is None or run[1] is None else max(0.0, run[1] - run[0])


def crowded(jobs: list[Job], lanes: int, client: str = "") -> bool:
    """More replies wait for (or are making) their first window than the lanes, as ``client``'s
    next opening meets them: each opening then delays the listeners behind it."""
    return openings(jobs, client) > lanes


def openings(jobs: list[Job], client: str) -> int:
    """The replies waiting for (or making) their first window that ``client``'s next opening
    competes with: all of its own, one of each other client's (they jump the queue one a turn)."""
    firsts = [job for job in jobs if job.first_window and not job.ended]
    others = {job.client for job in firsts} - {client}
    return sum(1 for job in firsts if job.client == client) + len(others)


def running_dry(ready: list[Job], within_s: float) -> Job | None:
    """The later window among ``ready`` whose listener, hearing its reply, has less than
    ``within_s`` buffered: of the clients with one, one with the fewest sessions ready; of its
    listeners, the least buffered. Fewest first: a client with twenty listeners starved (or never
    reading) would otherwise take every turn from another's one listener until it ran dry too."""
    sessions = Counter(job.client for job in ready)
    dry = [(sessions[job.client], ahead_s, job) for ahead_s, job in _playing(ready) if ahead_s < within_s]
    return min(dry, key=lambda entry: entry[:2], default=(0, 0.0, None))[2]


def _playing(ready: list[Job]) -> list[tuple[float, Job]]:
    """The later windows among ``ready`` whose listener hears its reply, with what each has buffered."""
    return [(job.clock.ahead_s(), job) for job in ready if not job.first_window and job.clock and job.clock.playing]


def first_windows(ready: list[Job]) -> list[Job]:
    """The first windows among ``ready``, oldest first."""
    return sorted((job for job in ready if job.first_window), key=lambda job: job.enqueued_at)


class Priority:
    """Which windows run now: those on the workers (``busy``), the first windows on the urgent lane,
    and the windows paused for them; and how long a first window takes."""

    def __init__(
        self, *, first_chunk_priority: bool = True, preempt: bool = True, beside: bool = True, lanes: int = 1
    ) -> None:
        self.lanes = lanes
        """Inferences the cores run at once at full speed (the scheduler's workers)."""
        self.first_chunk_priority = first_chunk_priority
        self.preempt = preempt
        self.beside = beside
        """A first window runs on the urgent lane beside later windows that may not be paused."""
        self.busy: set[Job] = set()
        """Jobs the workers are running (paused ones included)."""
        self.urgent: set[Job] = set()
        self.paused: set[Job] = set()
        self.paused_at = 0.0
        """When the windows now paused were paused: only first windows queued by then run in their place."""
        self.first_window_s = FIRST_WINDOW_GUESS_S
        """What a first window takes (a moving average): how long a paused window waits."""
        self._rerun_s: dict[Job, float] = {}
        """What each paused window's inference was expected to take: it runs again, whole."""
        self.opened: set[str] = set()
        """Clients an opening of which ran since another client's turn ended."""
        self.ahead: set[Job] = set()
        """First windows on the workers that jumped the queue: no later window starts beside them."""

    @property
    def in_flight(self) -> int:
        """Windows running or about to (paused ones not: they wait for the first window running in
        their place)."""
        return len(self.busy) + len(self.urgent) - len(self.paused)

    def first_window_took(self, seconds: float) -> None:
        self.first_window_s = smoothed(self.first_window_s, seconds)

    def pick(self, ready: list[Job], next_of: NextOf) -> Job | None:
        """The next step for a worker: a listener running dry's, else a waiting first window, else
        the next in turn. A first window waits rather than share the cores with a later one;
        while the urgent lane runs, only a listener running dry's, on a lane it leaves free."""
        if self.urgent:
            return self._beside_urgent(ready)
        if (dry := running_dry(ready, 2 * self.first_window_s)) is not None:
            others = [job for job in self.jumping(ready) if job.client != dry.client]
            return next_of([dry, *others]) if others else dry  # another client's opening by its turn
        if not self.first_chunk_priority:
            return next_of(ready)
        if firsts := self.jumping(ready):
            return None if any(not job.first_window for job in self.busy) else self._ahead(next_of(firsts))
        if self.ahead & self.busy:  # a first window has the cores (or shares them with first windows only)
            return None
        return next_of(ready)

    def pick_urgent(self, ready: list[Job], next_of: NextOf) -> Job | None:
        """A first window that would wait for a later window a worker runs that may be paused for
        it (or already is): with two workers the other may be free, but a first window beside
        another window runs on a share of the cores, so the later one is paused all the same.
        With ``beside``, also one that would wait for later windows none of which may be paused."""
        if not (self.preempt and self.first_chunk_priority) or not self.busy or self.urgent:
            return None
        if not self.paused and not self.pausable() and not (self.beside and self._later_only()):
            return None
        firsts = self.jumping(ready)
        if self.paused:  # openings that came since the pause wait: a flood of them cannot hold it
            firsts = [job for job in firsts if job.enqueued_at <= self.paused_at]
        return next_of(firsts)

    def jumping(self, ready: list[Job]) -> list[Job]:
        """The first windows among ``ready`` that may jump the queue: those of a client holding no
        lane and not ``opened``, and any when no other client has work."""
        held = {job.client for job in (*self.busy, *self.urgent)}  # a paused window's client too
        clients = held | {job.client for job in ready}
        return [
            job
            for job in first_windows(ready)
            if clients == {job.client} or (job.client not in held and job.client not in self.opened)
        ]

    def _ahead(self, job: Job | None) -> Job | None:
        """``job``, noted as having jumped the queue when it is a first window."""
        if job is not None and job.first_window:
            self.ahead.add(job)
        return job

    def started(self, job: Job) -> None:
        """``job``'s turn begins: an opening marks its client ``opened``."""
        if job.first_window:
            self.opened.add(job.client)

    def ended(self, job: Job) -> None:
        """``job``'s turn ended: the other clients' openings may jump again."""
        self.opened &= {job.client}
        self.ahead.discard(job)

    def _beside_urgent(self, ready: list[Job]) -> Job | None:
        """A later window whose listener would run dry waiting for the first window on the urgent
        lane to end (its remaining time, then a window's), when that leaves a lane free: the
        opening runs on a share of the cores, a little later, instead of a gap for a listener
        already hearing speech."""
        if self.in_flight >= self.lanes:
            return None
        return running_dry(ready, self._dry_within_s())

    def _dry_within_s(self) -> float:
        """Seconds buffered under which a listener is running dry: two first windows, and with an
        opening on the urgent lane, what it has left."""
        urgent_s = max((_remaining_s(job) for job in self.urgent), default=0.0)
        return urgent_s + 2 * self.first_window_s

    def until_dry_s(self, ready: list[Job]) -> float | None:
        """Seconds until the first listener among ``ready`` starts running dry (None: none is
        playing and ahead of it): a worker with nothing to pick looks again then, since no event
        marks it (an opening reading a long text on the urgent lane held a listener's next window
        past its audio's end)."""
        within_s = self._dry_within_s()
        wait_s = min((ahead_s - within_s for ahead_s, _ in _playing(ready) if ahead_s > within_s), default=None)
        return None if wait_s is None else max(wait_s, 0.001)

    def _later_only(self) -> bool:
        """The workers run later windows only (first windows there share the cores already)."""
        return not any(job.first_window for job in self.busy)

    def pausable(self) -> list[Job]:
        return [
            job
            for job in self.busy
            if not job.first_window and not job.preempted and job not in self.paused and self.worth(job)
        ]

    def pause_for_urgent(self) -> None:
        if not self.paused:
            self.paused_at = time.perf_counter()
        for job in self.pausable():
            run = job.token.running()
            self._rerun_s[job] = 0.0 if run is None or run[1] is None else run[1]
            job.preempted = True
            job.token.pause()
            self.paused.add(job)

    def resume_paused(self) -> None:
        for job in self.paused:
            job.token.resume()
        self.paused.clear()
        self._rerun_s.clear()

    def lane_wait_s(self) -> float:
        """Seconds until a lane running a later window is expected to be free, when every lane
        runs one (0: a lane is free, or a window's time is not known)."""
        later = [job for job in self.busy if not job.first_window]
        if len(later) < self.lanes:
            return 0.0
        return min(
            self._rerun_s.get(job, 0.0) + self.first_window_s if job in self.paused else _remaining_s(job)
            for job in later
        )

    def worth(self, job: Job) -> bool:
        """Whether pausing the window ``job`` runs now is worth it (``worth_pausing``)."""
        run = job.token.running()
        if run is None or run[1] is None:
            return True  # between inferences: nothing decoded is lost
        elapsed, expected = run[0], run[1]
        clock = job.clock
        buffered = math.inf if clock is None or not clock.playing else clock.ahead_s()
        rerun = expected * NARROW_SLOWDOWN  # again, beside the next windows of the reply paused for
        return worth_pausing(max(0.0, expected - elapsed), rerun, buffered, self.first_window_s)
