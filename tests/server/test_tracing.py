"""A trace per reply with the real OpenTelemetry SDK and an in-process exporter: the spans, their
nesting and what they say; the trace id in the control messages; off unless configured."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from speakstream.client import SpeechSession
from speakstream.engine.fake import FakeEngine
from speakstream.engine.kokoro import KokoroEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer
from speakstream.server.tracing import Tracing, exporter_from_env


@pytest.fixture
def exported() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def _traced(server: ThreadedServer, exporter: InMemorySpanExporter) -> ThreadedServer:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    server.runtime.tracing = Tracing(provider)
    return server


@pytest.fixture
def traced(exported: InMemorySpanExporter) -> Iterator[ThreadedServer]:
    server = _traced(start_server(FakeEngine(seconds_per_char=0.001)), exported)
    yield server
    server.stop()


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


def _children(spans: tuple[ReadableSpan, ...], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


async def test_a_websocket_reply_is_one_trace_with_admission_chunks_encoding_and_sending(
    traced: ThreadedServer, exported: InMemorySpanExporter
) -> None:
    async with SpeechSession(traced.ws_url) as session:
        result = await session.collect(await session.speak("First sentence here. And a second one."))
    trace_id = (result.final or {}).get("trace_id")
    spans = exported.get_finished_spans()
    named = _by_name(spans)
    (root,) = named["reply"]
    assert trace_id == format(root.context.trace_id, "032x")
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    assert root.attributes["speakstream.route"] == "websocket" and root.attributes["speakstream.ttfa_s"] > 0
    under_root = {s.name for s in _children(spans, root)}
    assert {"admission", "chunk", "encode", "send"} <= under_root
    assert len(named["chunk"]) == root.attributes["speakstream.chunks"] == 2
    assert all(root.start_time <= s.start_time and s.end_time <= root.end_time for s in named["send"])


def test_an_http_reply_says_its_trace_id_and_continues_the_caller_s_trace(
    traced: ThreadedServer, exported: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="speakstream.server.tracing")
    caller = "0af7651916cd43dd8448eb211c80319c"
    headers = {"traceparent": f"00-{caller}-b7ad6b7169203331-01"}
    response = httpx.post(f"{traced.url}/invocations", json={"text": "Hello there."}, headers=headers, timeout=30)
    assert response.status_code == 200 and response.headers["X-Trace-Id"] == caller
    (root,) = _by_name(exported.get_finished_spans())["reply"]
    assert format(root.context.trace_id, "032x") == caller and root.parent is not None
    assert root.attributes["speakstream.route"] == "http"
    assert any(f"trace_id={caller}" in r.getMessage() for r in caplog.records)  # the log says it too


def test_a_refused_reply_ends_its_trace_with_the_reason(traced: ThreadedServer, exported: InMemorySpanExporter) -> None:
    traced.runtime.scheduler.admission.max_queue = 0  # no room for anything
    response = httpx.post(f"{traced.url}/v1/audio/speech", json={"input": "Hi.", "voice": "af_heart"}, timeout=30)
    assert response.status_code == 503
    (root,) = _by_name(exported.get_finished_spans())["reply"]
    assert root.status.status_code.name == "ERROR" and root.attributes["speakstream.error"] == "overloaded"


def test_tracing_is_off_unless_the_standard_variables_ask_for_it(fake_server: ThreadedServer) -> None:
    assert exporter_from_env({}) is None and exporter_from_env({"OTEL_TRACES_EXPORTER": "none"}) is None
    assert exporter_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}) == "otlp"
    assert exporter_from_env({"OTEL_TRACES_EXPORTER": "console"}) == "console"
    assert not Tracing.from_env({}).enabled and Tracing.from_env({"OTEL_TRACES_EXPORTER": "console"}).enabled
    assert not fake_server.runtime.tracing.enabled
    response = httpx.post(f"{fake_server.url}/invocations", json={"text": "Hello."}, timeout=30)
    assert "X-Trace-Id" not in response.headers


@pytest.mark.model
async def test_the_engine_s_stages_are_spans_with_each_window_s_size_and_reason(
    kokoro: KokoroEngine, exported: InMemorySpanExporter
) -> None:
    server = _traced(start_server(kokoro, cache_mb=0), exported)
    try:
        async with SpeechSession(server.ws_url) as session:
            text = "Thanks for waiting, I found your booking. Your flight to Lisbon leaves tomorrow morning."
            await session.collect(await session.speak(text))
    finally:
        server.stop()
    spans = exported.get_finished_spans()
    named = _by_name(spans)
    chunk = named["chunk"][0]
    stages = [s.name for s in sorted(_children(spans, chunk), key=lambda s: s.start_time)]
    assert stages[:2] == ["phonemes", "front"] and "window" in stages
    windows: list[Any] = [s.attributes for s in named["window"]]
    assert all(w["speakstream.frames"] > 0 and w["speakstream.reason"] for w in windows)
    assert any("opening" in w["speakstream.reason"] for w in windows)
    assert {w["speakstream.decoder"] for w in windows} <= {"main", "crowded"}
