"""The scheduler with a step engine: first windows first, turns, cancel, and the load each step is handed."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import math
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest

from speakstream.engine.base import Stream, pieces
from speakstream.engine.cancel import CancelToken, SynthesisCancelled
from speakstream.engine.fake import FakeEngine
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.runtime.speed import Speed, SpeedEstimator
from speakstream.engine.windows.planner import Situation, frame_budget, sustained
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.engine.windows.runner import Runner
from speakstream.errors import EngineError
from speakstream.scheduler import Job, PlaybackClock, Scheduler
from speakstream.types import AudioPiece, Load


class StepEngine(FakeEngine):
    """Every chunk is ``windows`` pieces and every step is logged as ``text:i``; the chunk "hold"
    waits while its text is read until ``gate`` opens, so a queue can build up behind it."""

    def __init__(self, windows: int = 2, hold_s: float = 0.0) -> None:
        super().__init__(fail_when=lambda text: text == "bad")
        self.windows = windows
        self.hold_s = hold_s
        """Each chunk's first piece is to be held that long before it is sent (an opening's start-up buffer)."""
        self.gate = threading.Event()
        self.second_gate = threading.Event()
        """Holds the second window of "hold" while cleared (set by default)."""
        self.second_gate.set()
        self.opening_gate = threading.Event()
        """Holds the first window of a chunk whose text starts with "slow" while cleared."""
        self.opening_gate.set()
        self.busy = threading.Event()
        self.log: list[str] = []
        self.ahead: list[float | None] = []
        """What the load said the listener had buffered before each window (None without a clock)."""
        self.in_flight: list[int] = []
        """What the load said of the windows in flight at each window."""
        self.replying: list[int] = []
        """What the load said of the replies with work at each window."""
        self.crowding: dict[str, bool] = {}
        """Each chunk's ``crowded`` as its first window was planned, by its text."""
        self.reading: dict[str, int] = {}
        """The windows in flight the load said as each chunk's text was read, by its text."""

    def stream(
        self,
        text: str,
        *,
        voice: str = "af_heart",
        speed: float = 1.0,
        cancel: CancelToken | None = None,
        opening: bool = True,
        normalized: bool = True,
    ) -> Stream:
        return StepStream(self, text, cancel)


class StepStream:
    """One chunk of a ``StepEngine``: reading its text (where "hold" waits for the gate), then its
    windows, each recording the load it was handed."""

    def __init__(self, engine: StepEngine, text: str, cancel: CancelToken | None) -> None:
        self.engine, self.text, self.cancel = engine, text, cancel
        self.prepared, self.made = False, 0

    def prepare(self, load: Load) -> None:
        self.engine.reading[self.text] = load.in_flight
        if self.engine.fail_when and self.engine.fail_when(self.text):
            raise EngineError("injected failure")
        if self.text == "hold":
            self._hold(self.engine.gate)
        self.prepared = True

    def step(self, load: Load) -> AudioPiece | None:
        engine, i = self.engine, self.made
        if i == engine.windows:
            return None
        if self.text == "hold" and i > 0:
            self._hold(engine.second_gate)
        if i == 0:  # as the planner reads it: when it plans the opening window
            engine.crowding[self.text] = load.crowded
        engine.log.append(f"{self.text}:{i}")
        if i == 0 and self.text.startswith("slow"):
            self._hold(engine.opening_gate)
        engine.ahead.append(load.buffered_s)
        engine.in_flight.append(load.in_flight)
        engine.replying.append(load.replies)
        self.made += 1
        return AudioPiece(np.zeros(240, np.float32), i, i * 0.01, engine.windows * 0.01, (), i == engine.windows - 1)

    def held_s(self, load: Load) -> float:
        return self.engine.hold_s if self.made == 1 and self.engine.windows > 1 else 0.0

    def _hold(self, gate: threading.Event) -> None:
        self.engine.busy.set()
        while not gate.wait(0.005):
            if self.cancel is not None:
                self.cancel.check()


async def taken(job: Job) -> list[AudioPiece]:
    return [p async for p in job.stream()]


@contextlib.asynccontextmanager
async def holding(**options: int) -> AsyncIterator[tuple[Scheduler, StepEngine, Job]]:
    """A scheduler whose one worker is busy with the first window of 'hold' until the gate opens."""
    engine = StepEngine()
    scheduler = Scheduler(engine, max_queue=16, **options)
    await scheduler.start()
    hold = scheduler.submit("holder", "h", 0, "hold", voice="af_heart", speed=1.0)
    try:
        await asyncio.wait_for(asyncio.to_thread(engine.busy.wait, 10), 15)
        yield scheduler, engine, hold
    finally:
        engine.gate.set()
        engine.second_gate.set()
        await scheduler.stop()


