"""One scheduler owns the engine and decides which piece of work runs next.

The unit of work is one step of a chunk's synthesis: one window of the decoder (``Engine.stream``),
so a long chunk never holds the engine for long. Policy: the first window of any reply jumps the
queue (that is what a listener waits for), and need not wait for the window being decoded: with
``preempt``, that window is paused (ONNX Runtime's terminate flag stops its inference, which runs
again, whole, once no first window waits) when the wait saved is longer than the stall it adds to
that window's listener (``worth_pausing``), at most once per window so every window ends, and the
first window runs on a lane of its own. Otherwise sessions are served round-robin, one window
each, so a long reply cannot starve a short one, and within a session its chunks go in order.
Turns go to clients first (an address), then to that client's sessions: a client with twenty
parallel sessions gets the engine as often as a client with one, first windows included. A
cancelled or disconnected session's queued work is dropped at once and a running window is
stopped (ONNX Runtime's terminate flag). Inference runs in worker threads, never on the event
loop.

Admission has one counter: a reply ``reserve``s room for the chunks it may have in flight before
its first chunk is queued, and a reservation over ``max_queue`` is refused with a retryable
``Overloaded``; a reply never has more chunks queued than it reserved, so the queue stays bounded.
With ``max_per_client`` set, one client's reservations are capped too (``client_limit``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

from speakstream.engine.base import CancelToken, Engine, SynthesisCancelled, WorkClock
from speakstream.errors import EngineError, Overloaded, SpeakstreamError
from speakstream.types import AudioPiece

log = logging.getLogger("speakstream.scheduler")

MAX_PIECES_AHEAD = 64
"""Pieces of one chunk made but not yet taken by its reply (a chunk has far fewer windows)."""
FIRST_WINDOW_GUESS_S = 0.4
"""Seconds a first window takes before one is measured (2 CPU cores)."""


@dataclass(slots=True)
class PlaybackClock:
    """How far a reply's audio is ahead of its listener, who is assumed to play it in real time
    from the moment its first piece was made: what the engine may spend on the next window."""

    started_at: float | None = None
    audio_s: float = 0.0

    def add(self, seconds: float) -> None:
        if self.started_at is None:
            self.started_at = time.perf_counter()
        self.audio_s += seconds

    def ahead_s(self) -> float:
        if self.started_at is None:
            return 0.0
        return max(0.0, self.audio_s - (time.perf_counter() - self.started_at))


@dataclass(eq=False)
class Job:
    """One chunk of one reply, synthesised window by window."""

    session_id: str
    request_id: str
    index: int
    """Position of the chunk in its reply; 0 is the first."""
    text: str
    voice: str
    speed: float
    client: str = ""
    """Who asked (an address): turns are shared out per client first."""
    enqueued_at: float = field(default_factory=time.perf_counter)
    started_at: float | None = None
    token: CancelToken = field(default_factory=CancelToken)
    """Stops the synthesis of this chunk if it is already running."""
    pieces: asyncio.Queue[AudioPiece | BaseException | None] = field(
        default_factory=lambda: asyncio.Queue(maxsize=MAX_PIECES_AHEAD)
    )
    steps: Iterator[AudioPiece] | None = None
    made: int = 0
    """Pieces made so far."""
    running: bool = False
    ended: bool = False
    taken: Callable[[], None] | None = None
    """Called when the reply takes a piece (room again in ``pieces``)."""
    clock: PlaybackClock | None = None
    """The reply's playback clock, shared by its chunks (None: windows of fixed sizes)."""
    failed_s: float = 0.0
    """Engine seconds of the step that failed or was cancelled (a piece carries its own timings)."""
    preempted: bool = False
    """Paused for another reply's first window during the window it is making now (a window is
    paused at most once, so it always ends)."""
    crowded: bool = False
    """More replies waited for their first window than the workers when this one was queued or
    when its opening window was sized (``Scheduler.crowded``): that window is made the shortest
    that sounds right."""

    @property
    def queue_wait_s(self) -> float:
        return (self.started_at or time.perf_counter()) - self.enqueued_at

    @property
    def first_window(self) -> bool:
        """The first window of a reply: what a listener is waiting for."""
        return self.index == 0 and self.made == 0

    async def stream(self) -> AsyncIterator[AudioPiece]:
        """The chunk's pieces as the engine makes them; raises what synthesis raised."""
        while True:
            item = await self.pieces.get()
            if self.taken is not None:
                self.taken()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self, last: AudioPiece | BaseException | None) -> None:
        self.ended = True
        self.steps = None
        if last is not None:
            self.deliver(last)
        self.deliver(None)

    def deliver(self, item: AudioPiece | BaseException | None) -> None:
        with contextlib.suppress(asyncio.QueueFull):  # only a reply that stopped reading fills it
            self.pieces.put_nowait(item)


