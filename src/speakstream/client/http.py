"""Plain HTTP helpers: streamed audio from ``/invocations`` and its Server-Sent Events form.

A request that fails before its first byte (a refused or lost connection, 502/503/504) is sent
again with backoff (``retry``), and ``on_reconnect`` hears of each try; once audio has begun, a
broken stream raises a retryable ``stream_broken`` (``fetch_audio`` then starts over).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from speakstream.client.retry import RETRY_HTTP_STATUSES, Backoff, OnReconnect, Reconnect
from speakstream.errors import SpeakstreamError
from speakstream.protocol import SSEEvent, SSEReader


@dataclass(slots=True)
class StreamedAudio:
    audio: bytearray = field(default_factory=bytearray)
    content_type: str = ""
    sent_at: float = field(default_factory=time.perf_counter)
    first_byte_at: float | None = None

    @property
    def ttfb_s(self) -> float | None:
        return None if self.first_byte_at is None else self.first_byte_at - self.sent_at


def _headers(api_key: str | None, accept: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    if accept:
        headers["Accept"] = accept
    return headers


async def _raise_for(response: httpx.Response) -> None:
    if response.status_code >= 400:
        body = await response.aread()
        raise SpeakstreamError(
            f"HTTP {response.status_code}: {body[:300].decode('utf-8', 'replace')}",
            code=f"http_{response.status_code}",
            retryable=response.status_code >= 500,
        )


async def _post_stream(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    retry: Backoff,
    on_reconnect: OnReconnect | None,
) -> AsyncIterator[bytes]:
    """The response body of a POST, tried again (before its first byte) as ``retry`` says."""
    delays = retry.delays()
    for attempt in range(1, retry.attempts + 2):
        began = False
        try:
            async with client.stream("POST", url, json=body, headers=headers) as response:
                if response.status_code in RETRY_HTTP_STATUSES and attempt <= retry.attempts:
                    failure = (response.status_code, response.reason_phrase, _retry_after(response))
                else:
                    await _raise_for(response)
                    async for block in response.aiter_bytes():
                        began = True
                        yield block
                    return
        except httpx.TransportError as exc:
            if began:
                raise SpeakstreamError(f"the audio stream broke: {exc}", code="stream_broken", retryable=True) from exc
            if attempt > retry.attempts:
                raise SpeakstreamError(f"cannot reach {url}: {exc}", code="connect_failed", retryable=True) from exc
            failure = (0, str(exc) or type(exc).__name__, None)
        code, reason, asked = failure
        delay = max(next(delays), asked or 0.0)
        if on_reconnect is not None:
            on_reconnect(Reconnect(attempt, round(delay, 3), code, reason))
        await asyncio.sleep(delay)


def _retry_after(response: httpx.Response, most_s: float = 30.0) -> float | None:
    try:
        return min(most_s, float(response.headers.get("Retry-After", "")))
    except ValueError:
        return None


async def stream_audio(
    base_url: str,
    text: str,
    *,
    api_key: str | None = None,
    client: httpx.AsyncClient | None = None,
    retry: Backoff | None = None,
    on_reconnect: OnReconnect | None = None,
    **options: Any,
) -> AsyncIterator[bytes]:
    """Audio bytes of ``/invocations`` as they arrive."""
    owned = client is None
    client = client or httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=300.0))
    try:
        body = {"text": text, **{k: v for k, v in options.items() if v is not None}}
        url, headers = f"{base_url}/invocations", _headers(api_key)
        async for block in _post_stream(client, url, body, headers, retry or Backoff(), on_reconnect):
            yield block
    finally:
        if owned:
            await client.aclose()


async def fetch_audio(
    base_url: str, text: str, *, retry: Backoff | None = None, on_reconnect: OnReconnect | None = None, **kwargs: Any
) -> StreamedAudio:
    """The whole audio; a stream that breaks midway is fetched again from the start."""
    retry = retry or Backoff()
    for attempt in range(retry.attempts + 1):
        result = StreamedAudio()
        try:
            async for block in stream_audio(base_url, text, retry=retry, on_reconnect=on_reconnect, **kwargs):
                if result.first_byte_at is None:
                    result.first_byte_at = time.perf_counter()
                result.audio += block
            return result
        except SpeakstreamError as exc:
            if exc.code != "stream_broken" or attempt == retry.attempts:
                raise
            if on_reconnect is not None:
                on_reconnect(Reconnect(attempt + 1, 0.0, 0, exc.message))
    raise AssertionError("unreachable")


async def stream_events(
    url: str,
    body: dict[str, Any],
    *,
    api_key: str | None = None,
    client: httpx.AsyncClient | None = None,
    retry: Backoff | None = None,
    on_reconnect: OnReconnect | None = None,
) -> AsyncIterator[SSEEvent]:
    """Server-Sent Events of a POST (``/invocations`` or ``/agent``), reassembled whole."""
    owned = client is None
    client = client or httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=300.0))
    reader = SSEReader()
    try:
        headers = _headers(api_key, "text/event-stream")
        async for block in _post_stream(client, url, body, headers, retry or Backoff(), on_reconnect):
            for event in reader.feed(block):
                yield event
        for event in reader.close():
            yield event
    finally:
        if owned:
            await client.aclose()
