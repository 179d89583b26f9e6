"""The scheduler on its own: priority, round-robin, cancel and admission (fake engine)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest

from speakstream.engine.base import CancelToken
from speakstream.engine.fake import FakeEngine
from speakstream.errors import Overloaded
from speakstream.scheduler import Job, Scheduler
from speakstream.types import AudioChunk


class GateEngine(FakeEngine):
    """Holds its first synthesis until ``gate`` opens, so a queue can be built up behind it."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.busy = threading.Event()

    def synthesize(
        self, text: str, *, voice: str = "af_heart", speed: float = 1.0, cancel: CancelToken | None = None
    ) -> AudioChunk:
        if text == "hold":
            self.busy.set()
            while not self.gate.wait(0.005):
                if cancel is not None:
                    cancel.check()
        return super().synthesize(text, voice=voice, speed=speed, cancel=cancel)


@pytest.fixture
async def held() -> AsyncIterator[tuple[Scheduler, GateEngine, Job]]:
    """A scheduler whose one worker is busy with a 'hold' job until the gate opens."""
    engine = GateEngine()
    scheduler = Scheduler(engine, max_queue=16)
    await scheduler.start()
    hold = scheduler.submit("holder", "h", 0, "hold", voice="af_heart", speed=1.0)
    await asyncio.wait_for(asyncio.to_thread(engine.busy.wait, 10), 15)
    try:
        yield scheduler, engine, hold
    finally:
        engine.gate.set()
        await scheduler.stop()


def _submit(scheduler: Scheduler, session: str, index: int) -> Job:
    return scheduler.submit(session, f"{session}-r", index, f"{session}{index}", voice="af_heart", speed=1.0)


async def test_a_first_chunk_jumps_the_queue(held: tuple[Scheduler, GateEngine, Job]) -> None:
    scheduler, engine, _ = held
    later = [_submit(scheduler, "a", i) for i in (1, 2, 3)]
    first = _submit(scheduler, "b", 0)
    engine.gate.set()
    await asyncio.wait_for(asyncio.gather(*(j.future for j in [*later, first])), 10)
    assert engine.calls[1:] == ["b0", "a1", "a2", "a3"]


async def test_sessions_are_served_round_robin(held: tuple[Scheduler, GateEngine, Job]) -> None:
    scheduler, engine, _ = held
    jobs = [_submit(scheduler, s, i) for s in ("a", "b", "c") for i in (1, 2)]
    assert scheduler.queued == 6
    engine.gate.set()
    await asyncio.wait_for(asyncio.gather(*(j.future for j in jobs)), 10)
    assert engine.calls[1:] == ["a1", "b1", "c1", "a2", "b2", "c2"]
    assert scheduler.queued == 0


async def test_without_priority_first_chunks_wait_their_turn() -> None:
    engine = GateEngine()
    scheduler = Scheduler(engine, first_chunk_priority=False)
    await scheduler.start()
    try:
        scheduler.submit("holder", "h", 0, "hold", voice="af_heart", speed=1.0)
        await asyncio.wait_for(asyncio.to_thread(engine.busy.wait, 10), 15)
        jobs = [_submit(scheduler, "a", 1), _submit(scheduler, "a", 2), _submit(scheduler, "b", 0)]
        engine.gate.set()
        await asyncio.wait_for(asyncio.gather(*(j.future for j in jobs)), 10)
        assert engine.calls[1:] == ["a1", "b0", "a2"]
    finally:
        engine.gate.set()
        await scheduler.stop()


async def test_cancel_drops_queued_chunks_and_stops_the_running_one(
    held: tuple[Scheduler, GateEngine, Job],
) -> None:
    scheduler, engine, hold = held
    mine = [_submit(scheduler, "a", i) for i in (0, 1)]
    other = _submit(scheduler, "b", 0)
    assert scheduler.cancel("a") == 2
    assert scheduler.queued == 1 and all(j.future.cancelled() for j in mine)
    scheduler.cancel("holder", "h")  # the running job: its token stops the engine mid-synthesis
    assert hold.token.cancelled and hold.future.cancelled()
    await asyncio.wait_for(other.future, 10)
    assert engine.calls == ["b0"]  # "hold" never finished


async def test_cancel_of_one_request_keeps_the_others(held: tuple[Scheduler, GateEngine, Job]) -> None:
    scheduler, engine, _ = held
    keep = scheduler.submit("a", "keep", 0, "kept", voice="af_heart", speed=1.0)
    drop = scheduler.submit("a", "drop", 0, "dropped", voice="af_heart", speed=1.0)
    assert scheduler.cancel("a", "drop") == 1
    engine.gate.set()
    await asyncio.wait_for(keep.future, 10)
    assert drop.future.cancelled() and "dropped" not in engine.calls


async def test_admission_counts_reserved_slots() -> None:
    scheduler = Scheduler(FakeEngine(), max_queue=6)
    scheduler.reserve(3)
    scheduler.reserve(3)
    assert scheduler.reserved == 6
    with pytest.raises(Overloaded) as refused:
        scheduler.reserve(1)
    assert refused.value.retryable and refused.value.code == "overloaded"
    scheduler.release(3)
    scheduler.reserve(2)
    assert scheduler.reserved == 5
    scheduler.release(100)  # never below zero
    assert scheduler.reserved == 0


async def test_an_engine_failure_fails_one_job_not_the_worker() -> None:
    scheduler = Scheduler(FakeEngine(fail_when=lambda text: text == "bad"))
    await scheduler.start()
    try:
        bad = scheduler.submit("a", "r", 0, "bad", voice="af_heart", speed=1.0)
        good = scheduler.submit("b", "r", 0, "good", voice="af_heart", speed=1.0)
        with pytest.raises(Exception, match="injected failure"):
            await asyncio.wait_for(bad.future, 10)
        assert (await asyncio.wait_for(good.future, 10)).text == "good"
    finally:
        await scheduler.stop()