@pytest.fixture
async def held() -> AsyncIterator[tuple[Scheduler, StepEngine, Job]]:
    async with holding() as scheduler_engine_hold:
        yield scheduler_engine_hold


def _submit(scheduler: Scheduler, session: str, index: int) -> Job:
    return scheduler.submit(session, f"{session}-r", index, f"{session}{index}", voice="af_heart", speed=1.0)


async def test_a_first_window_jumps_the_queue(held: tuple[Scheduler, StepEngine, Job]) -> None:
    scheduler, engine, hold = held
    later = _submit(scheduler, "a", 1)
    first = _submit(scheduler, "b", 0)
    engine.gate.set()
    await asyncio.wait_for(asyncio.gather(*(taken(j) for j in (hold, later, first))), 10)
    assert engine.log == ["hold:0", "b0:0", "a1:0", "hold:1", "b0:1", "a1:1"]


async def test_sessions_take_turns_window_by_window_and_chunks_keep_their_order(
    held: tuple[Scheduler, StepEngine, Job],
) -> None:
    scheduler, engine, hold = held
    jobs = [_submit(scheduler, "a", 1), _submit(scheduler, "a", 2), _submit(scheduler, "b", 1)]
    assert scheduler.queued == 4
    engine.gate.set()
    results = await asyncio.wait_for(asyncio.gather(*(taken(j) for j in (hold, *jobs))), 10)
    assert engine.log == ["hold:0", "a1:0", "b1:0", "hold:1", "a1:1", "b1:1", "a2:0", "a2:1"]
    assert all([p.index for p in r] == [0, 1] and r[-1].last for r in results)
    assert scheduler.queued == 0


async def test_a_held_opening_is_sent_after_its_hold_and_its_listener_starts_then() -> None:
    """A piece to be held is sent ``hold_s`` after it was made, and the listener's clock starts
    then (its buffer counts the hold), unless the chunk's next piece is made first: then at once."""
    engine = StepEngine(hold_s=0.3)
    engine.gate.set()
    engine.second_gate.clear()  # the opening's next window is not made meanwhile
    scheduler = Scheduler(engine, max_queue=16)
    await scheduler.start()
    try:
        clock = PlaybackClock()
        asked = asyncio.get_running_loop().time()
        job = scheduler.submit("s", "r", 0, "hold", voice="af_heart", speed=1.0, clock=clock)
        pieces = job.stream()
        await asyncio.wait_for(anext(pieces), 10)
        assert asyncio.get_running_loop().time() - asked >= 0.3
        assert clock.started_at is not None and clock.started_at >= job.started_at + 0.3  # type: ignore[operator]
        engine.second_gate.set()
        assert [p.index async for p in pieces] == [1]
        engine.hold_s = 60.0  # the next piece comes long before that
        again = PlaybackClock()
        job = scheduler.submit("s", "r2", 0, "next", voice="af_heart", speed=1.0, clock=again)
        assert [p.index for p in await asyncio.wait_for(taken(job), 10)] == [0, 1]
        assert again.started_at is not None and again.started_at < asked + 10
    finally:
        await scheduler.stop()


async def test_openings_are_crowded_when_more_replies_wait_for_one_than_the_workers() -> None:
    engine = StepEngine(windows=1)
    scheduler = Scheduler(engine, lanes=2, max_queue=16)
    await scheduler.start()
    try:
        pair = [_submit(scheduler, s, 0) for s in "ab"]  # two at once on two workers: nobody waits
        await asyncio.wait_for(asyncio.gather(*(taken(j) for j in pair)), 10)
        four = [_submit(scheduler, s, 0) for s in "cdef"]  # the first two delay the last two
        later = [_submit(scheduler, s, 1) for s in "cdef"]
        await asyncio.wait_for(asyncio.gather(*(taken(j) for j in [*four, *later])), 10)
    finally:
        await scheduler.stop()
    assert engine.crowding == {
        **{f"{s}0": False for s in "ab"},
        **{f"{s}0": True for s in "cdef"},
        **{f"{s}1": False for s in "cdef"},  # a later chunk: its listener is already hearing
    }


