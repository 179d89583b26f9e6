"""One ONNX Runtime inference that a ``CancelToken`` can stop or pause; its errors translated here.

``Lanes``: which session an inference runs on when several may run at once (the scheduler's
``workers``). One inference alone gets the *wide* session (all cores: the least latency); one that
starts while another runs gets a *narrow* one (a share of the cores: one thread on 2), when one is
free. On 2 cores a 36-frame window of the decoder takes 433 ms on both and 656 ms on one (threads
inside one inference get 1.5x out of 2 cores), and two such windows at once on one thread each
take 683 ms against 889 ms one after the other on both: 1.3x the audio per second, with a listener
alone no slower. The caller may say how many inferences it is about to start (``Lanes.in_flight``:
the scheduler dispatches two windows together, which reach ONNX Runtime a few milliseconds apart),
so both take a narrow session and no wide one runs two threads beside a narrow one's third.

``run_pair``: two inferences of one window's halves, at once on two narrow sessions, when nothing
else runs (``Lanes.pair``). Two halves of a 160-frame window (each with its own context) take
0.84-0.89x the time of the whole window on the wide session; under about 80 frames the halves' extra
context costs what the second core gains.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from speakstream.engine.base import CancelToken, SynthesisCancelled
from speakstream.errors import EngineError

T = TypeVar("T")


class Lanes:
    """Counts the inferences running, over every part of a model (the front and the decoder)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self.in_flight: Callable[[], int] | None = None
        """The caller's count of inferences it runs or is about to start, this one included (the
        scheduler's windows in flight). Two windows dispatched together start a few milliseconds
        apart: without it the first would take the wide session, the second a narrow one, and
        three threads would share 2 cores until the first ends."""

    def part(self, wide: Any, narrow: Sequence[Any] = ()) -> Sessions:
        """The sessions of one part: ``wide`` (all cores) and ``narrow`` ones (a share each)."""
        return Sessions(self, wide, list(narrow))

    @property
    def running(self) -> int:
        return self._running

    def _crowded(self) -> bool:
        """The caller is about to start another inference beside this one (``in_flight``)."""
        return self.in_flight is not None and self.in_flight() > 1

    @contextlib.contextmanager
    def lend(self, wide: Any, free: list[Any]) -> Iterator[Any]:
        """``wide`` when nothing else runs or is about to, else one of ``free`` (taken from it until
        the end)."""
        crowded = self._crowded()
        with self._lock:
            narrow = free.pop() if (self._running or crowded) and free else None
            self._running += 1
        try:
            yield wide if narrow is None else narrow
        finally:
            with self._lock:
                self._running -= 1
                if narrow is not None:
                    free.append(narrow)

    @contextlib.contextmanager
    def pair(self, free: list[Any]) -> Iterator[tuple[Any, Any] | None]:
        """Two of ``free`` (taken from it until the end) when nothing else runs or is about to and
        two are free, else None."""
        crowded = self._crowded()
        with self._lock:
            lent = None if self._running or crowded or len(free) < 2 else (free.pop(), free.pop())
            self._running += 2 if lent else 0
        try:
            yield lent
        finally:
            if lent is not None:
                with self._lock:
                    self._running -= 2
                    free.extend(lent)


class Sessions:
    """One model part's sessions; ``take`` lends the one an inference starting now should run on."""

    def __init__(self, lanes: Lanes, wide: Any, narrow: list[Any]) -> None:
        self.lanes, self.wide = lanes, wide
        self.narrow = narrow
        """The narrow sessions not lent out now."""
        self.every = (wide, *narrow)
        """Every session of the part, lent out or not."""

    def take(self) -> contextlib.AbstractContextManager[Any]:
        return self.lanes.lend(self.wide, self.narrow)

    def take_pair(self) -> contextlib.AbstractContextManager[tuple[Any, Any] | None]:
        return self.lanes.pair(self.narrow)


