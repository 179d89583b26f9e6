"""The engine the simulator runs: every window is planned by the real planner from the load the
real scheduler hands it and the speed the real estimator measured, then costs virtual time on the
simulated cores (``cpu``) as the cost model says. Its audio is silence of the planned length.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import time
from collections.abc import Callable, Coroutine
from typing import Any

import numpy as np

from speakstream.bench.sim.cost import CostModel
from speakstream.bench.sim.cpu import Cpu, Work
from speakstream.engine.cancel import CancelToken
from speakstream.engine.fake import FakeEngine
from speakstream.engine.runtime.speed import SpeedEstimator
from speakstream.engine.windows.edges import EdgePolicy
from speakstream.engine.windows.planner import (
    FRAME_SAMPLES,
    Chunk,
    Situation,
    WindowPlan,
    held_once_made,
    plan_window,
    throughput,
)
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.types import SAMPLE_RATE, AudioPiece, Load, SynthesisTimings

WARM_FRAMES = 100
"""The window the warm-up measures the speeds on (as the real warm-up does, alone and shared)."""
_GAP = re.compile(r"\s+")


class SimEngine(FakeEngine):
    """An ``Engine`` whose streams run in the simulator's executor (``SimExecutor``)."""

    device = "sim"

    def __init__(self, cost: CostModel, *, lanes: int | None = None, policy: WindowPolicy | None = None) -> None:
        super().__init__()
        self.cost = cost
        self.lanes = lanes or (2 if cost.cores >= 2 else 1)  # as ``engine_lanes`` chooses
        self.policy = policy or WindowPolicy()
        self.edges = EdgePolicy()
        self.cpu = Cpu(cost.cores, self.lanes, cost.contention)
        self.speed = SpeedEstimator(cost.frame_wide_s / cost.speed)
        self.windows = 0

    def warm(self, voice: str = "af_heart") -> None:
        """The speeds a real warm-up leaves measured: a long window alone, and one beside another."""
        alone = self.cost.decode_s(WARM_FRAMES, narrow=False)
        shared = self.cost.decode_s(WARM_FRAMES, narrow=True) * (1 + self.cost.contention)
        for _ in range(2):
            self.speed.measured(alone, WARM_FRAMES, alone=True, still_alone=True)
            self.speed.measured(shared, WARM_FRAMES, alone=False, still_alone=False)

    def throughput(self) -> float:
        return throughput(self.policy, self.speed.reading(), self.lanes)

    def stream(
        self,
        text: str,
        *,
        voice: str = "af_heart",
        speed: float = 1.0,
        cancel: CancelToken | None = None,
        opening: bool = True,
        normalized: bool = True,
    ) -> SimStream:
        text, speed, _ = self.checked(text, voice, speed)
        return SimStream(self, text, speed, cancel, opening)


