"""Prometheus metrics of one server (own registry, so several apps can live in one process)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from speakstream.scheduler.cache import CacheStats
from speakstream.scheduler.capacity import CapacityReading

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
        self.ready = Gauge("speakstream_ready", "1 once the engine is loaded, warm and serving (as /ping)", registry=r)
        self.active_sessions = Gauge("speakstream_active_sessions", "Open WebSocket sessions", registry=r)
        self.queued_chunks = Gauge("speakstream_queued_chunks", "Chunks waiting for the engine", registry=r)
        self.requests = Counter("speakstream_requests_total", "Synthesis requests", ["transport"], registry=r)
        self.errors = Counter("speakstream_errors_total", "Errors sent to clients", ["code"], registry=r)
        self.audio_seconds = Counter("speakstream_audio_seconds_total", "Audio produced", registry=r)
        self.gaps = Counter(
            "speakstream_gaps_total",
            "Times a listener (playing in real time from its first audio) ran dry while its next text was queued",
            registry=r,
        )
        self.gap_seconds = Counter("speakstream_gap_seconds_total", "Seconds of those gaps", registry=r)
        self.engine_seconds = Counter(
            "speakstream_engine_seconds_total",
            "Engine time (phonemes, front, decoder) on replies' first windows and on the others",
            ["window"],
            registry=r,
        )

    def watch_capacity(self, reading: Callable[[], CapacityReading], refused: Callable[[], int]) -> None:
        """Export the engine's capacity and the admitted load (an autoscaler's signals), read at
        each scrape."""
        self.registry.register(_CapacityCollector(reading, refused))

    def watch_cache(self, stats: Callable[[], CacheStats]) -> None:
        """Export the audio cache's hits, misses and size, read at each scrape."""
        self.registry.register(_CacheCollector(stats))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _CapacityCollector:
    def __init__(self, reading: Callable[[], CapacityReading], refused: Callable[[], int]) -> None:
        self._reading, self._refused = reading, refused

    def collect(self) -> Iterator[Metric]:
        r = self._reading()
        yield GaugeMetricFamily(
            "speakstream_capacity_audio_seconds_per_second",
            "Audio seconds a second the engine makes with every lane busy (measured, else estimated)",
            value=r.capacity if math.isfinite(r.capacity) else 0.0,
        )
        yield GaugeMetricFamily(
            "speakstream_load_audio_seconds_per_second",
            "Audio seconds a second the admitted replies ask for (one a listener)",
            value=r.load,
        )
        yield GaugeMetricFamily(
            "speakstream_utilization",
            "Load over capacity",
            value=r.utilization if math.isfinite(r.utilization) else 0.0,
        )
        yield GaugeMetricFamily(
            "speakstream_capacity_measured", "1 once the capacity is measured", value=float(r.measured)
        )
        yield CounterMetricFamily(
            "speakstream_admission_refused", "Replies refused for capacity", value=self._refused()
        )


class _CacheCollector:
    def __init__(self, stats: Callable[[], CacheStats]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Metric]:
        s = self._stats()
        yield CounterMetricFamily("speakstream_cache_hits", "Chunks answered from the audio cache", value=s.hits)
        yield CounterMetricFamily("speakstream_cache_misses", "Chunks looked up and not found", value=s.misses)
        yield GaugeMetricFamily("speakstream_cache_bytes", "Audio kept in the cache, bytes", value=s.bytes)
        yield GaugeMetricFamily("speakstream_cache_entries", "Chunks kept in the cache", value=s.entries)
        yield GaugeMetricFamily("speakstream_cache_max_bytes", "The cache's bound, bytes", value=s.max_bytes)
