"""The simulated cores: an inference alone takes its cost, inferences beside each other share the
cores, and a token stops or pauses one as ONNX Runtime's terminate flag would."""

from __future__ import annotations

import asyncio

import pytest

from speakstream.bench.sim.cpu import Cpu, Work
from speakstream.bench.sim.loop import simulate
from speakstream.engine.cancel import CancelToken, SynthesisCancelled


def _times(
    *works: tuple[float, float, float, bool], cores: int = 2, lanes: int = 2, contention: float = 0.0
) -> list[float]:
    """When each inference ends: (start, wide cost, narrow cost, shared) each."""

    async def main() -> list[float]:
        cpu = Cpu(cores, lanes, contention)
        loop = asyncio.get_running_loop()
        begun = loop.time()

        async def one(start: float, wide: float, narrow: float, shared: bool) -> float:
            await asyncio.sleep(start)
            await cpu.run(Work(wide, narrow, "decoder", None, shared))
            return loop.time() - begun

        return list(await asyncio.gather(*(one(*w) for w in works)))

    return simulate(main())


def test_an_inference_alone_takes_its_wide_cost_and_one_handed_out_beside_others_its_narrow() -> None:
    assert _times((0.0, 0.2, 0.3, False)) == [pytest.approx(0.2)]
    assert _times((0.0, 0.2, 0.3, True)) == [pytest.approx(0.3)]


def test_two_narrow_inferences_run_at_once_slowed_only_by_contention() -> None:
    assert _times((0.0, 0.2, 0.3, True), (0.0, 0.2, 0.3, True)) == [pytest.approx(0.3)] * 2
    slowed = _times((0.0, 0.2, 0.3, True), (0.0, 0.2, 0.3, True), contention=0.1)
    assert slowed == [pytest.approx(0.33)] * 2


def test_a_wide_inference_shares_the_cores_with_one_that_starts_beside_it() -> None:
    """The wide copy (2 threads) and a narrow one (1) on 2 cores: each at two thirds of its speed
    while both run."""
    wide_ends, narrow_ends = _times((0.0, 0.3, 0.45, False), (0.0, 0.3, 0.3, True))
    assert narrow_ends == pytest.approx(0.45)  # 0.3 of work at 2/3
    assert wide_ends == pytest.approx(0.45 + (0.3 - 0.45 * 2 / 3))  # then alone


def test_on_one_core_and_one_lane_two_inferences_halve_each_other() -> None:
    assert _times((0.0, 0.2, 0.2, False), (0.0, 0.2, 0.2, True), cores=1, lanes=1) == [pytest.approx(0.4)] * 2


def test_a_cancel_stops_an_inference_and_a_pause_runs_it_again_from_the_start() -> None:
    async def main() -> tuple[str, float]:
        cpu, loop = Cpu(2, 2, 0.0), asyncio.get_running_loop()
        cancelled, paused = CancelToken(), CancelToken()
        stopped = asyncio.create_task(cpu.run(Work(1.0, 1.0, "decoder", cancelled, False)))
        again = asyncio.create_task(cpu.run(Work(0.5, 0.5, "decoder", paused, True)))
        await asyncio.sleep(0.3)
        cancelled.cancel()
        paused.pause()
        await asyncio.sleep(0.2)
        paused.resume()
        begun = loop.time()
        took = await again
        with pytest.raises(SynthesisCancelled):
            await stopped
        return f"{loop.time() - begun:.2f}", took

    waited, took = simulate(main())
    assert float(waited) == pytest.approx(0.5, abs=0.01)  # the whole inference again
    assert took == pytest.approx(0.5, abs=0.01)  # the attempt that completed
