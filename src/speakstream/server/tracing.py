"""A trace per reply with OpenTelemetry (the optional ``otel`` extra), off unless the standard
``OTEL_*`` variables ask for one.

A reply's trace has a root span (``reply``: route, voice, format, first audio), a span for its
admission, one per chunk, and under each chunk the engine's stages as the pieces report them
(``phonemes``, ``front``, each ``window`` with its size and the planner's reason), then each
piece's ``encode`` and ``send``. The engine only records plain ``Step``s with perf-counter times;
spans are made here, afterwards, with those times, so no engine thread touches the tracer. A
``traceparent`` header on the request continues the caller's trace.

Configuration is OpenTelemetry's own: ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console`` or ``none``),
``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (setting one turns on
``otlp``), ``OTEL_SERVICE_NAME``, ``OTEL_TRACES_SAMPLER`` and the batch processor's ``OTEL_BSP_*``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from speakstream.types import AudioPiece, Step

log = logging.getLogger(__name__)

EPOCH_OFFSET_NS = time.time_ns() - time.perf_counter_ns()
"""Wall-clock nanoseconds at perf-counter zero: spans take the steps' perf-counter times."""


def at(perf_s: float) -> int:
    """A ``time.perf_counter`` reading as the epoch nanoseconds a span takes."""
    return EPOCH_OFFSET_NS + int(perf_s * 1e9)


def exporter_from_env(environ: Mapping[str, str]) -> str | None:
    """Which exporter the standard variables ask for (None: tracing off)."""
    named = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if named == "none":
        return None
    if named:
        return named.split(",")[0].strip()
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return "otlp" if endpoint else None


class Tracing:
    """Makes the traces of replies on one ``TracerProvider`` (None: off; every call is free)."""

    def __init__(self, provider: Any | None = None) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer("speakstream") if provider is not None else None
        if provider is not None:  # each reply's trace id reaches the log, whatever its level
            log.setLevel(min(log.getEffectiveLevel(), logging.INFO))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Tracing:
        """The tracing the ``OTEL_*`` variables configure; off when they configure none, or when
        the ``otel`` extra is not installed (said once in the log)."""
        environ = os.environ if environ is None else environ
        exporter = exporter_from_env(environ)
        if exporter is None:
            return cls()
        try:
            return cls(_provider(exporter))
        except ImportError:
            log.warning("OTEL_* asks for traces but OpenTelemetry is not installed: pip install 'speakstream[otel]'")
        except ValueError as exc:
            log.warning("tracing off: %s", exc)
        return cls()

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    def reply(self, request_id: str, route: str, headers: Mapping[str, str] | None = None) -> ReplyTrace:
        if self._tracer is None:
            return ReplyTrace(None, None)
        from opentelemetry import propagate

        parent = propagate.extract(dict(headers)) if headers else None
        root = self._tracer.start_span(
            "reply", context=parent, attributes={"speakstream.request_id": request_id, "speakstream.route": route}
        )
        return ReplyTrace(self._tracer, root, f"{route} {request_id}")

    def shutdown(self) -> None:
        if self.provider is not None:
            self.provider.shutdown()


class ReplyTrace:
    """One reply's spans (all no-ops when tracing is off)."""

    def __init__(self, tracer: Any | None, root: Any | None, name: str = "") -> None:
        self._tracer, self.root, self._name = tracer, root, name
        self._chunks: dict[int, Any] = {}
        self._ended = False

    @property
    def trace_id(self) -> str | None:
        """The trace's id (32 hex digits), for control messages and logs; None when off."""
        if self.root is None:
            return None
        return format(self.root.get_span_context().trace_id, "032x")

    def set(self, **attributes: Any) -> None:
        if self.root is not None:
            self.root.set_attributes({f"speakstream.{k}": v for k, v in attributes.items() if v is not None})

    def span(self, name: str, started: float, ended: float, attributes: Mapping[str, Any] | None = None) -> None:
        """A finished stage under the reply, from perf-counter times."""
        if self._tracer is not None:
            self._child(self.root, name, started, ended, attributes)

    def piece(self, chunk: int, chunk_started: float, piece: AudioPiece) -> None:
        """The engine's stages that made ``piece`` of chunk ``chunk`` (queued at ``chunk_started``)."""
        if self._tracer is None:
            return
        span = self._chunks.get(chunk)
        if span is None:
            span = self._chunks[chunk] = self._tracer.start_span(
                "chunk",
                context=self._context(self.root),
                start_time=at(chunk_started),
                attributes={"speakstream.chunk": chunk},
            )
        for step in piece.steps:
            self._step(span, step)
        if piece.last:
            span.end(end_time=at(piece.steps[-1].ended if piece.steps else time.perf_counter()))

    def end(self, error: str | None = None) -> None:
        """End the reply's trace (once), failed with ``error``'s code if one is given."""
        if self.root is None or self._ended:
            return
        self._ended = True
        for span in self._chunks.values():
            if span.is_recording():
                span.end()
        if error:
            from opentelemetry.trace import Status, StatusCode

            self.root.set_status(Status(StatusCode.ERROR, error))
            self.root.set_attribute("speakstream.error", error)
        self.root.end()
        log.info("reply %s %s trace_id=%s", self._name, f"failed ({error})" if error else "ended", self.trace_id)

    def _step(self, parent: Any, step: Step) -> None:
        self._child(parent, step.name, step.started, step.ended, {f"speakstream.{k}": v for k, v in step.attributes})

    def _child(
        self, parent: Any, name: str, started: float, ended: float, attributes: Mapping[str, Any] | None
    ) -> None:
        span = self._tracer.start_span(  # type: ignore[union-attr]
            name, context=self._context(parent), start_time=at(started), attributes=dict(attributes or {})
        )
        span.end(end_time=at(ended))

    @staticmethod
    def _context(parent: Any) -> Any:
        from opentelemetry import trace

        return trace.set_span_in_context(parent)


def _provider(exporter: str) -> Any:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    if exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        span_exporter: Any = OTLPSpanExporter()
    elif exporter == "console":
        span_exporter = ConsoleSpanExporter()
    else:
        raise ValueError(f"OTEL_TRACES_EXPORTER={exporter!r} is not one speakstream knows (otlp, console, none)")
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "speakstream")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(span_exporter))
    return provider
