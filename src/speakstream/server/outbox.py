"""A bounded queue of frames to send, from which a cancelled request's frames can be purged."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from speakstream.types import WordTimestamp


@dataclass(slots=True)
class Outgoing:
    """One frame for the writer, with what it means for the request's progress."""

    payload: str | bytes = b""
    request_id: str | None = None
    audio_to_s: float | None = None
    """Seconds of the reply's audio fully sent once this frame is out."""
    words: tuple[WordTimestamp, ...] = ()
    cancelled: bool = False
    """A marker: the writer answers ``cancelled`` with what it actually sent."""
    close: tuple[int, str] | None = None
    """Close the connection with (code, reason) after this frame."""
    finishes: str | None = None
    """The request this frame completes (its progress record can go)."""


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
