"""The batcher: a window that finds the model idle runs at once, alone; windows that arrive while a
batch runs wait and go together, by length, at most ``most`` a run; a failure reaches each window
of its batch and the next batch runs; a cancelled window is answered and never run."""

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from speakstream.engine.cancel import CancelToken, SynthesisCancelled
from speakstream.engine.runtime.batcher import Batcher


class Model:
    """Stands in for the batched decoder: each row's audio is its feed's value, repeated; the
    first run can be held at a gate so that others arrive while it runs."""

    def __init__(self, gate: threading.Event | None = None, fail: bool = False) -> None:
        self.gate, self.fail = gate, fail
        self.started = threading.Event()
        self.runs: list[list[float]] = []

    def __call__(self, feed: dict[str, Any]) -> np.ndarray:
        self.runs.append([float(v) for v in feed["x"][:, 0]])
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(10)
            self.gate = None
        if self.fail:
            raise RuntimeError("the model failed")
        return np.repeat(feed["x"], 3, axis=1).astype(np.float32)


def feed(value: float) -> dict[str, Any]:
    return {"x": np.array([[value]], np.float32)}


def while_busy(
    batcher: Batcher, model: Model, windows: list[tuple[float, int]], pool: ThreadPoolExecutor
) -> list[Future[Any]]:
    """A first window of size 10 held running, then ``windows`` (value, size) arriving meanwhile."""
    first = pool.submit(batcher.decode, feed(0.0), 10)
    assert model.started.wait(10)
    later = [pool.submit(batcher.decode, feed(v), size) for v, size in windows]
    while len(batcher._waiting) < len(windows):
        threading.Event().wait(0.001)
    return [first, *later]


def test_a_window_that_finds_the_model_idle_runs_at_once_alone() -> None:
    model = Model()
    audio, _, batch = Batcher(model, 8).decode(feed(2.0), 10)
    assert batch == 1 and model.runs == [[2.0]]
    np.testing.assert_array_equal(audio, [2.0, 2.0, 2.0])


def test_windows_arriving_while_a_batch_runs_go_together_by_length_at_most_most_a_run() -> None:
    gate = threading.Event()
    model, pool = Model(gate), ThreadPoolExecutor(8)
    batcher = Batcher(model, 3)
    futures = while_busy(batcher, model, [(1.0, 10), (2.0, 20), (3.0, 10), (4.0, 10), (5.0, 10)], pool)
    gate.set()
    results = [f.result(10) for f in futures]
    assert model.runs == [[0.0], [1.0, 3.0, 4.0], [2.0], [5.0]]
    for (audio, _, batch), value, size in zip(results, [0, 1, 2, 3, 4, 5], [1, 3, 1, 3, 3, 1], strict=True):
        np.testing.assert_array_equal(audio, [value] * 3)
        assert batch == size
    assert batcher.batches == {1: 3, 3: 1}
    pool.shutdown()


def test_a_failure_reaches_every_window_of_its_batch_and_the_next_batch_runs() -> None:
    gate = threading.Event()
    model, pool = Model(gate, fail=True), ThreadPoolExecutor(4)
    batcher = Batcher(model, 4)
    futures = while_busy(batcher, model, [(1.0, 10), (2.0, 10)], pool)
    gate.set()
    for future in futures:
        with pytest.raises(RuntimeError, match="the model failed"):
            future.result(10)
    model.fail = False
    assert batcher.decode(feed(7.0), 10)[2] == 1
    pool.shutdown()


def test_a_cancelled_window_is_answered_and_never_run() -> None:
    gate = threading.Event()
    model, pool = Model(gate), ThreadPoolExecutor(4)
    batcher = Batcher(model, 4)
    cancel = CancelToken()
    first = pool.submit(batcher.decode, feed(0.0), 10)
    assert model.started.wait(10)
    cancelled = pool.submit(batcher.decode, feed(1.0), 10, cancel)
    kept = pool.submit(batcher.decode, feed(2.0), 10)
    while len(batcher._waiting) < 2:
        threading.Event().wait(0.001)
    cancel.cancel()
    gate.set()
    with pytest.raises(SynthesisCancelled):
        cancelled.result(10)
    assert first.result(10)[2] == 1 and kept.result(10)[2] == 1
    assert model.runs == [[0.0], [2.0]]
    pool.shutdown()
