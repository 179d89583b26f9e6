"""CancelToken: cancel and pause, across threads, as the scheduler and the engine use it; WorkClock:
the engine's time, pauses left out."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import cast

import pytest

from speakstream.engine.cancel import CancelToken, SynthesisCancelled, WorkClock


def test_pause_stops_the_running_inference_and_the_next_waits_for_resume() -> None:
    token, stopped = CancelToken(), threading.Event()
    with token.interruptible(stopped.set):
        token.pause()
        assert stopped.is_set() and token.paused
    waited = threading.Event()
    thread = threading.Thread(target=lambda: (token.wait_turn(), waited.set()))
    thread.start()
    assert not waited.wait(0.1)  # paused: the next inference does not start
    token.resume()
    assert waited.wait(5)
    thread.join(5)


def test_the_time_spent_paused_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """``waited_s`` adds up the waits in ``wait_turn``: the engine takes them out of a piece's
    inference time."""
    clock, reads = [0.0], threading.Semaphore(0)

    def now() -> float:
        reads.release()
        return clock[0]

    monkeypatch.setattr(time, "perf_counter", now)
    token = CancelToken()
    token.wait_turn()  # not paused: nothing to wait for
    assert token.waited_s == 0.0
    token.pause()
    thread = threading.Thread(target=token.wait_turn)
    thread.start()
    assert reads.acquire(timeout=5)  # the wait has started
    clock[0] = 7.0
    token.resume()
    thread.join(5)
    assert token.waited_s == 7.0


def test_the_work_clock_leaves_out_the_pauses_since_it_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the waits after ``restart`` come out; without a token, nothing does."""
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    token = SimpleNamespace(waited_s=5.0)  # what the clock reads of a CancelToken
    work, bare = WorkClock(cast(CancelToken, token)), WorkClock(None)  # 5 s: an earlier pause, not ours
    clock[0], token.waited_s = 10.0, 8.0  # 10 s since the start, 3 of them paused
    assert work.seconds() == 7.0 and bare.seconds() == 10.0
    work.restart()
    clock[0] = 12.0
    assert work.seconds() == 2.0


def test_a_pause_before_the_inference_starts_stops_it_at_once() -> None:
    token, stopped = CancelToken(), threading.Event()
    token.pause()
    with token.interruptible(stopped.set):
        assert stopped.is_set()


def test_cancel_wakes_a_paused_synthesis_to_stop() -> None:
    token = CancelToken()
    token.pause()
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            token.wait_turn()
        except SynthesisCancelled as exc:
            errors.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    token.cancel()
    thread.join(5)
    assert len(errors) == 1 and not token.paused
    token.pause()  # a cancelled token stays cancelled, never paused
    assert not token.paused
    with pytest.raises(SynthesisCancelled):
        token.wait_turn()


def test_outside_an_inference_nothing_is_interrupted() -> None:
    token, stopped = CancelToken(), threading.Event()
    with token.interruptible(stopped.set):
        pass
    token.pause()
    token.cancel()
    assert not stopped.is_set()