async def test_an_opening_is_crowded_by_the_replies_that_come_while_its_text_is_read() -> None:
    async with holding(lanes=2) as (scheduler, engine, hold):  # "hold" is the only one when queued
        engine.opening_gate.clear()  # the others stay in (or wait for) their first windows
        others = [_submit(scheduler, f"slow{s}", 0) for s in "cde"]
        engine.gate.set()  # its front made: it sizes its opening with three more not yet heard
        await asyncio.wait_for(anext(hold.stream()), 10)
        engine.opening_gate.set()
        await asyncio.wait_for(asyncio.gather(*(taken(j) for j in (hold, *others))), 10)
    assert engine.crowding == {"hold": True, **{f"slow{s}0": True for s in "cde"}}


async def test_an_opening_that_finds_the_others_speaking_is_not_crowded() -> None:
    async with holding() as (scheduler, engine, hold):
        engine.second_gate.clear()  # "hold" keeps the worker in its second window
        engine.gate.set()
        await asyncio.wait_for(anext(hold.stream()), 10)  # its listener is hearing it
        first = _submit(scheduler, "c", 0)
        engine.second_gate.set()
        await asyncio.wait_for(asyncio.gather(taken(hold), taken(first)), 10)
    assert engine.crowding == {"hold": False, "c0": False}


async def test_without_priority_first_windows_wait_their_turn() -> None:
    async with holding(first_chunk_priority=False) as (scheduler, engine, hold):
        jobs = [_submit(scheduler, "a", 1), _submit(scheduler, "b", 0)]
        engine.gate.set()
        await asyncio.wait_for(asyncio.gather(*(taken(j) for j in (hold, *jobs))), 10)
        assert engine.log == ["hold:0", "a1:0", "b0:0", "hold:1", "a1:1", "b0:1"]


async def test_cancel_drops_queued_chunks_and_stops_the_running_one(
    held: tuple[Scheduler, StepEngine, Job],
) -> None:
    scheduler, engine, hold = held
    mine = [_submit(scheduler, "a", i) for i in (0, 1)]
    other = _submit(scheduler, "b", 0)
    assert scheduler.cancel("a") == 2
    assert scheduler.queued == 2
    for job in mine:
        with pytest.raises(SynthesisCancelled):
            await asyncio.wait_for(taken(job), 10)
    scheduler.cancel("holder", "h")  # the running window: its token stops the engine mid-window
    assert hold.token.cancelled
    with pytest.raises(SynthesisCancelled):
        await asyncio.wait_for(taken(hold), 10)
    assert len(await asyncio.wait_for(taken(other), 10)) == 2
    assert engine.log == ["b0:0", "b0:1"]  # nothing of the cancelled chunks was made


async def test_cancel_between_windows_makes_nothing_more(held: tuple[Scheduler, StepEngine, Job]) -> None:
    scheduler, engine, hold = held
    engine.second_gate.clear()  # "hold" keeps the worker in its second window
    job = _submit(scheduler, "a", 0)
    engine.gate.set()
    first = await asyncio.wait_for(anext(job.stream()), 10)
    assert first.index == 0 and engine.log == ["hold:0", "a0:0"]
    scheduler.cancel("a")  # "a0" waits between its windows
    engine.second_gate.set()
    await asyncio.wait_for(taken(hold), 10)
    with pytest.raises(SynthesisCancelled):
        await asyncio.wait_for(taken(job), 10)
    assert "a0:1" not in engine.log


async def test_cancel_of_one_request_keeps_the_others(held: tuple[Scheduler, StepEngine, Job]) -> None:
    scheduler, engine, _ = held
    keep = scheduler.submit("a", "keep", 0, "kept", voice="af_heart", speed=1.0)
    drop = scheduler.submit("a", "drop", 0, "dropped", voice="af_heart", speed=1.0)
    assert scheduler.cancel("a", "drop") == 1
    engine.gate.set()
    assert len(await asyncio.wait_for(taken(keep), 10)) == 2
    with pytest.raises(SynthesisCancelled):
        await asyncio.wait_for(taken(drop), 10)
    assert not any(step.startswith("dropped") for step in engine.log)


async def test_an_engine_failure_fails_one_job_not_the_worker() -> None:
    scheduler = Scheduler(StepEngine())
    await scheduler.start()
    try:
        bad = scheduler.submit("a", "r", 0, "bad", voice="af_heart", speed=1.0)
        good = scheduler.submit("b", "r", 0, "good", voice="af_heart", speed=1.0)
        with pytest.raises(EngineError, match="injected failure"):
            await asyncio.wait_for(taken(bad), 10)
        assert len(await asyncio.wait_for(taken(good), 10)) == 2
    finally:
        await scheduler.stop()


