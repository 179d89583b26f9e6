"""Windows of many sessions decoded in one run: each caller hands its window's feed and waits; the
model runs one batch at a time, of windows of the same length, so those that arrive while a batch
runs go together in the next.

Nothing waits to gather a batch: a window that finds the model idle runs at once, alone, so one
session's first audio is what it is without batching; batches form only while the model is busy,
which is when they pay. The model decodes a batch of windows in about the time of its longest
(on a GPU; on a CPU the cores are already full, ``docs/design.md`` has the figures).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.cancel import CancelToken, SynthesisCancelled

Run = Callable[[dict[str, Any]], NDArray[np.float32]]
"""Decodes a stacked feed: [batch, ...] inputs -> [batch, samples] audio."""


@dataclass(eq=False)
class _Window:
    feed: dict[str, Any]
    size: int
    cancel: CancelToken | None
    arrived: float = field(default_factory=time.perf_counter)
    audio: NDArray[np.float32] | None = None
    error: BaseException | None = None
    batch: int = 0
    """How many windows its run decoded (0: not run yet)."""
    seconds: float = 0.0


class Batcher:
    """Decodes windows (feeds of batch one) on ``run``, the same-size ones waiting together in one
    batch of at most ``most``."""

    def __init__(self, run: Run, most: int) -> None:
        self._run, self.most = run, max(1, most)
        self._ready = threading.Condition()
        self._waiting: list[_Window] = []
        self._busy = False
        self.batches: dict[int, int] = {}
        """Runs by how many windows each decoded: the batching a load got."""

    def decode(
        self, feed: dict[str, Any], size: int, cancel: CancelToken | None = None
    ) -> tuple[NDArray[np.float32], float, int]:
        """The audio of one window (its feed of batch one, ``size`` frames long), the seconds its
        run took, and how many windows that run decoded. Whichever caller finds the model free runs
        the next batch, for whoever is in it."""
        window = _Window(feed, size, cancel)
        with self._ready:
            self._waiting.append(window)
            while window.batch == 0 and window.error is None:
                if self._busy:
                    self._ready.wait()
                    continue
                batch = self._next()
                self._busy = True
                self._ready.release()
                try:
                    self._decode(batch)
                finally:
                    self._ready.acquire()
                    self._busy = False
                    self._ready.notify_all()
        if window.error is not None:
            raise window.error
        assert window.audio is not None
        return window.audio, window.seconds, window.batch

    def _next(self) -> list[_Window]:
        """The longest-waiting window and those of its size that came after it, up to ``most``;
        the cancelled are answered and dropped first. Called holding the lock."""
        for window in [w for w in self._waiting if w.cancel is not None and w.cancel.cancelled]:
            window.error = SynthesisCancelled("synthesis cancelled")
            self._waiting.remove(window)
        if not self._waiting:
            return []
        size = self._waiting[0].size
        batch = [w for w in self._waiting if w.size == size][: self.most]
        for window in batch:
            self._waiting.remove(window)
        return batch

    def _decode(self, batch: list[_Window]) -> None:
        """Run ``batch`` as one and hand each window its row, or the failure to all of them."""
        if not batch:
            return
        try:
            feed = {name: np.concatenate([w.feed[name] for w in batch]) for name in batch[0].feed}
            started = time.perf_counter()
            audio = self._run(feed)
            seconds = time.perf_counter() - started
            for row, window in zip(np.asarray(audio, dtype=np.float32).reshape(len(batch), -1), batch, strict=True):
                window.audio, window.seconds = row, seconds
        except BaseException as exc:
            for window in batch:
                window.error = exc
        finally:
            for window in batch:
                window.batch = len(batch)
        self.batches[len(batch)] = self.batches.get(len(batch), 0) + 1