class SimStream:
    """One chunk, window by window; ``prepare`` and ``step`` only run in a ``SimExecutor``."""

    def __init__(self, engine: SimEngine, text: str, pace: float, cancel: CancelToken | None, opening: bool) -> None:
        self.engine, self.text, self.cancel = engine, text, cancel
        per = engine.cost.frames_per_char / pace
        frames = max(engine.policy.shortest, round(len(text) * per))
        ends = sorted({round(m.start() * per) for m in _GAP.finditer(text.strip())} - {0, frames})
        silent = engine.edges.onset_reach_s
        self.chunk = Chunk(0, frames, frames, tuple(ends), opens_reply=opening, silent_s=silent)
        self.prepared = False
        self.plans: list[WindowPlan] = []
        self._start, self._previous, self._position, self._front_s = 0, 0, 0, 0.0

    def prepare(self, load: Load) -> None:
        raise RuntimeError("a simulated stream runs in the simulator's executor")

    def step(self, load: Load) -> AudioPiece | None:
        raise RuntimeError("a simulated stream runs in the simulator's executor")

    async def run(self, name: str, load: Load) -> AudioPiece | None:
        """``prepare`` or ``step``, in virtual time."""
        if not self.prepared:
            await self._front(load)
        return None if name == "prepare" else await self._window(load)

    async def _front(self, load: Load) -> None:
        cost, chars = self.engine.cost, len(self.text)
        begun = time.perf_counter()
        opening = self.chunk.opens_reply
        work = Work(
            cost.front_cost_s(chars, narrow=False, opening=opening),
            cost.front_cost_s(chars, narrow=True, opening=opening),
            "front",
            self.cancel,
            load.sharing,
        )
        await self.engine.cpu.run(work)
        self._front_s, self.prepared = time.perf_counter() - begun, True

    def held_s(self, load: Load) -> float:
        """``planner.held_once_made`` for the piece made last."""
        if not self.plans:
            return 0.0
        return held_once_made(self.engine.policy, self.chunk, self.plans[-1], len(self.plans), self._situation(load))

    async def _window(self, load: Load) -> AudioPiece | None:
        if self._start >= self.chunk.stop:
            return None
        engine, begun = self.engine, time.perf_counter()
        now = self._situation(load)
        plan = plan_window(engine.policy, self.chunk, len(self.plans), self._start, self._previous, now)
        await self._decode(plan, now, load.sharing)
        self.plans.append(plan)
        engine.windows += 1
        self._start, self._previous = plan.end, plan.planned
        samples = np.zeros((plan.end - plan.start) * FRAME_SAMPLES, np.float32)
        first = len(self.plans) == 1
        piece = AudioPiece(
            samples,
            len(self.plans) - 1,
            self._position / SAMPLE_RATE,
            (self.chunk.stop - self.chunk.first) * FRAME_SAMPLES / SAMPLE_RATE,
            last=plan.last,
            timings=SynthesisTimings(self._front_s if first else 0.0, time.perf_counter() - begun),
        )
        self._position += len(samples)
        return piece

    def _situation(self, load: Load) -> Situation:
        cpu, now = self.engine.cpu, time.perf_counter()
        return Situation(
            speed=self.engine.speed.reading(),
            load=load,
            buffered_s=load.buffered_at(now),
            others_buffered_s=load.others_at(now),
            running=cpu.running,
            pair_free=self.engine.lanes > 1 and cpu.free("decoder") >= 2,
            crowded_decoder=True,
        )

    async def _decode(self, plan: WindowPlan, now: Situation, shared: bool) -> None:
        """The plan's inferences on the simulated cores, measured as the runner measures them."""
        engine, cost = self.engine, self.engine.cost
        expected = engine.speed.reading()
        if len(plan.decodes) == 2:
            longest = max(span.frames for span in plan.decodes)
            cpu = engine.cpu
            if cpu.running == 0 and not shared and cpu.free("decoder") >= 2:
                narrow = cost.decode_s(longest, narrow=True)
                pair = Work(narrow, narrow, "decoder", self.cancel, shared, pair=True)
                await cpu.run(pair, expected.expected_s(longest, narrow=True))
                return
        for span in plan.decodes:
            crowded = plan.decoder == "crowded"
            part = "crowded" if crowded else "decoder"
            wide = cost.decode_s(span.frames, narrow=False, crowded=crowded)
            narrow = cost.decode_s(span.frames, narrow=True, crowded=crowded)
            work = Work(wide, narrow, part, self.cancel, shared)
            seconds = await engine.cpu.run(work, expected.expected_s(span.frames))
            if not crowded and len(plan.decodes) == 1:
                still = now.alone and engine.cpu.running == 0 and not shared
                engine.speed.measured(seconds, span.frames, alone=now.alone, still_alone=still)


class SimExecutor(concurrent.futures.Executor):
    """Where the scheduler's turns run in the simulator: a simulated stream's step as a task on
    the virtual loop (its inferences cost virtual time), anything else at once."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        owner = getattr(fn, "__self__", None)
        if not isinstance(owner, SimStream):
            future.set_result(fn(*args, **kwargs))
            return future
        work: Coroutine[Any, Any, AudioPiece | None] = owner.run(fn.__name__, *args)
        task = asyncio.get_running_loop().create_task(work)
        task.add_done_callback(lambda done: _settle(future, done))
        future.add_done_callback(lambda f: task.cancel() if f.cancelled() else None)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to stop: the tasks end with the loop's."""


def _settle(future: concurrent.futures.Future[Any], task: asyncio.Task[Any]) -> None:
    if future.done():
        return
    if task.cancelled():
        future.cancel()
    elif (error := task.exception()) is not None:
        future.set_exception(error)
    else:
        future.set_result(task.result())
