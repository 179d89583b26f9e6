"""HTTP routes of the SageMaker contract: ``/ping``, ``/invocations`` (streamed audio or SSE),
and ``/metrics``.

``/invocations`` takes ``{"text", "voice", "speed", "format", "sample_rate"}`` as JSON, or plain
text with those as query parameters. Audio of each chunk leaves as soon as it is synthesised
(chunked transfer). With ``Accept: text/event-stream`` the answer is Server-Sent Events instead:
``audio_stream_start``, ``audio_chunk`` (base64 audio, sequence, text, duration, words),
``audio_stream_end`` (totals and timings) or ``error``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Message, Send

from speakstream.errors import InvalidInput, SpeakstreamError, UnsupportedMediaType
from speakstream.protocol import Options, sse_event
from speakstream.scheduler import Scheduler
from speakstream.server.encoding import ChunkOut
from speakstream.server.reply import Reply
from speakstream.server.runtime import Runtime
from speakstream.server.security import TOKEN_TTL_S, issue_token
from speakstream.server.speech import SpeechRequest, body_limit, open_reply

log = logging.getLogger("speakstream.http")


class BodyTimeout(InvalidInput):
    code = "body_timeout"
    http_status = 408


class PayloadTooLarge(InvalidInput):
    code = "body_too_large"
    http_status = 413


def runtime_of(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def error_response(exc: SpeakstreamError, runtime: Runtime | None = None) -> JSONResponse:
    if runtime is not None:
        runtime.error(exc)
    headers = {"Retry-After": "1"} if exc.retryable and exc.http_status == 503 else None
    return JSONResponse({"error": exc.to_dict()}, status_code=exc.http_status, headers=headers)


def json_route(
    path: str,
    work: Callable[[Request], Awaitable[Any]],
    method: str,
    errors: Callable[[SpeakstreamError, Runtime], Response] = error_response,
    *,
    status: int = 200,
) -> Route:
    """A route answering ``work``'s JSON with ``status`` (204 when it returns None), or the
    ``errors`` response (which counts the error) to a ``SpeakstreamError``: the store APIs' routes."""

    async def endpoint(request: Request) -> Response:
        runtime = runtime_of(request)
        try:
            answer = await work(request)
        except SpeakstreamError as exc:
            return errors(exc, runtime)
        return Response(status_code=204) if answer is None else JSONResponse(answer, status)

    return Route(path, endpoint, methods=[method])


async def ping(request: Request) -> Response:
    runtime = runtime_of(request)
    if runtime.ready and runtime.scheduler is not None and runtime.engine is not None:
        body: dict[str, object] = {
            "status": "ok",
            "device": runtime.engine.device,
            "weights": runtime.engine.weights,
            "store": runtime.dictionaries.state,
            **_load(runtime.scheduler),
        }
        if runtime.instance:
            body["instance"] = runtime.instance
        return JSONResponse(body)
    reason = _LOAD_FAILURES.get(runtime.load_error.code, _LOAD_FAILED) if runtime.load_error else "engine loading"
    code = runtime.load_error.code if runtime.load_error else "not_ready"
    body = {"status": "unavailable", "code": code, "reason": reason}
    return JSONResponse(body, status_code=503, headers={"Retry-After": "1"})


def _load(scheduler: Scheduler) -> dict[str, object]:
    """Capacity and load for a load balancer or an autoscaler reading /ping."""
    r = scheduler.reading()
    capacity = round(r.capacity, 2) if math.isfinite(r.capacity) else None
    utilization = round(r.utilization, 3) if math.isfinite(r.utilization) else None
    return {"capacity_audio_s_per_s": capacity, "load_audio_s_per_s": r.load, "utilization": utilization}


# What /ping says when the engine failed to load: the cause, never the path or library text
# (those are in the server log).
_LOAD_FAILED = "the engine failed to load; the server log says why"
_LOAD_FAILURES = {
    "missing_asset": "the model assets are missing or damaged; `speakstream assets fetch` on the server fetches them",
    "language_unavailable": "a language set to load at startup is not installed; the server log names it",
}