async def test_a_cancelled_step_s_engine_time_reaches_on_done() -> None:
    """A step that fails or is cancelled spent the engine's time all the same: ``on_done`` hears
    it (``Job.failed_s``), so the engine's seconds on /metrics count it too."""
    engine = StepEngine()
    done: list[tuple[AudioPiece | None, float]] = []
    scheduler = Scheduler(engine, on_done=lambda job, piece: done.append((piece, job.failed_s)))
    await scheduler.start()
    try:
        hold = scheduler.submit("holder", "h", 0, "hold", voice="af_heart", speed=1.0)
        await asyncio.wait_for(asyncio.to_thread(engine.busy.wait, 10), 15)
        await asyncio.sleep(0.2)  # "compute" in its first window
        scheduler.cancel("holder", "h")
        with pytest.raises(SynthesisCancelled):
            await asyncio.wait_for(taken(hold), 10)
    finally:
        engine.gate.set()
        await scheduler.stop()
    [(piece, spent)] = done
    assert piece is None and spent >= 0.2


class CausedEngine(FakeEngine):
    """Fails as ONNX Runtime does: "terminated" as a cancel stopped through its terminate flag,
    "broken" as a fault, each with the library's error as the cause."""

    def synthesize(self, text: str, **_: object) -> Any:
        if text == "terminated":
            raise SynthesisCancelled("synthesis cancelled") from RuntimeError("Fail: terminate flag is set")
        raise EngineError("synthesis failed") from RuntimeError("Fail: bad input")


async def test_a_cancel_is_not_logged_as_a_warning_and_a_fault_is(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="speakstream.scheduler")
    scheduler = Scheduler(CausedEngine())
    await scheduler.start()
    try:
        for text, error in (("terminated", SynthesisCancelled), ("broken", EngineError)):
            with pytest.raises(error):
                await asyncio.wait_for(taken(scheduler.submit("a", text, 0, text, voice="af_heart", speed=1.0)), 10)
    finally:
        await scheduler.stop()
    levels = {r.getMessage().split(":")[0]: r.levelno for r in caplog.records}
    assert levels == {"terminated": logging.DEBUG, "broken": logging.WARNING}


async def test_the_engine_sizes_windows_by_the_reply_s_playback_clock() -> None:
    """A chunk submitted with its reply's clock tells the engine how much audio its listener has
    buffered: nothing before the first piece, at most what was made after it."""
    engine = StepEngine(windows=3)
    scheduler = Scheduler(engine)
    await scheduler.start()
    try:
        clock = PlaybackClock()
        first = scheduler.submit("a", "r", 0, "one", voice="af_heart", speed=1.0, clock=clock)
        await asyncio.wait_for(taken(first), 10)
        second = scheduler.submit("a", "r", 1, "two", voice="af_heart", speed=1.0, clock=clock)
        await asyncio.wait_for(taken(second), 10)
        unclocked = scheduler.submit("b", "s", 0, "three", voice="af_heart", speed=1.0)
        await asyncio.wait_for(taken(unclocked), 10)
    finally:
        await scheduler.stop()
    made = [0.0, 0.01, 0.02, 0.03, 0.04, 0.05]  # audio made before each of the six windows
    assert engine.ahead[0] == 0.0
    assert all(0.0 <= a <= m for a, m in zip(engine.ahead[:6], made, strict=True) if a is not None)
    assert clock.audio_s == pytest.approx(0.06)
    assert engine.ahead[6:] == [None, None, None]


def test_the_load_handed_over_sizes_the_window_to_the_listener_and_the_turns() -> None:
    """The load the scheduler hands over says how far the listener is ahead and how many replies
    take turns: the planner's budget follows."""
    scheduler = Scheduler(StepEngine())
    fresh, ahead = PlaybackClock(), PlaybackClock()
    ahead.add(1000.0)
    policy = WindowPolicy()

    def budget(clock: PlaybackClock, session: str) -> float | None:
        job = Job(session, "r", 1, "text", "af_heart", 1.0, clock=clock)
        load = scheduler.load(job)
        now = Situation(Speed.fixed(0.01), load, load.buffered_at(load.taken_at))
        frames = frame_budget(policy, now)[0]
        return None if frames is None else frames * 0.01  # back to seconds of compute

    alone = budget(fresh, "a")
    assert alone == sustained(policy, 0.0, 0.01) * 0.01  # nothing buffered: a window that keeps up
    assert 0.0 < (budget(ahead, "a") or 0.0) <= 1000.0
    for session in "abc":  # the scheduler is not started: they wait in the rotation
        _submit(scheduler, session, 0)
    # 3 replies a lane at 10 ms a frame: slower than real time, so the largest window, however far ahead
    assert budget(fresh, "a") == budget(ahead, "a") == math.inf


