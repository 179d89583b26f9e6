"""Which copy of a model part an inference runs on, and one inference a ``CancelToken`` can stop or
pause; ONNX Runtime's errors are translated here.

An engine with more than one lane loads each part twice over: a *wide* copy (every core: the
least latency) and narrow copies (a share of the cores each). An inference that starts alone gets
the wide copy; one that starts beside another, or that the scheduler hands out beside another
(``shared``: two windows handed out together reach ONNX Runtime a few milliseconds apart), gets a
narrow one when one is free. ``run_pair`` runs a window's two halves at once on two narrow copies
when nothing else runs. Why these pay is in ``docs/design.md``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from speakstream.engine.cancel import CancelToken, SynthesisCancelled
from speakstream.engine.model.weights import shrink_after
from speakstream.errors import EngineError

T = TypeVar("T")


class Cores:
    """Counts the inferences running on the engine, over every part of its model, and lends each
    new one the copy it should run on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self.narrow_runs = 0
        """Inferences that ran on a narrow copy, counted (two a pair)."""

    def copies(self, wide: Any, narrow: Sequence[Any] = ()) -> Copies:
        """One part's copies: ``wide`` (every core) and ``narrow`` ones (a share each)."""
        return Copies(self, wide, list(narrow))

    @property
    def running(self) -> int:
        return self._running

    @contextlib.contextmanager
    def lend(self, wide: Any, free: list[Any], *, shared: bool = False) -> Iterator[Any]:
        """``wide`` when nothing else runs and the inference is not ``shared``, else one of ``free``
        (taken from it until the end) when one is."""
        with self._lock:
            narrow = free.pop() if (self._running or shared) and free else None
            self._running += 1
            self.narrow_runs += narrow is not None
        try:
            yield wide if narrow is None else narrow
        finally:
            with self._lock:
                self._running -= 1
                if narrow is not None:
                    free.append(narrow)

    @contextlib.contextmanager
    def pair(self, free: list[Any], *, shared: bool = False) -> Iterator[tuple[Any, Any] | None]:
        """Two of ``free`` (taken from it until the end) when nothing else runs, the inference is
        not ``shared`` and two are free, else None."""
        with self._lock:
            lent = None if self._running or shared or len(free) < 2 else (free.pop(), free.pop())
            self._running += 2 if lent else 0
            self.narrow_runs += 2 if lent else 0
        try:
            yield lent
        finally:
            if lent is not None:
                with self._lock:
                    self._running -= 2
                    free.extend(lent)


class Copies:
    """One model part's copies; ``take`` lends the one an inference starting now should run on."""

    def __init__(self, cores: Cores, wide: Any, narrow: list[Any]) -> None:
        self.cores, self.wide = cores, wide
        self.free = narrow
        """The narrow copies not lent out now."""
        self.every = (wide, *narrow)
        """Every copy of the part, lent out or not."""

    def take(self, *, shared: bool = False) -> contextlib.AbstractContextManager[Any]:
        return self.cores.lend(self.wide, self.free, shared=shared)

    def take_pair(self, *, shared: bool = False) -> contextlib.AbstractContextManager[tuple[Any, Any] | None]:
        return self.cores.pair(self.free, shared=shared)


def run(
    session: Any,
    outputs: list[str] | None,
    feed: dict[str, Any],
    cancel: CancelToken | None,
    expected_s: float | None = None,
    *,
    shared: bool = False,
    shrink: bool = False,
) -> tuple[list[Any], float]:
    """The outputs, and the seconds the inference that completed took. A cancel stops it (ONNX
    Runtime's terminate flag) with ``SynthesisCancelled``; a pause stops it too, then it waits
    for its turn and runs again from the start. ``expected_s``: how long it should take (what
    the scheduler weighs before pausing it). ``session``: an ONNX Runtime session, or ``Copies``
    (the copy is chosen as each try starts, so a paused inference holds none while it waits).
    ``shrink``: give the shared arena's free memory back when it ends (``weights.shrink_after``)."""

    def attempt(options: Any) -> tuple[list[Any], float]:
        lane = session.take(shared=shared) if isinstance(session, Copies) else contextlib.nullcontext(session)
        started = time.perf_counter()
        with lane as chosen:
            return chosen.run(outputs, feed, options), time.perf_counter() - started

    return _until_done(attempt, cancel, expected_s, shrink)


def run_pair(
    copies: Copies,
    outputs: list[str] | None,
    feeds: tuple[dict[str, Any], dict[str, Any]],
    cancel: CancelToken | None,
    expected_s: float | None = None,
    *,
    shared: bool = False,
    shrink: bool = False,
) -> tuple[tuple[list[Any], list[Any]], float | None]:
    """Both feeds' outputs, and the seconds the two took at once (None when they could not run at
    once: then each ran as ``run`` runs it, one after the other). A cancel or pause stops both, as
    in ``run`` (one terminate flag for both); a paused pair waits for its turn and runs again."""

    def attempt(options: Any) -> tuple[tuple[list[Any], list[Any]], float] | None:
        started = time.perf_counter()
        with copies.take_pair(shared=shared) as pair:
            return None if pair is None else (_both(pair, outputs, feeds, options), time.perf_counter() - started)

    together = _until_done(attempt, cancel, expected_s, shrink)
    if together is not None:
        return together
    first, _ = run(copies, outputs, feeds[0], cancel, expected_s, shared=shared)
    second, _ = run(copies, outputs, feeds[1], cancel, expected_s, shared=shared, shrink=shrink)
    return (first, second), None


def _until_done(
    attempt: Callable[[Any], T], cancel: CancelToken | None, expected_s: float | None, shrink: bool = False
) -> T:
    """``attempt(options)``, which a cancel or a pause stops through ``options``' terminate flag:
    after a pause it waits for its turn and is tried again from the start; a cancel raises
    ``SynthesisCancelled``, any other failure ``EngineError``."""
    import onnxruntime as ort

    while True:
        options = ort.RunOptions()
        if shrink:
            shrink_after(options)
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