async def session_token(request: Request) -> Response:
    """A short-lived token for a WebSocket handshake (``?token=``), so a browser never puts the
    API key in a URL. The API key guards this route; without a key nothing needs a token."""
    key = runtime_of(request).config.api_key
    if not key:
        return JSONResponse({"token": None, "expires_in": None})
    return JSONResponse({"token": issue_token(key.encode()), "expires_in": TOKEN_TTL_S})


async def metrics(request: Request) -> Response:
    runtime = runtime_of(request)
    if runtime.scheduler is not None:
        runtime.metrics.queued_chunks.set(runtime.scheduler.queued)
    return Response(runtime.metrics.render(), media_type="text/plain; version=0.0.4")


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing more than ``limit`` bytes without reading it all, and a body
    that takes longer than ``body_timeout_s`` to arrive (a slow sender holds a connection)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body over {limit} bytes")
    timeout = runtime_of(request).config.body_timeout_s
    body = bytearray()
    try:
        async with asyncio.timeout(timeout):
            async for block in request.stream():
                body += block
                if len(body) > limit:
                    raise PayloadTooLarge(f"request body over {limit} bytes")
    except TimeoutError as exc:
        raise BodyTimeout(f"the request body did not arrive within {timeout:g} s") from exc
    return bytes(body)


