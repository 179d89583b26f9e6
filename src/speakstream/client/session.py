"""``SpeechSession``: an async client of the bidirectional WebSocket session.

    async with SpeechSession("ws://127.0.0.1:8080/invocations-bidirectional-stream") as session:
        request_id = await session.speak("Hello there.")
        result = await session.collect(request_id)

Frames are told apart by the protocol's rule (control only if the whole frame is a JSON
object); audio belongs to the request of the latest ``synthesis_start``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection, connect

from speakstream.errors import ProtocolError, SpeakstreamError
from speakstream.protocol import classify_frame, client_message


@dataclass(frozen=True, slots=True)
class AudioEvent:
    request_id: str | None
    data: bytes
    received_at: float


@dataclass(frozen=True, slots=True)
class ControlEvent:
    message: dict[str, Any]
    received_at: float

    @property
    def type(self) -> str:
        return str(self.message.get("type"))

    @property
    def request_id(self) -> str | None:
        value = self.message.get("request_id")
        return None if value is None else str(value)


Event = AudioEvent | ControlEvent
FINAL_TYPES = ("synthesis_complete", "cancelled", "error")


@dataclass(slots=True)
class SpeechResult:
    """Everything one request produced, with client-side timings."""

    request_id: str
    sent_at: float
    audio: bytearray = field(default_factory=bytearray)
    messages: list[dict[str, Any]] = field(default_factory=list)
    first_audio_at: float | None = None
    audio_times: list[tuple[float, int]] = field(default_factory=list)
    """(arrival time, bytes) of every audio frame."""

    @property
    def final(self) -> dict[str, Any] | None:
        return next((m for m in reversed(self.messages) if m.get("type") in FINAL_TYPES), None)

    @property
    def ttfa_s(self) -> float | None:
        return None if self.first_audio_at is None else self.first_audio_at - self.sent_at

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("type") == kind]


class SpeechSession:
    """One persistent session; ``send_binary`` sends client messages as binary frames."""

    def __init__(
        self, url: str, *, api_key: str | None = None, send_binary: bool = False, open_timeout: float = 30.0
    ) -> None:
        self.url = url
        self.api_key = api_key
        self.send_binary = send_binary
        self.open_timeout = open_timeout
        self.info: dict[str, Any] = {}
        self._ws: ClientConnection | None = None
        self._current: str | None = None
        self._ids = itertools.count(1)

    async def __aenter__(self) -> SpeechSession:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else None
        try:
            self._ws = await connect(self.url, additional_headers=headers, max_size=None,
                                     open_timeout=self.open_timeout)
        except (OSError, websockets.exceptions.InvalidHandshake) as exc:
            raise SpeakstreamError(f"cannot open a session at {self.url}: {exc}", code="connect_failed",
                                   retryable=True) from exc
        hello = await self.receive()
        if isinstance(hello, ControlEvent) and hello.type == "session_start":
            self.info = hello.message
        elif isinstance(hello, ControlEvent) and hello.type == "error":
            await self.close()
            raise SpeakstreamError(hello.message.get("message", "refused"), code=hello.message.get("code"),
                                   retryable=bool(hello.message.get("retryable")))
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    @property
    def ws(self) -> ClientConnection:
        if self._ws is None:
            raise RuntimeError("the session is not open; use `async with SpeechSession(...)`")
        return self._ws

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()

    async def send(self, kind: str, **fields: Any) -> None:
        message = client_message(kind, **fields)
        await self.ws.send(message.encode("utf-8") if self.send_binary else message)

    async def send_raw(self, frame: str | bytes) -> None:
        """Send any frame as is (for tests of the server's error handling)."""
        await self.ws.send(frame)

    def new_request_id(self) -> str:
        return f"c{next(self._ids)}"

    async def speak(self, text: str, *, request_id: str | None = None, **options: Any) -> str:
        request_id = request_id or self.new_request_id()
        await self.send("text", text=text, request_id=request_id, **options)
        return request_id

    async def append(self, text: str, *, request_id: str | None = None, **options: Any) -> None:
        await self.send("append", text=text, request_id=request_id, **options)

    async def flush(self, *, request_id: str | None = None) -> None:
        await self.send("flush", request_id=request_id)

    async def cancel(self, *, request_id: str | None = None) -> None:
        await self.send("cancel", request_id=request_id)

    async def configure(self, **options: Any) -> None:
        await self.send("config", **options)

    async def receive(self) -> Event:
        try:
            frame = await self.ws.recv()
        except websockets.exceptions.ConnectionClosed as exc:
            raise SpeakstreamError(f"session closed ({exc.rcvd.code if exc.rcvd else 'no code'})",
                                   code="session_closed") from exc
        now = time.perf_counter()
        kind = classify_frame(frame)
        if isinstance(kind, bytes):
            return AudioEvent(self._current, kind, now)
        if kind.get("type") == "synthesis_start":
            self._current = str(kind.get("request_id"))
        return ControlEvent(kind, now)

    async def events(self) -> AsyncIterator[Event]:
        while True:
            yield await self.receive()

    async def collect(self, request_id: str, *, sent_at: float | None = None) -> SpeechResult:
        """Read events until ``request_id`` completes, is cancelled or fails."""
        result = SpeechResult(request_id, sent_at or time.perf_counter())
        async for event in self.events():
            if isinstance(event, AudioEvent):
                if event.request_id == request_id:
                    result.audio += event.data
                    result.audio_times.append((event.received_at, len(event.data)))
                    if result.first_audio_at is None:
                        result.first_audio_at = event.received_at
                continue
            if event.request_id in (request_id, None) or event.type == "cancelled":
                result.messages.append(event.message)
            if event.request_id == request_id and event.type in FINAL_TYPES:
                return result
            if event.type == "error" and event.request_id is None and event.message.get("code") == "server_shutdown":
                raise ProtocolError(event.message.get("message", "server shutting down"), code="server_shutdown")
        raise AssertionError("unreachable")  # events() never ends by itself
