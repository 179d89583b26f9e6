"""The capacity: estimated by the engine until chunks that ran beside others measure it."""

from __future__ import annotations

import asyncio

import pytest

from speakstream.engine.fake import FakeEngine
from speakstream.engine.runtime.speed import SMOOTHING
from speakstream.scheduler import Scheduler
from speakstream.scheduler.capacity import Capacity


def test_the_estimate_stands_until_a_chunk_measures_the_lanes_rate() -> None:
    capacity = Capacity(2, lambda: 7.0)
    assert capacity.audio_per_s() == (7.0, False)
    capacity.chunk_done(0.5, 0.1)  # too short to measure
    assert capacity.audio_per_s() == (7.0, False)
    capacity.chunk_done(3.0, 1.0)  # 3 audio seconds a second on one lane
    assert capacity.audio_per_s() == (6.0, True)
    capacity.chunk_done(2.0, 1.0)
    assert capacity.audio_per_s()[0] == pytest.approx(2 * (3.0 + SMOOTHING * (2.0 - 3.0)))


def test_what_the_engine_delivered_with_every_lane_busy_is_the_capacity() -> None:
    """Audio made over spans of wall time in which every lane had work replaces the lanes' own
    rate, which leaves the moments between turns out; a piece made with a lane idle ends a span
    unsampled."""
    capacity = Capacity(2, lambda: 7.0)
    capacity.chunk_done(3.0, 1.0)
    assert capacity.audio_per_s() == (6.0, True)
    capacity.made(1.0, 10.0, saturated=True)  # opens a span: its audio was made before it
    capacity.made(1.0, 11.0, saturated=True)
    capacity.made(5.0, 11.5, saturated=False)  # a lane idle: no sample
    assert capacity.audio_per_s() == (6.0, True)
    capacity.made(1.0, 20.0, saturated=True)
    capacity.made(3.0, 21.0, saturated=True)
    capacity.made(3.0, 22.0, saturated=True)  # 6 audio seconds in 2 wall seconds
    assert capacity.audio_per_s() == (3.0, True)


async def test_chunks_made_beside_others_measure_the_capacity() -> None:
    engine = FakeEngine(seconds_per_char=0.005)  # 0.06 s of audio a character: 12x real time
    scheduler = Scheduler(engine, lanes=2)
    await scheduler.start()
    try:
        alone = scheduler.submit("a", "a-r", 0, "A sentence long enough to measure.", voice="af_heart", speed=1.0)
        await asyncio.wait_for(_drain(alone), 10)
        assert not scheduler.reading().measured  # it ran alone: nothing measured
        both = [
            scheduler.submit(s, f"{s}-r", 0, "Another sentence long enough to measure.", voice="af_heart", speed=1.0)
            for s in "bc"
        ]
        await asyncio.wait_for(asyncio.gather(*(_drain(j) for j in both)), 10)
    finally:
        await scheduler.stop()
    reading = scheduler.reading()
    assert reading.measured and 5.0 < reading.capacity < 2 * 12.0 + 1e-9


async def _drain(job: object) -> None:
    async for _ in job.stream():  # type: ignore[attr-defined]
        pass