class Scheduler:
    """Queue of chunks for one engine, served window by window by ``workers`` threads."""

    def __init__(
        self,
        engine: Engine,
        *,
        workers: int = 1,
        max_queue: int = 64,
        first_chunk_priority: bool = True,
        preempt: bool = True,
        max_per_client: int = 0,
        on_done: Callable[[Job, AudioPiece | None], None] | None = None,
    ) -> None:
        self.engine = engine
        self.workers = workers
        self.max_queue = max_queue
        self.max_per_client = max_per_client
        """Chunks one client may have reserved at once (0: only ``max_queue`` applies)."""
        self.first_chunk_priority = first_chunk_priority
        self.preempt = preempt
        """A first window that finds every worker busy with a later window need not wait for it:
        those windows are paused when ``worth_pausing`` says so (their inference stops, and runs
        again after it) and it runs on its own lane."""
        self._on_done = on_done
        self._queues: dict[str, deque[Job]] = {}
        self._rotation: deque[str] = deque()
        self._clients: deque[str] = deque()
        """Clients in the order of their next turn."""
        self._wakeup = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="speakstream-engine")
        self._urgent_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="speakstream-urgent")
        self._busy: set[Job] = set()
        """Jobs the workers are running (paused ones included)."""
        self._urgent: set[Job] = set()
        self._paused: set[Job] = set()
        self._first_window_s = FIRST_WINDOW_GUESS_S
        """What a first window takes (a moving average): how long a paused window waits."""
        self._tasks: list[asyncio.Task[None]] = []
        self._reserved = 0
        self._reserved_by: dict[str, int] = {}
        if (set_in_flight := getattr(engine, "set_in_flight", None)) is not None:
            set_in_flight(self._in_flight)  # windows dispatched together share the cores from the start
        if (set_replies := getattr(engine, "set_replies", None)) is not None:
            set_replies(self._replies)  # a lone reply may take every lane (``WindowPolicy.split_frames``)

    def crowded(self) -> bool:
        """More replies wait for (or are making) their first window than the workers run at once:
        each opening's work then delays the listeners behind it (``Engine.stream``'s ``crowded``).
        Read from the worker threads too: a snapshot of the queues, as ``_replies`` takes."""
        queued = [job for queue in list(self._queues.values()) for job in list(queue)]
        return sum(1 for job in queued if job.first_window and not job.ended) > self.workers

    def _crowded_for(self, job: Job) -> bool:
        """Whether ``job``'s opening is crowded, asked by the engine as it sizes that window: when
        it was queued so (it waited for the others), or is so now. Now is after the chunk's front,
        so the replies that came while the first ones were read count: one at the head of the
        line delays the rest."""
        job.crowded = job.crowded or (job.first_window and self.crowded())
        return job.crowded

    def _in_flight(self) -> int:
        """Windows the workers run now or are about to (paused ones not: they wait for the first
        window running in their place). Read from the worker threads, as each inference starts."""
        return len(self._busy) + len(self._urgent) - len(self._paused)

    def _replies(self) -> int:
        """Sessions with chunks queued or in synthesis. Read from the worker threads: a snapshot of
        the queues (taken whole, under the GIL), so the event loop may change them meanwhile."""
        return sum(1 for queue in list(self._queues.values()) if queue)

    @property
    def queued(self) -> int:
        """Chunks waiting for (or in) synthesis."""
        return sum(len(q) for q in self._queues.values())

    @property
    def running(self) -> bool:
        """Every engine worker is alive (one that died of a bug leaves chunks unserved)."""
        return bool(self._tasks) and not any(task.done() for task in self._tasks)

    @property
    def reserved(self) -> int:
        return self._reserved

    def reserve(self, slots: int, client: str = "") -> None:
        """Admission: room for a reply's chunks in flight, or a retryable ``Overloaded``."""
        if self._reserved + slots > self.max_queue:
            raise Overloaded(f"the server is at its limit of {self.max_queue} queued chunks; retry shortly")
        mine = self._reserved_by.get(client, 0)
        if self.max_per_client and mine + slots > self.max_per_client:
            raise Overloaded(
                f"this client is at its limit of {self.max_per_client} queued chunks; retry when a reply ends",
                code="client_limit",
            )
        self._reserved += slots
        self._reserved_by[client] = mine + slots

    def release(self, slots: int, client: str = "") -> None:
        self._reserved = max(0, self._reserved - slots)
        left = self._reserved_by.get(client, 0) - slots
        if left > 0:
            self._reserved_by[client] = left
        else:
            self._reserved_by.pop(client, None)

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._work(), name=f"engine-worker-{i}") for i in range(self.workers)]
        self._tasks.append(asyncio.create_task(self._work_urgent(), name="engine-urgent"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        for session_id in list(self._queues):
            self.cancel(session_id)
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._urgent_executor.shutdown(wait=True, cancel_futures=True)

    def submit(
        self,
        session_id: str,
        request_id: str,
        index: int,
        text: str,
        *,
        voice: str,
        speed: float,
        clock: PlaybackClock | None = None,
        client: str = "",
    ) -> Job:
        """Queue one chunk of an admitted reply (see ``reserve``); ``job.stream()`` gives its audio.
        ``clock``: the reply's, so each window is sized to what its listener has buffered."""
        job = Job(session_id, request_id, index, text, voice, speed, client, taken=self._wakeup.set, clock=clock)
        queue = self._queues.setdefault(session_id, deque())
        if session_id not in self._rotation:
            self._rotation.append(session_id)
        if client not in self._clients:
            self._clients.append(client)
        queue.append(job)
        job.crowded = job.first_window and self.crowded()
        self._wakeup.set()
        return job

    def cancel(self, session_id: str, request_id: str | None = None) -> int:
        """Stop a session's (or one request's) chunks: the running window stops, the rest is dropped."""
        queue = self._queues.get(session_id)
        if not queue:
            return 0
        dropped = [j for j in queue if request_id in (None, j.request_id)]
        for job in dropped:
            job.token.cancel()
            queue.remove(job)
            if not job.running:
                job.close(SynthesisCancelled("synthesis cancelled"))
        if not queue:
            self._forget(session_id, dropped[0].client if dropped else None)
        return len(dropped)

    def _forget(self, session_id: str, client: str | None) -> None:
        self._queues.pop(session_id, None)
        with contextlib.suppress(ValueError):
            self._rotation.remove(session_id)
        if client is not None and not self._has_work(client):
            with contextlib.suppress(ValueError):
                self._clients.remove(client)

    def _has_work(self, client: str) -> bool:
        return any(q and q[0].client == client for q in self._queues.values())

    def _ready(self) -> list[Job]:
        """Each session's next chunk, when nothing runs it and its reply has room for a piece."""
        return [
            q[0] for s in self._rotation if (q := self._queues.get(s)) and not q[0].running and not q[0].pieces.full()
        ]

    def _pick(self) -> Job | None:
        """The next step: a waiting first window, else the next session in rotation; in both,
        the client whose turn is next goes first (then its oldest first window, or its next
        session). With two workers, two windows run at once on a share of the cores each
        (``inference.Lanes``), but a first window only beside another first window: one alone
        runs 1.5x faster, so it waits for a later window to end (or pauses it, ``_pick_urgent``)
        and no later window starts while it runs or waits. Nothing while the urgent lane runs a
        first window: it has the cores."""
        if self._urgent:
            return None
        ready = self._ready()
        if not self.first_chunk_priority:
            return self._next_of(ready)
        if firsts := self._firsts(ready):  # it waits for a later window rather than share the cores with it
            return None if any(not job.first_window for job in self._busy) else self._next_of(firsts)
        if any(job.first_window for job in self._busy):  # a first window has the cores (or shares them
            return None  # with first windows only)
        return self._next_of(ready)

    @staticmethod
    def _firsts(ready: list[Job]) -> list[Job]:
        """The first windows among ``ready``, oldest first."""
        return sorted((job for job in ready if job.first_window), key=lambda job: job.enqueued_at)

    def _next_of(self, ready: list[Job]) -> Job | None:
        """The first of ``ready`` whose client's turn is next."""
        if not ready:
            return None
        turn = {client: i for i, client in enumerate(self._clients)}
        return min(ready, key=lambda job: turn.get(job.client, len(turn)))  # min keeps the first of equals

    def _pick_urgent(self) -> Job | None:
        """A first window that would wait, or share the cores: a worker is busy with a later window
        that can be paused for it (or already is). With two workers, the other may be free: but a
        first window beside another window runs on one core (``inference.Lanes``), about 1.5x
        slower than alone on both, so the later window is paused for it all the same."""
        if not (self.preempt and self.first_chunk_priority) or not self._busy or self._urgent:
            return None
        if not self._paused and not self._pausable():
            return None
        return self._next_of(self._firsts(self._ready()))

    def _pausable(self) -> list[Job]:
        return [
            job
            for job in self._busy
            if not job.first_window and not job.preempted and job not in self._paused and self.worth_pausing(job)
        ]

    def worth_pausing(self, job: Job) -> bool:
        """Pausing a window saves the first window the rest of it (``remaining``), and costs its
        own listener a first window plus the part already decoded: a stall if that listener has
        less audio buffered. Pause when the wait saved is longer than the stall added."""
        run = job.token.running()
        if run is None or run[1] is None:
            return True  # between inferences: nothing decoded is lost
        elapsed, expected = run[0], run[1]
        remaining = max(0.0, expected - elapsed)
        clock = job.clock
        ahead = math.inf if clock is None or clock.started_at is None else clock.ahead_s()
        added_stall = max(0.0, self._first_window_s + expected - ahead) - max(0.0, remaining - ahead)
        return remaining > added_stall

    async def _work(self) -> None:
        while True:
            job = self._pick()
            if job is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            await self._run(job, self._executor, self._busy)

    async def _work_urgent(self) -> None:
        """The lane for first windows that would wait for a busy worker: pause the windows
        running, make the first windows, resume the paused windows."""
        try:
            while True:
                job = self._pick_urgent()
                if job is None:
                    self._resume_paused()
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                for running in self._pausable():
                    running.preempted = True
                    running.token.pause()
                    self._paused.add(running)
                await self._run(job, self._urgent_executor, self._urgent)
        finally:
            self._resume_paused()

    def _resume_paused(self) -> None:
        for job in self._paused:
            job.token.resume()
        self._paused.clear()

    async def _run(self, job: Job, executor: ThreadPoolExecutor, lane: set[Job]) -> None:
        """One step of ``job`` in ``executor``; then it goes to the back of the line."""
        job.running = True
        lane.add(job)
        if job.started_at is None:
            job.started_at = time.perf_counter()
        first, started = job.first_window, time.perf_counter()
        try:
            piece = await asyncio.get_running_loop().run_in_executor(executor, self._step, job)
            if first:
                self._first_window_s += 0.3 * (time.perf_counter() - started - self._first_window_s)
        except SpeakstreamError as exc:
            if exc.__cause__ is not None:  # what the client is not told (paths, library text)
                # a cancel stops inference through ONNX Runtime's terminate flag, which surfaces as
                # its own error: the expected end of a cancelled request, not a fault
                level = logging.DEBUG if isinstance(exc, SynthesisCancelled) else logging.WARNING
                log.log(level, "%s: %s: %r", job.request_id, exc.message, exc.__cause__)
            self._finish(job, None, exc)
        except Exception as exc:  # an engine bug must fail one request, not the worker
            log.exception("%s: synthesis failed", job.request_id)
            self._finish(job, None, EngineError(f"synthesis failed ({type(exc).__name__}; see the server log)"))
        else:
            job.preempted = False
            self._finish(job, piece, None)
        finally:
            lane.discard(job)
            job.running = False
            if job.session_id in self._rotation:  # its turn is over: to the back of the line
                self._rotation.remove(job.session_id)
                self._rotation.append(job.session_id)
            self._next_turn(job.client)
            self._wakeup.set()  # a session skipped while this job ran may be ready now

    def _next_turn(self, client: str) -> None:
        """``client`` had its turn: to the back of the line, or out of it with nothing queued."""
        with contextlib.suppress(ValueError):
            self._clients.remove(client)
        if self._has_work(client):
            self._clients.append(client)

    def _step(self, job: Job) -> AudioPiece | None:
        """One unit of work, in a worker thread; None when the chunk had no more pieces."""
        clock = WorkClock(job.token)
        try:
            if job.steps is None:
                opening = job.index == 0
                ahead = None if job.clock is None else partial(self.ahead_for, job.clock)
                job.steps = self.engine.stream(
                    job.text,
                    voice=job.voice,
                    speed=job.speed,
                    cancel=job.token,
                    opening=opening,
                    ahead=ahead,
                    crowded=partial(self._crowded_for, job),
                )
            return next(job.steps, None)
        except BaseException:
            job.failed_s = clock.seconds()  # the engine's time all the same (``on_done``)
            raise

    def ahead_for(self, clock: PlaybackClock) -> float:
        """What the engine may spend on this reply's next window: the audio its listener has
        buffered. When that listener has already run dry while other sessions take turns, the
        engine is short of time for everyone and a gap cannot be avoided: then the largest window
        (the least context decoded twice) serves every listener best, so there is no limit."""
        ahead = clock.ahead_s()
        if ahead <= 0.0 and clock.started_at is not None and len(self._rotation) > 1:
            return math.inf
        return ahead

    def _finish(self, job: Job, piece: AudioPiece | None, error: BaseException | None) -> None:
        if self._on_done:
            self._on_done(job, piece)
        if job.ended:
            return
        if job.token.cancelled:
            error = SynthesisCancelled("synthesis cancelled")
        if error is None and piece is not None and job.clock is not None:
            job.clock.add(piece.duration_s)
        if error is not None or piece is None or piece.last:
            self._drop(job)
            job.close(error if error is not None else piece)
            return
        job.made += 1
        job.deliver(piece)

    def _drop(self, job: Job) -> None:
        queue = self._queues.get(job.session_id)
        if queue and job in queue:
            queue.remove(job)
            if not queue:
                self._forget(job.session_id, job.client)