def _client_submit(scheduler: Scheduler, client: str, session: str, index: int) -> Job:
    text = f"{session}{index}"
    return scheduler.submit(session, f"{session}-r", index, text, voice="af_heart", speed=1.0, client=client)


async def test_clients_take_turns_before_their_sessions_do(held: tuple[Scheduler, StepEngine, Job]) -> None:
    """Client x has three sessions, client y one: y gets every other turn, not every fourth."""
    scheduler, engine, hold = held
    jobs = [_client_submit(scheduler, "x", s, 1) for s in "abc"] + [_client_submit(scheduler, "y", "d", 1)]
    engine.gate.set()
    await asyncio.wait_for(asyncio.gather(*(taken(j) for j in (hold, *jobs))), 10)
    assert engine.log[:6] == ["hold:0", "a1:0", "d1:0", "hold:1", "b1:0", "d1:1"]


async def test_first_windows_are_shared_out_by_client(held: tuple[Scheduler, StepEngine, Job]) -> None:
    """Three replies opened by x before y's one: y's first window comes second, not fourth."""
    scheduler, engine, hold = held
    jobs = [_client_submit(scheduler, "x", s, 0) for s in "abc"] + [_client_submit(scheduler, "y", "d", 0)]
    engine.gate.set()
    await asyncio.wait_for(asyncio.gather(*(taken(j) for j in (hold, *jobs))), 10)
    firsts = [step for step in engine.log if step.endswith("0:0")]
    assert firsts == ["a0:0", "d0:0", "b0:0", "c0:0"]


async def _hold_in_second_window(scheduler: Scheduler, engine: StepEngine) -> None:
    """The one worker goes on to the second window of "hold" and stays in it."""
    engine.second_gate.clear()
    engine.busy.clear()
    engine.gate.set()
    await asyncio.wait_for(asyncio.to_thread(engine.busy.wait, 10), 15)


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.005)


async def test_a_first_window_pauses_a_later_window_instead_of_waiting(
    held: tuple[Scheduler, StepEngine, Job],
) -> None:
    scheduler, engine, hold = held
    await _hold_in_second_window(scheduler, engine)
    job = _submit(scheduler, "b", 0)
    first = await asyncio.wait_for(anext(job.stream()), 10)  # made while "hold" is still in its window
    assert first.index == 0
    assert engine.log == ["hold:0", "b0:0"] and hold.preempted  # "hold" was paused for it ...
    await asyncio.wait_for(_until(lambda: not hold.token.paused), 5)  # ... and resumed once no first window waits
    engine.second_gate.set()
    await asyncio.wait_for(asyncio.gather(taken(hold), taken(job)), 10)
    assert engine.log == ["hold:0", "b0:0", "hold:1", "b0:1"]  # b's later window waits its turn


async def test_with_two_workers_a_first_window_still_pauses_a_later_one_rather_than_share_the_cores() -> None:
    async with holding(lanes=2) as (scheduler, engine, hold):
        await _hold_in_second_window(scheduler, engine)  # one worker in "hold"'s window, one free
        job = _submit(scheduler, "b", 0)
        first = await asyncio.wait_for(anext(job.stream()), 10)
        assert first.index == 0 and engine.log[:2] == ["hold:0", "b0:0"] and hold.preempted
        engine.second_gate.set()  # (b's later window may run beside "hold": the other worker is free)
        await asyncio.wait_for(asyncio.gather(taken(hold), taken(job)), 10)
        assert sorted(engine.log) == ["b0:0", "b0:1", "hold:0", "hold:1"]


async def test_with_two_workers_two_sessions_later_windows_run_at_once() -> None:
    async with holding(lanes=2) as (scheduler, engine, hold):
        await _hold_in_second_window(scheduler, engine)
        later = _submit(scheduler, "a", 1)  # not a first window: the free worker takes it beside "hold"
        await asyncio.wait_for(taken(later), 10)
        assert engine.log == ["hold:0", "a1:0", "a1:1"] and not hold.preempted
        engine.second_gate.set()
        await asyncio.wait_for(taken(hold), 10)


async def test_with_two_workers_a_first_window_waits_for_a_later_one_it_may_not_pause() -> None:
    async with holding(lanes=2, preempt=False) as (scheduler, engine, hold):
        await _hold_in_second_window(scheduler, engine)
        first = _submit(scheduler, "b", 0)
        later = _submit(scheduler, "a", 1)  # and no later window starts while a first one waits
        await asyncio.sleep(0.1)
        assert engine.log == ["hold:0"]
        engine.second_gate.set()
        await asyncio.wait_for(asyncio.gather(taken(hold), taken(first), taken(later)), 10)
        assert engine.log[:3] == ["hold:0", "hold:1", "b0:0"]