def run(
    session: Any,
    outputs: list[str] | None,
    feed: dict[str, Any],
    cancel: CancelToken | None,
    expected_s: float | None = None,
) -> tuple[list[Any], float]:
    """The outputs, and the seconds the inference that completed took. A cancel stops it (ONNX
    Runtime's terminate flag) with ``SynthesisCancelled``; a pause stops it too, then it waits
    for its turn and runs again from the start. ``expected_s``: how long it should take (what
    the scheduler weighs before pausing it). ``session``: an ONNX Runtime session, or ``Sessions``
    (the lane is chosen as each try starts, so a paused inference holds none while it waits)."""

    def attempt(options: Any) -> tuple[list[Any], float]:
        lane = session.take() if isinstance(session, Sessions) else contextlib.nullcontext(session)
        started = time.perf_counter()
        with lane as chosen:
            return chosen.run(outputs, feed, options), time.perf_counter() - started

    return _until_done(attempt, cancel, expected_s)


def run_pair(
    sessions: Sessions,
    outputs: list[str] | None,
    feeds: tuple[dict[str, Any], dict[str, Any]],
    cancel: CancelToken | None,
    expected_s: float | None = None,
) -> tuple[tuple[list[Any], list[Any]], float | None]:
    """Both feeds' outputs, and the seconds the two took at once (None when they could not run at
    once: then each ran as ``run`` runs it, one after the other). A cancel or pause stops both, as
    in ``run`` (one terminate flag for both); a paused pair waits for its turn and runs again."""

    def attempt(options: Any) -> tuple[tuple[list[Any], list[Any]], float] | None:
        started = time.perf_counter()
        with sessions.take_pair() as pair:
            return None if pair is None else (_both(pair, outputs, feeds, options), time.perf_counter() - started)

    together = _until_done(attempt, cancel, expected_s)
    if together is not None:
        return together
    first, _ = run(sessions, outputs, feeds[0], cancel, expected_s)
    second, _ = run(sessions, outputs, feeds[1], cancel, expected_s)
    return (first, second), None


def _until_done(attempt: Callable[[Any], T], cancel: CancelToken | None, expected_s: float | None) -> T:
    """``attempt(options)``, which a cancel or a pause stops through ``options``' terminate flag:
    after a pause it waits for its turn and is tried again from the start; a cancel raises
    ``SynthesisCancelled``, any other failure ``EngineError``."""
    import onnxruntime as ort

    while True:
        options = ort.RunOptions()
        stopped = threading.Event()
        if cancel is not None:
            cancel.wait_turn()
        stoppable = (
            contextlib.nullcontext()
            if cancel is None
            else cancel.interruptible(partial(_stop, options, stopped), expected_s)
        )
        try:
            with stoppable:
                return attempt(options)
        except Exception as exc:  # onnxruntime raises its own unexported error types
            if cancel is not None and cancel.cancelled:
                raise SynthesisCancelled("synthesis cancelled") from exc
            if stopped.is_set():  # paused: maybe resumed already, if the inference took longer to stop
                continue  # than the first window it made way for took to run
            raise EngineError(f"inference failed ({type(exc).__name__}; the server log has the details)") from exc


def _stop(options: Any, stopped: threading.Event) -> None:
    """Stop the inference running with ``options`` (ONNX Runtime's terminate flag), and say so."""
    stopped.set()
    options.terminate = True


def _both(
    pair: tuple[Any, Any], outputs: list[str] | None, feeds: tuple[dict[str, Any], dict[str, Any]], options: Any
) -> tuple[list[Any], list[Any]]:
    """The second feed on a thread of its own (joined before this returns), the first on this one."""
    results: list[Any] = [None, None]

    def second() -> None:
        try:
            results[1] = pair[1].run(outputs, feeds[1], options)
        except BaseException as exc:  # re-raised on the caller's thread
            results[1] = exc

    helper = threading.Thread(target=second, name="speakstream-half", daemon=True)
    helper.start()
    try:
        results[0] = pair[0].run(outputs, feeds[0], options)
    except BaseException:
        options.terminate = True  # the caller's half failed: stop the other half too
        raise
    finally:
        helper.join()
    if isinstance(results[1], BaseException):
        raise results[1]
    return results[0], results[1]
