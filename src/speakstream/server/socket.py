"""One WebSocket session core for every protocol: our bidirectional one and each vendor's dialect.

The core decides once what every socket does: admission (a server still loading, or holding its
most sessions, accepts the socket, says why in the protocol's error shape and closes with 1013 so
the client retries), the owned tasks (a reader, a writer draining a bounded outbox, and any the
protocol adds), the idle timeout, a bad frame (an error in the protocol's shape, and the session
goes on), a bug (an internal error, and the session goes on), a client that stops reading
(dropped after ``send_timeout_s``), a client's close (the protocol finishes or stops its work,
then 1000), the server's shutdown (a ``server_shutdown`` error, then 1001) and the teardown
(every task cancelled and awaited, the session's work cancelled at the scheduler). A protocol
says only what its frames mean and what it sends: ``parse``, ``handle``, ``error_message`` and
the hooks below.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from enum import Enum
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from speakstream.errors import Overloaded, SpeakstreamError, internal_error
from speakstream.server.encoding import ChunkOut
from speakstream.server.outbox import Outbox, Outgoing, send_frame
from speakstream.server.reply import Reply
from speakstream.server.runtime import Runtime

log = logging.getLogger("speakstream.session")
OUTBOX_FRAMES = 64
"""Frames a session holds for a client before its producers wait (bounded, as every queue)."""


class SessionState(Enum):
    CONNECTING = "connecting"
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


_MOVES = {
    SessionState.CONNECTING: {SessionState.OPEN, SessionState.CLOSED},
    SessionState.OPEN: {SessionState.CLOSING, SessionState.CLOSED},
    SessionState.CLOSING: {SessionState.CLOSED},
    SessionState.CLOSED: set(),
}


class SocketSession:
    """A WebSocket session; a protocol subclasses it and fills in its part."""

    transport = "socket"
    """The protocol's name: its sessions' id prefix and its label in metrics."""

    def __init__(self, websocket: WebSocket, runtime: Runtime, client: str = "") -> None:
        self.ws = websocket
        self.rt = runtime
        self.client = client
        self.config = runtime.config
        self.id = runtime.new_id(self.transport)
        self.state = SessionState.CONNECTING
        self.outbox = Outbox(maxsize=OUTBOX_FRAMES)
        self.last_message_at = time.monotonic()
        self._close_queued = False

    # The protocol's part

    async def start(self) -> None:
        """Check the handshake and greet the client (raise to refuse it: an error, then 1008)."""

    def workers(self) -> list[Coroutine[Any, Any, None]]:
        """Tasks of the protocol's own that run as long as the session (owned by the core)."""
        return []

    def parse(self, frame: str | bytes) -> Any:
        """One client frame as the protocol's message (raise a ``SpeakstreamError`` if it is bad)."""
        raise NotImplementedError

    def reference(self, message: Any) -> str | None:
        """What an error about ``message`` names (its request or context), if anything."""
        return None

    async def handle(self, message: Any) -> bool:
        """Act on one message; True when the client asked to end the session."""
        raise NotImplementedError

    def error_message(self, exc: SpeakstreamError, reference: str | None) -> str:
        """``exc`` in the protocol's error shape."""
        raise NotImplementedError

    def read_timeout(self) -> float:
        """How long the reader waits for a frame before it looks at the session (``quiet``)."""
        return self.config.idle_timeout_s

    def quiet(self) -> bool:
        """No frame came within ``read_timeout``: True keeps the session open (it has work, or
        the idle timeout has not passed), False closes it as idle."""
        return False

    def idle_error(self) -> SpeakstreamError | None:
        """What the client is told when its session closes as idle (None: only the close)."""
        return None

    async def finish(self) -> None:
        """The client asked to end: finish or stop the session's work before the close."""

    async def stop_work(self) -> None:
        """The session ends: cancel and await whatever the protocol started."""

    def payload(self, item: Outgoing) -> str | bytes | None:
        """What the writer sends for ``item`` (a protocol that keeps a log of what was sent may
        answer a cancel with it)."""
        return item.payload

    def sent(self, item: Outgoing, payload: str | bytes | None) -> None:
        """``item`` went out as ``payload``."""

    # For the protocol

    async def put(self, item: Outgoing, *, control: bool = False) -> None:
        await self.outbox.put(item, control=control)

    async def error(self, exc: SpeakstreamError, reference: str | None) -> None:
        """``exc`` to the client in the protocol's shape, ahead of queued audio; counted."""
        self.rt.error(exc)
        await self.put(Outgoing(self.error_message(exc, reference)), control=True)

    async def relay(self, reply: Reply, send: Callable[[ChunkOut], Awaitable[None]]) -> None:
        """Each of ``reply``'s outputs through ``send``; a bug on the way (an encoder's, a
        message's) ends that request with an internal error, not a hang."""
        try:
            async for out in reply.outputs():
                await send(out)
        except (SpeakstreamError, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("%s: request %s failed", self.id, reply.request_id)
            raise internal_error() from exc

    async def close_with(self, exc: SpeakstreamError | None, code: int, reason: str = "") -> None:
        """``exc`` (when there is one), then the close frame, after what is queued ahead of them."""
        if exc is not None:
            await self.error(exc, None)
        await self.put(Outgoing(close=(code, (reason or (exc.message if exc else ""))[:120])), control=True)
        self._close_queued = True

    # Lifecycle

    async def run(self) -> None:
        try:  # a session that cannot speak yet is refused (1013): the client retries when it can
            self.rt.require_scheduler()
            if not self.rt.open_session(self):
                raise Overloaded(f"the server holds its maximum of {self.config.max_sessions} sessions")
        except SpeakstreamError as exc:
            await self._refuse(exc)
            return
        tasks: list[asyncio.Task[Any]] = []
        try:
            await self.ws.accept()
            self._move(SessionState.OPEN)
            tasks = [asyncio.create_task(self._write(), name=f"{self.id}-writer")]
            await self._begin(tasks)
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            reader = tasks[1] if len(tasks) > 1 else None
            if reader in done and _asked_to_close(reader):
                await self.finish()
                if not self._close_queued:
                    await self.close_with(None, 1000, "closed by client")
            if self._close_queued:  # let the last messages and the close frame out
                await asyncio.wait([tasks[0]], timeout=self.config.send_timeout_s)
        finally:
            await self._teardown(tasks)

    async def _begin(self, tasks: list[asyncio.Task[Any]]) -> None:
        """The handshake's checks, then the reader and the protocol's own tasks."""
        try:
            await self.start()
        except SpeakstreamError as exc:
            await self.close_with(exc, 1008)
            return
        tasks.append(asyncio.create_task(self._read(), name=f"{self.id}-reader"))
        tasks += [asyncio.create_task(work, name=f"{self.id}-work") for work in self.workers()]

    async def _teardown(self, tasks: list[asyncio.Task[Any]]) -> None:
        if self.state is SessionState.OPEN:
            self._move(SessionState.CLOSING)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.stop_work()
        if self.rt.scheduler is not None:
            self.rt.scheduler.cancel(self.id)
        self.rt.close_session(self)
        with contextlib.suppress(Exception):  # the peer may be gone or stuck: nothing left to tell it
            await asyncio.wait_for(self.ws.close(1000), 1.0)
        self._move(SessionState.CLOSED)

    async def _refuse(self, error: SpeakstreamError) -> None:
        self.rt.error(error)
        with contextlib.suppress(Exception):
            await self.ws.accept()
            await asyncio.wait_for(self.ws.send_text(self.error_message(error, None)), 1.0)
            await asyncio.wait_for(self.ws.close(1013, "try again later"), 1.0)
        self._move(SessionState.CLOSED)

    async def shutdown(self, reason: str) -> None:
        """Server stopping: tell the client why and close with 1001 (going away), within the
        grace period."""
        if self.state is not SessionState.OPEN:
            return
        self._move(SessionState.CLOSING)
        error = SpeakstreamError(reason, code="server_shutdown", retryable=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.send_text(self.error_message(error, None)), 1.0)
            await asyncio.wait_for(self.ws.close(1001, reason[:120]), 1.0)

    def _move(self, to: SessionState) -> None:
        if to not in _MOVES[self.state]:
            raise RuntimeError(f"session {self.id}: cannot go from {self.state.value} to {to.value}")
        self.state = to

    # Reader

    async def _read(self) -> bool:
        """Read until the session ends; True when the client asked to end it."""
        while self.state is SessionState.OPEN:
            try:
                message = await asyncio.wait_for(self.ws.receive(), max(0.0, self.read_timeout()))
            except TimeoutError:
                if self.quiet():
                    continue
                await self.close_with(self.idle_error(), 1000, "idle timeout")
                return False
            except WebSocketDisconnect:
                return False
            if message["type"] == "websocket.disconnect":
                return False
            self.last_message_at = time.monotonic()
            frame = message.get("text") if message.get("text") is not None else message.get("bytes")
            if frame is not None and await self._frame(frame):
                return True
        return False

    async def _frame(self, frame: str | bytes) -> bool:
        """Act on one frame; True when the session should end."""
        reference = None
        try:
            message = self.parse(frame)
            reference = self.reference(message)
            return await self.handle(message)
        except SpeakstreamError as exc:
            await self.error(exc, reference)
        except Exception:  # a bug: the client hears of it, the session goes on
            log.exception("%s: a frame failed", self.id)
            await self.error(internal_error(), reference)
        return False

    # Writer

    async def _write(self) -> None:
        while True:
            item = await self.outbox.get()
            payload = self.payload(item)
            if payload:
                try:
                    await asyncio.wait_for(send_frame(self.ws, payload), self.config.send_timeout_s)
                except TimeoutError:
                    log.warning("%s: client stopped reading for %.0f s; dropped", self.id, self.config.send_timeout_s)
                    return
            self.sent(item, payload)
            if item.close is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.ws.close(*item.close), self.config.send_timeout_s)
                return


def _asked_to_close(reader: asyncio.Task[Any]) -> bool:
    return not reader.cancelled() and reader.exception() is None and bool(reader.result())