async def test_with_two_workers_first_windows_run_together_and_later_ones_wait_for_them() -> None:
    engine = StepEngine()
    engine.gate.clear()
    scheduler = Scheduler(engine, max_queue=16, lanes=2)
    await scheduler.start()
    try:
        hold = scheduler.submit("holder", "h", 0, "hold", voice="af_heart", speed=1.0)  # a first window, held
        await asyncio.wait_for(asyncio.to_thread(engine.busy.wait, 10), 15)
        later = _submit(scheduler, "a", 1)
        first = _submit(scheduler, "b", 0)
        await asyncio.wait_for(anext(first.stream()), 10)  # beside the held first window
        await asyncio.sleep(0.1)
        assert engine.log == ["b0:0"]  # the later window waits while a first window runs
        engine.gate.set()
        await asyncio.wait_for(asyncio.gather(taken(hold), taken(first), taken(later)), 10)
        assert engine.log.index("a1:0") > engine.log.index("hold:0")
    finally:
        engine.gate.set()
        await scheduler.stop()


async def test_a_listener_running_dry_meanwhile_wakes_a_worker_an_opening_kept_idle() -> None:
    """No event marks a listener's buffer draining: while an opening reads a long text, the free
    worker looks again when the listener starts running dry, and its window runs beside it."""
    engine = StepEngine()
    engine.gate.clear()
    scheduler = Scheduler(engine, max_queue=16, lanes=2)
    scheduler.priority.first_window_s = 0.05
    await scheduler.start()
    try:
        hold = scheduler.submit("holder", "h", 0, "hold", voice="af_heart", speed=1.0)  # an opening, reading
        await asyncio.wait_for(asyncio.to_thread(engine.busy.wait, 10), 15)
        clock = PlaybackClock()
        clock.add(1.0)  # 1 s ahead: not running dry (under 0.1 s) for 0.9 s
        later = scheduler.submit("a", "a-r", 1, "a1", voice="af_heart", speed=1.0, clock=clock)
        await asyncio.sleep(0.1)
        assert engine.log == []  # the opening has the cores
        await asyncio.wait_for(anext(later.stream()), 5)  # no event came, the opening still reads
        assert engine.log == ["a1:0"] and not engine.gate.is_set()
        engine.gate.set()
        await asyncio.wait_for(asyncio.gather(taken(hold), taken(later)), 10)
    finally:
        engine.gate.set()
        await scheduler.stop()


async def test_the_engine_is_told_the_windows_in_flight_and_the_replies_with_work() -> None:
    """Windows in flight: two dispatched together share the cores from the start. Replies with
    work: a lone one may take every lane for its long windows (``WindowPolicy.split_frames``)."""
    engine = StepEngine()
    scheduler = Scheduler(engine, max_queue=16, lanes=2)
    await scheduler.start()
    try:
        await asyncio.wait_for(taken(_submit(scheduler, "a", 0)), 10)
        assert engine.in_flight == [1, 1] and engine.replying == [1, 1]  # alone: every core
        hold = scheduler.submit("holder", "h", 0, "hold", voice="af_heart", speed=1.0)
        await asyncio.wait_for(asyncio.to_thread(engine.busy.wait, 10), 15)
        beside = _submit(scheduler, "b", 0)  # a first window beside the held first window
        await asyncio.wait_for(anext(beside.stream()), 10)
        assert engine.log[-1] == "b0:0" and engine.in_flight[-1] == 2 and engine.replying[-1] == 2
        engine.gate.set()
        await asyncio.wait_for(asyncio.gather(taken(hold), taken(beside)), 10)
        assert scheduler.turns.replies == 0  # done: nothing queued
    finally:
        engine.gate.set()
        await scheduler.stop()


async def test_a_paused_window_is_not_in_flight(held: tuple[Scheduler, StepEngine, Job]) -> None:
    scheduler, engine, hold = held
    await _hold_in_second_window(scheduler, engine)
    first = _submit(scheduler, "b", 0)
    await asyncio.wait_for(anext(first.stream()), 10)
    assert hold.preempted  # its window was paused for this one, which has the cores to itself:
    assert engine.in_flight[engine.log.index("b0:0")] == 1
    engine.second_gate.set()
    await asyncio.wait_for(asyncio.gather(taken(hold), taken(first)), 10)


