"""The client side of the session protocol, independent of how frames travel.

``Channel`` holds what every client of a speech session does (send messages, tell audio from
control frames, follow the current request, collect a request's results); ``SpeechSession``
(WebSocket) and ``LoopbackChannel`` (in-process, for the server's own agent routes) only move
frames.
"""

from __future__ import annotations

import itertools
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from speakstream.errors import ProtocolError
from speakstream.protocol import (
    FINAL_TYPES,
    AudioEvent,
    ControlEvent,
    ErrorMessage,
    Event,
    SessionStart,
    SynthesisStart,
    classify_frame,
    client_message,
    parse_server_message,
)


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


RECONNECTED = "reconnected"
"""A client-side control event (never on the wire): the session was lost and opened again."""


class Channel(ABC):
    """A speech session seen from the client; subclasses move frames."""

    send_binary = False

    def __init__(self) -> None:
        self.info: dict[str, Any] = {}
        self._current: str | None = None
        self._ids = itertools.count(1)

    @abstractmethod
    async def send_raw(self, frame: str | bytes) -> None:
        """Send one frame as it is."""

    @abstractmethod
    async def _recv_frame(self) -> str | bytes:
        """The next frame from the server; raises ``SpeakstreamError`` once the session is over."""

    async def send(self, kind: str, **fields: Any) -> None:
        message = client_message(kind, **fields)
        await self.send_raw(message.encode("utf-8") if self.send_binary else message)

    def new_request_id(self) -> str:
        return f"c{next(self._ids)}"

    async def speak(self, text: str, *, request_id: str | None = None, **options: Any) -> str:
        request_id = request_id or self.new_request_id()
        await self.send("text", text=text, request_id=request_id, **options)
        return request_id

    async def append(
        self, text: str, *, request_id: str | None = None, chunk: bool | None = None, **options: Any
    ) -> None:
        """Add text to the open request; ``chunk=True`` says it completes a chunk (speak it now)."""
        await self.send("append", text=text, request_id=request_id, chunk=chunk or None, **options)

    async def flush(self, *, request_id: str | None = None) -> None:
        await self.send("flush", request_id=request_id)

    async def cancel(self, *, request_id: str | None = None) -> None:
        await self.send("cancel", request_id=request_id)

    async def configure(self, **options: Any) -> None:
        await self.send("config", **options)

    async def receive(self) -> Event:
        frame = await self._recv_frame()
        now = time.perf_counter()
        kind = classify_frame(frame)
        if isinstance(kind, bytes):
            return AudioEvent(self._current, kind, now)
        parsed = parse_server_message(kind)
        if isinstance(parsed, SynthesisStart):
            self._current = parsed.request_id
        return ControlEvent(kind, now, parsed)

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
            if isinstance(event.parsed, ErrorMessage) and event.parsed.code == "server_shutdown":
                raise ProtocolError(event.parsed.message, code="server_shutdown", retryable=True)
            if event.type == RECONNECTED:  # the client's own event: the request went with the old session
                lost = f"the session was lost while speaking {request_id}"
                raise ProtocolError(lost, code="session_lost", retryable=True)
        raise AssertionError("unreachable")  # events() never ends by itself

    async def _expect_hello(self) -> None:
        hello = await self.receive()
        if isinstance(hello, ControlEvent) and isinstance(hello.parsed, SessionStart):
            self.info = hello.message
            return
        if isinstance(hello, ControlEvent) and isinstance(hello.parsed, ErrorMessage):
            error = hello.parsed
            raise ProtocolError(error.message, code=error.code, retryable=error.retryable)
        raise ProtocolError("the server refused the session", code="session_refused")
