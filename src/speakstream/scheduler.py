"""One scheduler owns the engine and decides which chunk is synthesised next.

Policy: the first chunk of any reply jumps the queue (that is what a listener waits for);
otherwise sessions are served round-robin, one chunk each, so a long reply cannot starve a short
one. A cancelled or disconnected session's queued chunks are dropped at once. Inference runs in
worker threads, never on the event loop.

Admission has one counter: a reply ``reserve``s room for the chunks it may have in flight before
its first chunk is queued, and a reservation over ``max_queue`` is refused with a retryable
``Overloaded``; a reply never has more chunks queued than it reserved, so the queue stays bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from speakstream.engine.base import CancelToken, Engine, SynthesisCancelled
from speakstream.errors import EngineError, Overloaded, SpeakstreamError
from speakstream.types import AudioChunk


@dataclass(eq=False)
class Job:
    """One chunk of one reply waiting for (or in) synthesis."""

    session_id: str
    request_id: str
    index: int
    """Position of the chunk in its reply; 0 is the first."""
    text: str
    voice: str
    speed: float
    future: asyncio.Future[AudioChunk]
    enqueued_at: float = field(default_factory=time.perf_counter)
    started_at: float | None = None
    token: CancelToken = field(default_factory=CancelToken)
    """Stops the synthesis of this chunk if it is already running."""

    @property
    def queue_wait_s(self) -> float:
        return (self.started_at or time.perf_counter()) - self.enqueued_at


class Scheduler:
    """Queue of chunks for one engine, served by ``workers`` threads."""

    def __init__(
        self,
        engine: Engine,
        *,
        workers: int = 1,
        max_queue: int = 64,
        first_chunk_priority: bool = True,
        on_done: Callable[[Job, AudioChunk | None], None] | None = None,
    ) -> None:
        self.engine = engine
        self.workers = workers
        self.max_queue = max_queue
        self.first_chunk_priority = first_chunk_priority
        self._on_done = on_done
        self._queues: dict[str, deque[Job]] = {}
        self._rotation: deque[str] = deque()
        self._queued = 0
        self._wakeup = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="speakstream-engine")
        self._tasks: list[asyncio.Task[None]] = []
        self._running: set[Job] = set()
        self._reserved = 0

    @property
    def queued(self) -> int:
        return self._queued

    @property
    def reserved(self) -> int:
        return self._reserved

    def reserve(self, slots: int) -> None:
        """Admission: room for a reply's chunks in flight, or a retryable ``Overloaded``."""
        if self._reserved + slots > self.max_queue:
            raise Overloaded(f"the server is at its limit of {self.max_queue} queued chunks; retry shortly")
        self._reserved += slots

    def release(self, slots: int) -> None:
        self._reserved = max(0, self._reserved - slots)

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._work(), name=f"engine-worker-{i}") for i in range(self.workers)]

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

    def submit(self, session_id: str, request_id: str, index: int, text: str, *, voice: str, speed: float) -> Job:
        """Queue one chunk of an admitted reply (see ``reserve``); its future gets the audio."""
        job = Job(session_id, request_id, index, text, voice, speed, asyncio.get_running_loop().create_future())
        queue = self._queues.setdefault(session_id, deque())
        if not queue and session_id not in self._rotation:
            self._rotation.append(session_id)
        queue.append(job)
        self._queued += 1
        self._wakeup.set()
        return job

    def cancel(self, session_id: str, request_id: str | None = None) -> int:
        """Stop a session's (or one request's) running chunk and drop its queued ones."""
        for job in self._running:
            if job.session_id == session_id and request_id in (None, job.request_id):
                job.token.cancel()
                job.future.cancel()
        queue = self._queues.get(session_id)
        if not queue:
            return 0
        dropped = [j for j in queue if request_id is None or j.request_id == request_id]
        for job in dropped:
            queue.remove(job)
            job.future.cancel()
        self._queued -= len(dropped)
        if not queue:
            self._forget(session_id)
        return len(dropped)

    def _forget(self, session_id: str) -> None:
        self._queues.pop(session_id, None)
        with contextlib.suppress(ValueError):
            self._rotation.remove(session_id)

    def _pick(self) -> Job | None:
        """The next job: the oldest waiting first chunk, else the next session in rotation."""
        if not self._rotation:
            return None
        session_id = self._rotation[0]
        if self.first_chunk_priority:
            firsts = [q[0] for q in self._queues.values() if q and q[0].index == 0]
            if firsts:
                session_id = min(firsts, key=lambda j: j.enqueued_at).session_id
        queue = self._queues[session_id]
        job = queue.popleft()
        self._queued -= 1
        self._rotation.remove(session_id)
        if queue:
            self._rotation.append(session_id)
        else:
            self._queues.pop(session_id, None)
        return job

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            job = self._pick()
            if job is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            if job.future.done():
                continue
            job.started_at = time.perf_counter()
            self._running.add(job)
            try:
                chunk = await loop.run_in_executor(self._executor, self._synthesize, job)
            except SpeakstreamError as exc:
                self._finish(job, None, exc)
            except Exception as exc:  # an engine bug must fail one request, not the worker
                self._finish(job, None, EngineError(f"synthesis failed: {exc}"))
            else:
                self._finish(job, chunk, None)
            finally:
                self._running.discard(job)

    def _synthesize(self, job: Job) -> AudioChunk:
        return self.engine.synthesize(job.text, voice=job.voice, speed=job.speed, cancel=job.token)

    def _finish(self, job: Job, chunk: AudioChunk | None, error: BaseException | None) -> None:
        if self._on_done:
            self._on_done(job, chunk)
        if job.future.done():
            return
        if isinstance(error, SynthesisCancelled):
            job.future.cancel()
        elif error is not None:
            job.future.set_exception(error)
        elif chunk is not None:
            job.future.set_result(chunk)
