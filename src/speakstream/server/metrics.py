"""Prometheus metrics of one server (own registry, so several apps can live in one process)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_LATENCY = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.ttfa = Histogram(
            "speakstream_time_to_first_audio_seconds",
            "Request received to first audio byte",
            ["transport"],
            buckets=_LATENCY,
            registry=r,
        )
        self.queue_wait = Histogram(
            "speakstream_queue_wait_seconds", "Chunk wait before synthesis starts", buckets=_LATENCY, registry=r
        )
        self.rtf = Histogram(
            "speakstream_real_time_factor",
            "Inference seconds per audio second",
            buckets=(0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 5.0),
            registry=r,
        )
        self.active_sessions = Gauge("speakstream_active_sessions", "Open WebSocket sessions", registry=r)
        self.queued_chunks = Gauge("speakstream_queued_chunks", "Chunks waiting for the engine", registry=r)
        self.requests = Counter("speakstream_requests_total", "Synthesis requests", ["transport"], registry=r)
        self.errors = Counter("speakstream_errors_total", "Errors sent to clients", ["code"], registry=r)
        self.audio_seconds = Counter("speakstream_audio_seconds_total", "Audio produced", registry=r)
        self.engine_seconds = Counter(
            "speakstream_engine_seconds_total",
            "Engine time (phonemes, front, decoder) on replies' first windows and on the others",
            ["window"],
            registry=r,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
