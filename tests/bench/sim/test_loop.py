"""The virtual clock: sleeps take no wall time, the clocks read it, and a stuck simulation says so."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import pytest

from speakstream.bench.sim.loop import Deadlock, simulate


def test_an_hour_of_timers_passes_at_once_and_the_clocks_read_it() -> None:
    async def main() -> tuple[float, float, float]:
        started, monotonic = time.perf_counter(), time.monotonic()
        await asyncio.sleep(3600)
        await asyncio.wait_for(asyncio.sleep(1.5), 10)
        return time.perf_counter() - started, time.monotonic() - monotonic, asyncio.get_running_loop().time()

    real = time.perf_counter
    spent, monotonic, loop_now = simulate(main())
    assert spent == pytest.approx(3601.5) and monotonic == pytest.approx(3601.5) and loop_now > 3601.5
    assert time.perf_counter is real  # the clocks are the machine's again


def test_tasks_wake_in_the_order_of_their_timers() -> None:
    async def main() -> list[str]:
        woke: list[str] = []

        async def wake(name: str, delay: float) -> None:
            await asyncio.sleep(delay)
            woke.append(name)

        await asyncio.gather(wake("late", 2.0), wake("early", 0.5), wake("middle", 1.0))
        return woke

    assert simulate(main()) == ["early", "middle", "late"]


def test_a_simulation_that_waits_for_nothing_that_can_come_is_a_deadlock() -> None:
    async def main() -> None:
        await asyncio.Event().wait()

    with pytest.raises(Deadlock):
        simulate(main())


def test_a_deadline_closer_than_asyncio_s_clock_resolution_is_reached() -> None:
    """asyncio runs a timer due within its clock's resolution at once: the virtual clock must move
    to it, or a loop waiting for a deadline a rounding error away (admission's wait for room)
    waits at the same instant for ever."""

    async def main() -> int:
        deadline = time.perf_counter() + 0.1 + 7e-13
        await asyncio.sleep(0.1)
        tries, room = 0, asyncio.Event()
        while (left := deadline - time.perf_counter()) > 0 and tries < 1000:
            tries += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(room.wait(), left)
        return tries

    assert simulate(main()) < 1000


def test_a_simulation_that_polls_for_ever_stops_at_its_horizon() -> None:
    """A paused inference that is never resumed polls instead of blocking: no ``Deadlock`` from the
    selector, so the horizon ends it."""

    async def main() -> None:
        while True:
            await asyncio.sleep(0.002)

    with pytest.raises(Deadlock, match="60 virtual seconds"):
        simulate(main(), horizon_s=60)


def test_other_threads_keep_the_machine_s_clock_during_a_simulation() -> None:
    """Threads that earlier tests left running (a server's, an engine's) must not read virtual
    time: a server's loop would sleep for ever, or a deadline pass at once."""
    readings: list[float] = []
    asked, answered = threading.Event(), threading.Event()

    def other() -> None:
        asked.wait(10)
        readings.append(time.monotonic())
        answered.set()

    thread = threading.Thread(target=other)
    thread.start()

    async def main() -> float:
        await asyncio.sleep(3600)
        asked.set()
        answered.wait(10)
        return time.monotonic()

    before = time.monotonic()
    try:
        virtual = simulate(main())
    finally:
        thread.join()
    assert virtual == pytest.approx(4600.0) and before <= readings[0] <= time.monotonic()
