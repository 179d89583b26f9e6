"""Stopping and pausing a synthesis from another thread, and timing only its own work."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from speakstream.errors import SpeakstreamError


class SynthesisCancelled(SpeakstreamError):
    code = "cancelled"


class CancelToken:
    """Lets another thread stop a synthesis that is running (barge-in), or pause it: a paused
    synthesis stops the inference it is in and runs it again once resumed, so that another reply's
    first window can have the engine at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._callbacks: list[Callable[[], None]] = []
        self._interrupt: Callable[[], None] | None = None
        self._run: tuple[float, float | None] | None = None
        self._resumed = threading.Event()
        self._resumed.set()
        self._waited_s = 0.0

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def paused(self) -> bool:
        return not self._resumed.is_set()

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
            interrupt = self._interrupt
        self._resumed.set()  # a paused synthesis wakes up to stop
        for callback in [*callbacks, *([interrupt] if interrupt else [])]:
            callback()

    def pause(self) -> None:
        """Stop the running inference (see ``interruptible``); the next waits in ``wait_turn``."""
        with self._lock:
            if self._cancelled:
                return
            self._resumed.clear()
            interrupt = self._interrupt
        if interrupt is not None:
            interrupt()

    def resume(self) -> None:
        self._resumed.set()

    def wait_turn(self) -> None:
        """Block while paused; raise ``SynthesisCancelled`` if cancelled."""
        if self.paused:
            started = time.perf_counter()
            self._resumed.wait()
            self._waited_s += time.perf_counter() - started
        self.check()

    @property
    def waited_s(self) -> float:
        """Seconds the synthesis has waited, paused, for its turn (``wait_turn``), in all: not its
        inference time."""
        return self._waited_s

    @contextlib.contextmanager
    def interruptible(self, stop: Callable[[], None], expected_s: float | None = None) -> Iterator[None]:
        """While inside, ``cancel`` and ``pause`` call ``stop`` (the running inference's own stop);
        ``expected_s``: how long the inference should take, if known (see ``running``)."""
        with self._lock:
            self._interrupt = stop
            self._run = (time.perf_counter(), expected_s)
            pending = self._cancelled or self.paused
        if pending:
            stop()
        try:
            yield
        finally:
            with self._lock:
                self._interrupt = None
                self._run = None

    def running(self) -> tuple[float, float | None] | None:
        """Seconds the inference in progress has run and how long it should take (None if not
        known), or None between inferences: what pausing it now would lose."""
        run = self._run
        return None if run is None else (time.perf_counter() - run[0], run[1])

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when cancelled (at once if it already is)."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return
        callback()

    def check(self) -> None:
        if self._cancelled:
            raise SynthesisCancelled("synthesis cancelled")


class WorkClock:
    """Seconds a synthesis spent working since it last started the clock: the time it waited,
    paused, for its turn (``CancelToken.waited_s``) is left out, the stopped try's compute is not."""

    def __init__(self, cancel: CancelToken | None) -> None:
        self._cancel = cancel
        self.restart()

    def restart(self) -> None:
        self._started, self._waited = time.perf_counter(), self._waited_s()

    def seconds(self) -> float:
        return time.perf_counter() - self._started - (self._waited_s() - self._waited)

    def _waited_s(self) -> float:
        return 0.0 if self._cancel is None else self._cancel.waited_s
