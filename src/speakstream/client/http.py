"""Plain HTTP helpers: streamed audio from ``/invocations`` and its Server-Sent Events form."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

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


async def stream_audio(
    base_url: str, text: str, *, api_key: str | None = None, client: httpx.AsyncClient | None = None, **options: Any
) -> AsyncIterator[bytes]:
    """Audio bytes of ``/invocations`` as they arrive."""
    owned = client is None
    client = client or httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=300.0))
    try:
        body = {"text": text, **{k: v for k, v in options.items() if v is not None}}
        async with client.stream("POST", f"{base_url}/invocations", json=body, headers=_headers(api_key)) as response:
            await _raise_for(response)
            async for block in response.aiter_bytes():
                yield block
    finally:
        if owned:
            await client.aclose()


async def fetch_audio(base_url: str, text: str, **kwargs: Any) -> StreamedAudio:
    result = StreamedAudio()
    async for block in stream_audio(base_url, text, **kwargs):
        if result.first_byte_at is None:
            result.first_byte_at = time.perf_counter()
        result.audio += block
    return result


async def stream_events(
    url: str, body: dict[str, Any], *, api_key: str | None = None, client: httpx.AsyncClient | None = None
) -> AsyncIterator[SSEEvent]:
    """Server-Sent Events of a POST (``/invocations`` or ``/agent``), reassembled whole."""
    owned = client is None
    client = client or httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=300.0))
    reader = SSEReader()
    try:
        headers = _headers(api_key, "text/event-stream")
        async with client.stream("POST", url, json=body, headers=headers) as response:
            await _raise_for(response)
            async for block in response.aiter_bytes():
                for event in reader.feed(block):
                    yield event
            for event in reader.close():
                yield event
    finally:
        if owned:
            await client.aclose()