@pytest.mark.parametrize("beside", [True, False])
async def test_a_window_is_paused_at_most_once(held: tuple[Scheduler, StepEngine, Job], beside: bool) -> None:
    """Paused once, a window is not paused again: a reply that comes then opens beside it on the
    urgent lane (``Priority.beside``), or, without that rule, waits for it to end."""
    scheduler, engine, hold = held
    scheduler.priority.beside = beside
    await _hold_in_second_window(scheduler, engine)
    b = _submit(scheduler, "b", 0)
    await asyncio.wait_for(anext(b.stream()), 10)
    c = _submit(scheduler, "c", 0)
    if beside:
        await asyncio.wait_for(_until(lambda: "c0:0" in engine.log), 10)
    else:
        await asyncio.sleep(0.1)
        assert "c0:0" not in engine.log
    assert hold.preempted and not hold.token.paused  # not paused again
    engine.second_gate.set()
    await asyncio.wait_for(asyncio.gather(taken(hold), taken(b), taken(c)), 10)
    assert (engine.log.index("c0:0") < engine.log.index("hold:1")) == beside
    assert not hold.preempted


async def test_openings_that_come_during_a_pause_do_not_prolong_it(held: tuple[Scheduler, StepEngine, Job]) -> None:
    """A client opening reply after reply cannot keep another listener's window paused: the
    pause covers the first windows queued when it began, then the paused window goes on."""
    scheduler, engine, hold = held
    resume = hold.token.resume

    def logged_resume() -> None:
        engine.log.append("hold resumed")
        resume()

    hold.token.resume = logged_resume  # type: ignore[method-assign]
    await _hold_in_second_window(scheduler, engine)
    engine.opening_gate.clear()
    b = _submit(scheduler, "slowb", 0)
    await asyncio.wait_for(_until(lambda: "slowb0:0" in engine.log), 10)  # on the urgent lane, "hold" paused
    c = _submit(scheduler, "c", 0)  # came during the pause
    engine.opening_gate.set()
    await asyncio.wait_for(_until(lambda: not hold.token.paused), 5)
    engine.second_gate.set()
    await asyncio.wait_for(asyncio.gather(taken(hold), taken(b), taken(c)), 10)
    # the paused window went on when the opening it was paused for ended; "c" ran after (beside it,
    # or once it ended), never in a pause of its own making
    assert engine.log.index("slowb0:0") < engine.log.index("hold resumed") < engine.log.index("c0:0")
    assert engine.log.count("hold resumed") == 1


async def test_without_preemption_a_first_window_waits_for_the_running_one() -> None:
    async with holding(preempt=False) as (scheduler, engine, hold):
        await _hold_in_second_window(scheduler, engine)
        job = _submit(scheduler, "b", 0)
        await asyncio.sleep(0.1)
        assert engine.log == ["hold:0"] and not hold.token.paused
        engine.second_gate.set()
        await asyncio.wait_for(asyncio.gather(taken(hold), taken(job)), 10)
        assert engine.log == ["hold:0", "hold:1", "b0:0", "b0:1"]


async def test_a_paused_fake_inference_runs_again_after_the_first_window() -> None:
    """The fake engine, like ONNX Runtime, drops a paused inference and runs it again: the
    paused chunk still comes out whole, after the first window."""
    engine = FakeEngine(seconds_per_char=0.01)
    scheduler = Scheduler(engine)
    await scheduler.start()
    try:
        long = scheduler.submit("a", "a-r", 1, "x" * 40, voice="af_heart", speed=1.0)  # 0.4 s of "compute"
        await asyncio.wait_for(_until(lambda: long.running), 5)
        short = scheduler.submit("b", "b-r", 0, "hi", voice="af_heart", speed=1.0)
        short_pieces = await asyncio.wait_for(taken(short), 10)
        assert long.running and long.made == 0  # the first window came first
        long_pieces = await asyncio.wait_for(taken(long), 10)
        assert sum(len(p.samples) for p in long_pieces) == len(engine.synthesize("x" * 40).samples)
        assert short_pieces[-1].last and long_pieces[-1].last
    finally:
        await scheduler.stop()


class _SteadySpeed(SpeedEstimator):
    """The decoder's speed as read once: windows planned by it do not follow the machine's drift."""

    def __init__(self, speed: Speed) -> None:
        super().__init__(speed.recent_s)
        self._speed = speed

    def measured(self, seconds: float, frames: int, *, alone: bool, still_alone: bool) -> None:
        pass