class BoundedStreamingResponse(StreamingResponse):
    """A streaming response whose every send must finish within ``send_timeout_s``: a client that
    stops reading is dropped and its reply's engine slots are freed, as on the WebSocket."""

    def __init__(self, content: AsyncGenerator[bytes, None], *, send_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.content = content
        self.send_timeout_s = send_timeout_s

    async def stream_response(self, send: Send) -> None:
        async def bounded(message: Message) -> None:
            await asyncio.wait_for(send(message), self.send_timeout_s)

        try:
            await super().stream_response(bounded)
        except TimeoutError:
            log.warning("a client read nothing for %g s; its response was dropped", self.send_timeout_s)
        finally:
            await self.content.aclose()


def streaming(content: AsyncGenerator[bytes, None], runtime: Runtime, **kwargs: Any) -> StreamingResponse:
    return BoundedStreamingResponse(content, send_timeout_s=runtime.config.send_timeout_s, **kwargs)


def require_json(request: Request) -> None:
    """Only ``application/json``: a web page on another site can send a form or ``text/plain``
    without asking the server first (no CORS preflight), but never JSON."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedMediaType(f"send the body as application/json, not {media_type[:60] or 'nothing'!r}")


async def json_body(request: Request, limit: int) -> dict[str, Any]:
    raw = await read_body(request, limit)
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InvalidInput("body is not valid JSON", code="invalid_json") from exc
    if not isinstance(data, dict):
        raise InvalidInput("body must be a JSON object", code="invalid_message")
    return data


async def invocations(request: Request) -> Response:
    runtime = runtime_of(request)
    try:
        reply = await open_reply(runtime, request, await _invocation(request, runtime))
    except SpeakstreamError as exc:
        return error_response(exc, runtime)
    headers = {"X-Request-Id": reply.request_id, "Cache-Control": "no-store", **trace_header(reply)}
    if "text/event-stream" in request.headers.get("accept", ""):
        return streaming(sse_stream(reply, runtime), runtime, media_type="text/event-stream", headers=headers)
    headers["X-Sample-Rate"] = str(reply.sample_rate)
    return await audio_response(reply, runtime, "http", media_type=reply.fmt.mime_type, headers=headers)


async def _invocation(request: Request, runtime: Runtime) -> SpeechRequest:
    """JSON, or plain text with the options as query parameters."""
    limit = body_limit(runtime)
    if "application/json" in request.headers.get("content-type", ""):
        data = await json_body(request, limit)
    else:
        raw = await read_body(request, limit)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput("body is not valid UTF-8 text", code="invalid_utf8") from exc
        data = {**request.query_params, "text": text}
    options = Options.parse(data, strings=True)
    return SpeechRequest(data.get("text"), options, "http", request_id=_request_id(data))


def trace_header(reply: Reply) -> dict[str, str]:
    """``X-Trace-Id`` with the reply's trace id, when the server traces."""
    return {"X-Trace-Id": reply.trace.trace_id} if reply.trace.trace_id else {}


def _request_id(data: dict[str, Any]) -> str | None:
    value = data.get("request_id")
    return str(value)[:128] if value else None


async def audio_response(reply: Reply, runtime: Runtime, transport: str, **kwargs: Any) -> Response:
    """The reply's audio as a streaming response, begun once its first output is made: a reply
    that fails before any audio (nothing speakable, a language the server cannot read) is an HTTP
    error with its reason, not a 200 with an empty body."""
    outputs = reply.outputs()
    try:
        first = await anext(outputs, None)
    except SpeakstreamError as exc:
        return error_response(exc, runtime)
    return streaming(audio_stream(reply, runtime, transport, outputs, first), runtime, **kwargs)


async def audio_stream(
    reply: Reply,
    runtime: Runtime,
    transport: str,
    outputs: AsyncIterator[ChunkOut] | None = None,
    first: ChunkOut | None = None,
) -> AsyncGenerator[bytes, None]:
    """The encoded audio as it is made (after ``first``, when the caller took it from ``outputs``).
    An error after the first byte can only end the stream."""
    try:
        if first is not None and first.data:
            yield first.data
        async for out in outputs if outputs is not None else reply.outputs():
            if out.data:
                yield out.data
    except SpeakstreamError as exc:
        runtime.error(exc)
        log.warning("%s %s failed mid-stream: %s", transport, reply.request_id, exc.message)
        return
    if reply.stats.ttfa_s is not None:
        runtime.metrics.ttfa.labels(transport).observe(reply.stats.ttfa_s)


def sse_parts(data: bytes, size: int) -> list[tuple[int, bytes]]:
    """Audio cut into parts of at most ``size`` bytes (at least one, maybe empty), so no event
    is larger than ``audio_frame_bytes`` of audio in base64, whatever a window holds."""
    return [(start, data[start : start + size]) for start in range(0, max(len(data), 1), size)]


async def sse_stream(reply: Reply, runtime: Runtime) -> AsyncGenerator[bytes, None]:
    rid = reply.request_id
    yield sse_event(
        "audio_stream_start",
        {
            "request_id": rid,
            "format": reply.fmt.name,
            "sample_rate": reply.sample_rate,
            "mime_type": reply.fmt.mime_type,
            "voice": reply.settings.voice,
            "speed": reply.settings.speed,
        },
    )
    sequence = 0
    try:
        async for out in reply.outputs():
            if not out.data and not out.text:
                continue
            for start, part in sse_parts(out.data, runtime.config.audio_frame_bytes):
                share = len(part) / len(out.data) if out.data else 1.0
                first = start == 0
                yield sse_event(
                    "audio_chunk",
                    {
                        "request_id": rid,
                        "sequence": sequence,
                        "text": out.text if first else "",
                        "offset_s": round(out.offset_s + out.duration_s * start / max(len(out.data), 1), 4),
                        "duration_s": round(out.duration_s * share, 4),
                        "audio": base64.b64encode(part).decode("ascii"),
                        "words": [w.to_dict() for w in out.words] if first else [],
                        **({"voice": out.voice} if first and out.voice else {}),
                    },
                )
                sequence += 1
    except SpeakstreamError as exc:
        runtime.error(exc)
        yield sse_event("error", {**exc.to_dict(), "request_id": rid})
        return
    if reply.stats.ttfa_s is not None:
        runtime.metrics.ttfa.labels("sse").observe(reply.stats.ttfa_s)
    yield sse_event(
        "audio_stream_end",
        {
            "request_id": rid,
            "audio_bytes": reply.stats.audio_bytes,
            "duration_s": round(reply.stats.duration_s, 4),
            "chunks": reply.stats.chunks,
            "timings": reply.stats.timings(),
            **({"trace_id": reply.trace.trace_id} if reply.trace.trace_id else {}),
        },
    )
