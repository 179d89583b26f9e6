"""CancelToken: cancel and pause, across threads, as the scheduler and the engine use it."""

from __future__ import annotations

import threading
import time

import pytest

from speakstream.engine.base import CancelToken, SynthesisCancelled


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
