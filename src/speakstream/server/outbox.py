"""A bounded queue of frames to send, from which a cancelled request's frames can be purged, and
the record of what was really sent of each request (for the ``cancelled`` answer)."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from starlette.websockets import WebSocket

from speakstream.protocol import Cancelled, encode_server_message
from speakstream.types import WordTimestamp


@dataclass(slots=True)
class Outgoing:
    """One frame for the writer, with what it means for the request's progress."""

    payload: str | bytes = b""
    request_id: str | None = None
    audio_to_s: float | None = None
    """Seconds of the reply's audio fully sent once this frame is out."""
    words: tuple[WordTimestamp, ...] = ()
    """Words this frame makes known (the first frame of a chunk carries the chunk's words)."""
    cancelled: bool = False
    """A marker: the writer answers ``cancelled`` with what it actually sent."""
    close: tuple[int, str] | None = None
    """Close the connection with (code, reason) after this frame."""
    finishes: str | None = None
    """The request this frame completes (its progress record can go)."""


async def send_frame(ws: WebSocket, payload: str | bytes) -> None:
    """One frame: binary for bytes, text for a string."""
    if isinstance(payload, bytes):
        await ws.send_bytes(payload)
    else:
        await ws.send_text(payload)


class Outbox:
    def __init__(self, maxsize: int) -> None:
        self._items: deque[Outgoing] = deque()
        self._maxsize = maxsize
        self._changed = asyncio.Condition()

    def __len__(self) -> int:
        return len(self._items)

    async def put(self, item: Outgoing, *, control: bool = False) -> None:
        """Wait for room; ``control`` frames (errors, markers) may exceed the bound by a little."""
        async with self._changed:
            limit = self._maxsize + (8 if control else 0)
            await self._changed.wait_for(lambda: len(self._items) < limit)
            self._items.append(item)
            self._changed.notify_all()

    async def get(self) -> Outgoing:
        async with self._changed:
            await self._changed.wait_for(lambda: bool(self._items))
            item = self._items.popleft()
            self._changed.notify_all()
            return item

    async def purge(self, request_id: str) -> int:
        """Drop the queued audio and messages of one request; returns how many."""
        async with self._changed:
            kept = [i for i in self._items if i.request_id != request_id or i.cancelled]
            dropped = len(self._items) - len(kept)
            self._items = deque(kept)
            self._changed.notify_all()
            return dropped


@dataclass(slots=True)
class Sent:
    """What the writer really sent of one request."""

    audio_bytes: int = 0
    audio_s: float = 0.0
    words: list[WordTimestamp] = field(default_factory=list)
    """The words of the chunks begun so far (times from the start of the reply)."""

    @property
    def last_word(self) -> WordTimestamp | None:
        """The last word whose audio was sent whole."""
        whole = [w for w in self.words if w.end_s <= self.audio_s + 1e-6]
        return whole[-1] if whole else None


class SentLog:
    """Progress of the requests being sent, kept by the writer as frames go out."""

    def __init__(self) -> None:
        self._sent: dict[str, Sent] = {}

    def start(self, request_id: str) -> None:
        self._sent[request_id] = Sent()

    def finish(self, request_id: str) -> None:
        self._sent.pop(request_id, None)

    def account(self, item: Outgoing, payload: str | bytes) -> None:
        if not isinstance(payload, bytes) or item.request_id is None or item.audio_to_s is None:
            return
        sent = self._sent.setdefault(item.request_id, Sent())
        sent.audio_bytes += len(payload)
        sent.audio_s = item.audio_to_s
        sent.words += item.words

    def cancelled(self, request_id: str) -> str:
        """The ``cancelled`` message for a request, with what was really sent of it."""
        sent = self._sent.pop(request_id, Sent())
        last = sent.last_word
        message = Cancelled(
            request_id=request_id,
            audio_bytes=sent.audio_bytes,
            duration_s=round(sent.audio_s, 4),
            last_word=None if last is None else last.word,
            heard_to_char=None if last is None or last.chars is None else last.chars[1],
        )
        return encode_server_message(message)