def _halves(piece: AudioPiece) -> object:
    return next(dict(step.attributes)["halves"] for step in piece.steps if "halves" in dict(step.attributes))


def _snr_db(got: np.ndarray[Any, Any], want: np.ndarray[Any, Any]) -> float:
    assert len(got) == len(want)
    error = float(np.sum((got.astype(np.float64) - want) ** 2))
    return math.inf if error == 0 else 10 * math.log10(float(np.sum(want.astype(np.float64) ** 2)) / error)


def _steady(kokoro: KokoroEngine) -> KokoroEngine:
    """The engine with a steady speed, so that a reference and a run plan the same windows (under
    load a run measured a slower decoder and cut the chunk into more windows, whose audio differs)."""
    assert kokoro.runner is not None
    steady = copy.copy(kokoro)
    steady.runner = Runner(kokoro.runner.model, _SteadySpeed(kokoro.runner.speed.reading()))
    return steady


@pytest.mark.model
async def test_with_the_real_engine_a_first_window_comes_while_a_long_window_is_paused(kokoro: KokoroEngine) -> None:
    """A later chunk's 4 s window is running when another reply starts: its first window comes
    before that window ends, and the paused window, run again, gives the same audio."""
    text = "Your flight to Lisbon leaves tomorrow at nine forty from gate twelve, and boarding starts early."
    steady = _steady(kokoro)
    alone = list(pieces(steady.stream(text, voice="af_heart", opening=False)))  # long windows in halves at once
    beside = list(pieces(steady.stream(text, voice="af_heart", opening=False), Load(lanes=1, replies=2)))
    scheduler = Scheduler(steady)
    await scheduler.start()
    try:
        long = scheduler.submit("a", "a-r", 1, text, voice="af_heart", speed=1.0)
        await asyncio.wait_for(_until(lambda: long.running), 10)
        await asyncio.sleep(0.3)  # inside its first window (about 1.5 s of compute)
        short = scheduler.submit("b", "b-r", 0, "Hello there.", voice="af_heart", speed=1.0)
        first = await asyncio.wait_for(anext(short.stream()), 30)
        assert first.index == 0 and long.made == 0 and long.preempted
        rest = await asyncio.wait_for(taken(long), 60)
        assert len(rest) == len(alone) == len(beside)
        for got, *references in zip(rest, alone, beside, strict=True):  # the same window, in as many halves
            want = next(r for r in references if _halves(r) == _halves(got))  # as planned: alone or beside
            assert _snr_db(got.samples, want.samples) > 60  # another copy rounds apart: 92 dB; another plan: 3 dB
        await asyncio.wait_for(taken(short), 30)
    finally:
        await scheduler.stop()


async def test_windows_handed_out_together_each_count_the_other() -> None:
    """Two workers woken together (a first window ends, two later chunks were waiting for it): each
    one's load counts both, so both take a narrow copy at once (counted alone, the first would
    take every core and three threads would share two)."""
    async with holding(lanes=2) as (scheduler, engine, hold):
        later = [_submit(scheduler, s, 1) for s in "cd"]  # they wait: a first window runs
        await asyncio.sleep(0.05)
        assert not engine.reading.keys() - {"hold"}
        engine.gate.set()
        await asyncio.wait_for(asyncio.gather(*(taken(j) for j in [hold, *later])), 10)
    assert engine.reading["c1"] == engine.reading["d1"] == 2


async def test_a_turn_is_handed_the_least_another_playing_listener_has_buffered() -> None:
    """``Load.others_buffered_s``: the other replies' listeners that are hearing their reply, the
    least buffered of them; this reply's own listener and unheard replies do not count."""
    scheduler = Scheduler(FakeEngine(), lanes=2, max_queue=16)
    clocks = {s: PlaybackClock(now=lambda: 10.0) for s in "abc"}
    clocks["a"].add(2.0)
    clocks["b"].add(0.7)  # c has made nothing yet: not playing
    jobs = {s: scheduler.submit(s, f"{s}-r", 1, "Hello.", voice="af_heart", speed=1.0, clock=clocks[s]) for s in "abc"}
    try:
        assert scheduler.load(jobs["a"]).others_buffered_s == pytest.approx(0.7)
        assert scheduler.load(jobs["b"]).others_buffered_s == pytest.approx(2.0)
        assert scheduler.load(jobs["c"]).others_buffered_s == pytest.approx(0.7)
        scheduler.cancel("a")
        scheduler.cancel("c")
        assert scheduler.load(jobs["b"]).others_buffered_s is None
    finally:
        await scheduler.stop()
