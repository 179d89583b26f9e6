"""The scheduler's workers: each turn runs one step of a chunk (reading its text, or one window)
on a worker thread, handing the engine the load at that moment as plain data (``types.Load``).

Who goes next is ``priority`` and ``turns``; who gets in is ``admission``. A cancelled or
disconnected session's queued work is dropped at once and a running window is stopped (ONNX
Runtime's terminate flag). Inference never runs on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import replace

from speakstream.engine.base import Engine
from speakstream.engine.cancel import SynthesisCancelled, WorkClock
from speakstream.errors import EngineError, SpeakstreamError
from speakstream.scheduler import priority
from speakstream.scheduler.admission import Admission
from speakstream.scheduler.cache import AudioCache
from speakstream.scheduler.capacity import Capacity, CapacityReading
from speakstream.scheduler.job import Clock, Job, PlaybackClock, clock_now, least_buffered
from speakstream.scheduler.priority import Priority
from speakstream.scheduler.turns import Turns
from speakstream.types import AudioPiece, Load

log = logging.getLogger("speakstream.scheduler")


class Scheduler:
    """Queue of chunks for one engine, served window by window by a worker task a lane (``lanes`` threads)."""

    def __init__(
        self,
        engine: Engine,
        *,
        lanes: int = 1,
        max_queue: int = 64,
        first_chunk_priority: bool = True,
        preempt: bool = True,
        max_per_client: int = 0,
        on_done: Callable[[Job, AudioPiece | None], None] | None = None,
        clock: Clock = clock_now,
        cache: AudioCache | None = None,
        max_load: float | None = None,
        executors: Callable[[int, str], Executor] | None = None,
        beside: bool = True,
    ) -> None:
        """``cache``: where whole chunks' audio is kept and repeats answered (None: none); ``max_load``:
        the share of the measured capacity admitted replies may ask for (None: no admission by
        capacity); ``executors(threads, name)``: where turns run (default: thread pools); ``beside``:
        ``Priority.beside``."""
        self.engine = engine
        self.cache = cache
        self.lanes = lanes
        self.capacity = Capacity(lanes, engine.throughput)
        self.admission = Admission(
            max_queue,
            max_per_client,
            capacity=None if max_load is None else self.capacity_now,
            max_load=max_load or 1.0,
        )
        self.turns = Turns()
        self.priority = Priority(first_chunk_priority=first_chunk_priority, preempt=preempt, beside=beside, lanes=lanes)
        self._on_done = on_done
        self._clock = clock
        self._wakeup = asyncio.Event()
        pool = executors or _thread_pool
        self._executor = pool(lanes, "speakstream-engine")
        self._urgent_executor = pool(1, "speakstream-urgent")
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def queued(self) -> int:
        """Chunks waiting for (or in) synthesis."""
        return self.turns.queued

    @property
    def running(self) -> bool:
        """Every engine worker is alive (one that died of a bug leaves chunks unserved)."""
        return bool(self._tasks) and not any(task.done() for task in self._tasks)

    def capacity_now(self) -> float:
        """Audio seconds a second the engine makes with every lane busy (``Capacity``)."""
        return self.capacity.audio_per_s()[0]

    def reading(self) -> CapacityReading:
        """Capacity and load now, for /metrics and /ping."""
        capacity, measured = self.capacity.audio_per_s()
        return CapacityReading(capacity, float(self.admission.replies), measured)

    def crowded(self, client: str = "") -> bool:
        """More replies wait for a first window than the workers run (``priority.crowded``)."""
        return priority.crowded(self.turns.jobs(), self.lanes, client)

    def load(self, job: Job, *, planning: bool = True) -> Load:
        """The load as ``job`` takes its turn. ``planning``: a window is planned with it, so the
        reply's crowding is settled now (after its front: replies that came meanwhile count)."""
        if planning:
            job.crowded = job.crowded or (job.first_window and self.crowded(job.client))
        clock = job.clock
        return Load(
            lanes=self.lanes,
            in_flight=self.priority.in_flight,
            replies=self.turns.replies,
            waiting_first=priority.openings(self.turns.jobs(), job.client),
            crowded=job.crowded,
            buffered_s=None if clock is None else clock.ahead_s(),
            playing=clock is not None and clock.playing,
            taken_at=self._clock(),
            others_buffered_s=least_buffered(self.turns.jobs(), besides=clock),
            lane_wait_s=self.priority.lane_wait_s(),
        )

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._work(), name=f"engine-worker-{i}") for i in range(self.lanes)]
        self._tasks.append(asyncio.create_task(self._work_urgent(), name="engine-urgent"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        for session_id in self.turns.sessions:
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
        normalized: bool = True,
    ) -> Job:
        """Queue one chunk of an admitted reply (see ``reserve``); ``job.stream()`` gives its audio.
        ``clock``: the reply's, so each window is sized to what its listener has buffered."""
        job = Job(session_id, request_id, index, text, voice, speed, client, taken=self._wakeup.set, clock=clock)
        job.normalized = normalized
        _look_up(self.cache, self.engine, job)
        self.turns.add(job)
        job.crowded = job.first_window and self.crowded(client)
        self._answer_cached(session_id)
        self._wakeup.set()
        return job

    def _answer_cached(self, session_id: str) -> None:
        """The session's chunks answered from the cache, in order, while one is next in its line:
        then its listener's clock counts its audio as it would a made one's."""
        while (job := self.turns.head(session_id)) is not None and job.cached is not None and not job.ended:
            job.started_at = time.perf_counter()
            self._finish(job, job.cached, None)

    def cancel(self, session_id: str, request_id: str | None = None) -> int:
        """Stop a session's (or one request's) chunks: the running window stops, the rest is dropped."""
        dropped = self.turns.cancel(session_id, request_id)
        for job in dropped:
            job.token.cancel()
            if not job.running:
                job.close(SynthesisCancelled("synthesis cancelled"))
        self._answer_cached(session_id)  # another request's chunk may be next now
        return len(dropped)

    async def _work(self) -> None:
        while True:
            ready = self.turns.ready()
            if (job := self.priority.pick(ready, self.turns.next_of)) is not None:
                await self._run(job, self._executor, self.priority.busy)
            else:  # a listener starting to run dry meanwhile wakes it too
                await _woken(self._wakeup, self.priority.until_dry_s(ready))

    async def _work_urgent(self) -> None:
        """The lane for first windows that would wait for a busy worker: pause the windows running,
        make the first windows, resume the paused windows."""
        try:
            while True:
                job = self.priority.pick_urgent(self.turns.ready(), self.turns.next_of)
                if job is None:
                    self.priority.resume_paused()
                    await _woken(self._wakeup, None)
                    continue
                self.priority.pause_for_urgent()
                await self._run(job, self._urgent_executor, self.priority.urgent)
        finally:
            self.priority.resume_paused()

    async def _run(self, job: Job, executor: Executor, lane: set[Job]) -> None:
        """One turn of ``job`` in ``executor``; then it goes to the back of the line."""
        job.running = True
        self.priority.started(job)
        lane.add(job)
        if job.started_at is None:
            job.started_at = time.perf_counter()
        first, started = job.first_window, time.perf_counter()
        try:
            piece = await self._turn(job, executor)
            job.busy_s += time.perf_counter() - started
            if first:
                self.priority.first_window_took(time.perf_counter() - started)
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
            self.turns.had_turn(job)
            self.priority.ended(job)
            self._answer_cached(job.session_id)
            self._wakeup.set()  # a session skipped while this job ran may be ready now

    async def _turn(self, job: Job, executor: Executor) -> AudioPiece | None:
        """One unit of work: the chunk's text read first when it is not yet (a step of its own, so
        the window after it is planned with the load as it is then), then one piece."""
        loop = asyncio.get_running_loop()
        clock = WorkClock(job.token)
        try:
            # the other workers woken with this one pick their windows first, so the load below
            # counts every window handed out together (each then takes a narrow copy at once)
            await asyncio.sleep(0)
            synthesis = job.synthesis or job.begin(self.engine)
            if not synthesis.prepared:
                await loop.run_in_executor(executor, synthesis.prepare, self._handed(job, planning=False))
            return await loop.run_in_executor(executor, synthesis.step, self._handed(job))
        except BaseException:
            job.failed_s = clock.seconds()  # the engine's time all the same (``on_done``)
            raise

    def _handed(self, job: Job, *, planning: bool = True) -> Load:
        """The load ``job``'s turn is handed; a turn alone leaves the chunk out of the capacity."""
        load = self.load(job, planning=planning)
        job.beside_others = job.beside_others and load.sharing
        return load

    def _finish(self, job: Job, piece: AudioPiece | None, error: BaseException | None) -> None:
        heard = not job.ended and not job.token.cancelled and error is None and piece is not None
        if heard and piece is not None and job.first_window and job.cached is None and job.synthesis is not None:
            piece = replace(piece, hold_s=job.synthesis.held_s(self.load(job, planning=False)))
        if heard and piece is not None and job.clock is not None:
            job.gap_s = job.clock.add(piece.duration_s, job.enqueued_at, hold_s=piece.hold_s)
        if self._on_done:
            self._on_done(job, piece)
        if job.ended:
            return
        if job.token.cancelled:
            error = SynthesisCancelled("synthesis cancelled")
        if error is None and piece is not None and job.cached is None:
            whole = job.made_whole(piece)
            if whole is not None and self.cache is not None and job.sound is not None:
                self.cache.put(job.sound, whole)
            if piece.last and job.beside_others:  # a whole chunk made beside others measures the capacity
                self.capacity.chunk_done(job.audio_s, job.busy_s)
            busy = self.priority.in_flight + len(self.turns.ready()) >= self.lanes  # every lane has work
            self.capacity.made(piece.duration_s, time.perf_counter(), saturated=busy)
        if error is not None or piece is None or piece.last:
            self.turns.drop(job)
            job.close(error if error is not None else piece)
            return
        job.made += 1
        if piece.hold_s > 0 and job.made == 1:
            job.release_at = self._clock() + piece.hold_s
        job.deliver(piece)


async def _woken(event: asyncio.Event, timeout_s: float | None) -> None:
    """Until ``event`` is set (cleared first), or ``timeout_s`` has passed (None: no limit)."""
    event.clear()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout_s):
            await event.wait()


def _thread_pool(threads: int, name: str) -> Executor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)


def _look_up(cache: AudioCache | None, engine: Engine, job: Job) -> None:
    """With a cache, the chunk's sound, and its audio when it was made before."""
    if cache is None:
        return
    try:
        job.sound = engine.sound_key(job.text, voice=job.voice, speed=job.speed, normalized=job.normalized)
    except SpeakstreamError:
        return  # synthesis will say why, in its turn
    job.cached = cache.get(job.sound)
