"""One ONNX Runtime inference that a ``CancelToken`` can stop or pause; its errors translated here."""

from __future__ import annotations

import contextlib
import time
from functools import partial
from typing import Any

from speakstream.engine.base import CancelToken, SynthesisCancelled
from speakstream.errors import EngineError


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
    the scheduler weighs before pausing it)."""
    import onnxruntime as ort

    while True:
        options = ort.RunOptions()
        if cancel is not None:
            cancel.wait_turn()
        stoppable = (
            contextlib.nullcontext()
            if cancel is None
            else cancel.interruptible(partial(setattr, options, "terminate", True), expected_s)
        )
        started = time.perf_counter()
        try:
            with stoppable:
                return session.run(outputs, feed, options), time.perf_counter() - started
        except Exception as exc:  # onnxruntime raises its own unexported error types
            if cancel is not None and cancel.cancelled:
                raise SynthesisCancelled("synthesis cancelled") from exc
            if cancel is not None and cancel.paused:
                continue
            raise EngineError(f"inference failed ({type(exc).__name__}; the server log has the details)") from exc
