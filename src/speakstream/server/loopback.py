"""An in-process session: a ``BidiSession`` driven over queues instead of a socket.

The server's own agent routes speak through it, so they share every rule of the WebSocket
session (chunking, cancel, framing) without a network hop.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from speakstream.channel import Channel
from speakstream.errors import SpeakstreamError
from speakstream.server.bidi import BidiSession
from speakstream.server.runtime import Runtime

_CLOSED = object()


class LoopbackSocket:
    """The server half: the part of Starlette's ``WebSocket`` a ``BidiSession`` uses."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=64)
        self.outgoing: asyncio.Queue[Any] = asyncio.Queue(maxsize=256)
        self.closed = False

    async def accept(self) -> None:
        return None

    async def receive(self) -> dict[str, Any]:
        return await self.incoming.get()

    async def send_text(self, text: str) -> None:
        await self.outgoing.put(text)

    async def send_bytes(self, data: bytes) -> None:
        await self.outgoing.put(data)

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(asyncio.QueueFull):
                self.outgoing.put_nowait(_CLOSED)


class LoopbackChannel(Channel):
    """The client half, with the same API as ``SpeechSession``; owns the session's task."""

    def __init__(self, runtime: Runtime, client: str = "") -> None:
        super().__init__()
        self.socket = LoopbackSocket()
        self._session = BidiSession(self.socket, runtime, client)  # type: ignore[arg-type]
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopbackChannel:
        self._task = asyncio.create_task(self._session.run(), name="loopback-session")
        await self._expect_hello()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._task is None:
            return
        with contextlib.suppress(asyncio.QueueFull):
            self.socket.incoming.put_nowait({"type": "websocket.disconnect", "code": 1000})
        try:
            await asyncio.wait_for(asyncio.shield(self._task), 5.0)
        except TimeoutError:
            self._task.cancel()
        finally:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def send_raw(self, frame: str | bytes) -> None:
        key = "bytes" if isinstance(frame, bytes) else "text"
        await self.socket.incoming.put({"type": "websocket.receive", key: frame})

    async def _recv_frame(self) -> str | bytes:
        frame = await self.socket.outgoing.get()
        if frame is _CLOSED:
            raise SpeakstreamError("session closed", code="session_closed")
        return frame  # type: ignore[no-any-return]
