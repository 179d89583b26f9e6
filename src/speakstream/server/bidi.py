"""The persistent bidirectional WebSocket session (``/invocations-bidirectional-stream``).

Three owned tasks: the reader parses client frames (text or binary) and acts on them; the runner
speaks requests one after another; the writer sends frames from a bounded outbox. Synthesis of
the next chunk overlaps sending the current one (see ``Reply``). A bad message gets an error frame
and the session goes on; cancel (barge-in) stops synthesis, drops queued audio and answers with
what was really sent. The session ends on ``close``, disconnect, idle timeout, a client that stops
reading, or server shutdown; every task is cancelled and awaited on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from enum import Enum
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from speakstream.engine.base import check_text
from speakstream.errors import InvalidInput, Overloaded, ProtocolError, SpeakstreamError, internal_error
from speakstream.protocol import (
    AppendMessage,
    CancelMessage,
    ClientMessage,
    CloseMessage,
    ConfigMessage,
    ErrorMessage,
    FlushMessage,
    Options,
    ServerMessage,
    SessionStart,
    SynthesisComplete,
    SynthesisStart,
    TextMessage,
    WordTimestamps,
    encode_server_message,
    parse_client_message,
    safe_audio_frames,
)
from speakstream.server.outbox import Outbox, Outgoing, SentLog, send_frame
from speakstream.server.reading import validate
from speakstream.server.reply import ChunkOut, Reply
from speakstream.server.runtime import Runtime

log = logging.getLogger("speakstream.session")


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


class BidiSession:
    def __init__(self, websocket: WebSocket, runtime: Runtime, client: str = "") -> None:
        self.ws = websocket
        self.rt = runtime
        self.client = client
        self.config = runtime.config
        self.id = runtime.new_id("sess")
        self.state = SessionState.CONNECTING
        self.defaults = runtime.defaults
        """The server's defaults, then what the session's ``configure`` messages set over them."""
        self._outbox = Outbox(maxsize=64)
        self._pending: deque[Reply] = deque()
        self._request_ready = asyncio.Event()
        self._active: tuple[Reply, asyncio.Task[None]] | None = None
        self._stream: Reply | None = None
        self._stream_text_at = 0.0
        self._sent = SentLog()

    def _move(self, to: SessionState) -> None:
        if to not in _MOVES[self.state]:
            raise RuntimeError(f"session {self.id}: cannot go from {self.state.value} to {to.value}")
        self.state = to

    # Lifecycle

    async def run(self) -> None:
        try:  # a session that cannot speak yet is refused (1013): the client retries when it can
            self.rt.require_scheduler()
        except SpeakstreamError as exc:
            await self._refuse(exc)
            return
        if not self.rt.open_session(self):
            await self._refuse(Overloaded(f"the server holds its maximum of {self.config.max_sessions} sessions"))
            return
        tasks: list[asyncio.Task[Any]] = []
        try:
            await self.ws.accept()
            self._move(SessionState.OPEN)
            tasks = [
                asyncio.create_task(self._read(), name=f"{self.id}-reader"),
                asyncio.create_task(self._run_requests(), name=f"{self.id}-runner"),
                asyncio.create_task(self._write(), name=f"{self.id}-writer"),
            ]
            await self._put(self._hello())
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            reader, writer = tasks[0], tasks[2]
            if reader in done and not reader.cancelled() and reader.exception() is None and reader.result():
                await asyncio.wait([writer], timeout=self.config.send_timeout_s)  # let the close frame out
        finally:
            await self._teardown(tasks)

    async def _teardown(self, tasks: list[asyncio.Task[Any]]) -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._active is not None:
            self._active[1].cancel()
            await asyncio.gather(self._active[1], return_exceptions=True)
        if self.rt.scheduler is not None:
            self.rt.scheduler.cancel(self.id)
        self.rt.close_session(self)
        with contextlib.suppress(Exception):  # the peer may be gone or stuck: nothing left to tell it
            await asyncio.wait_for(self.ws.close(1000), 1.0)
        self._move(SessionState.CLOSED)

    async def _refuse(self, error: SpeakstreamError) -> None:
        self.rt.error(error)
        await self.ws.accept()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.send_text(encode_server_message(ErrorMessage.of(error))), 1.0)
            await asyncio.wait_for(self.ws.close(1013, "try again later"), 1.0)
        self._move(SessionState.CLOSED)

    async def shutdown(self, reason: str) -> None:
        """Server stopping: tell the client why and close, within the grace period."""
        if self.state is not SessionState.OPEN:
            return
        self._move(SessionState.CLOSING)
        error = ErrorMessage(code="server_shutdown", message=reason, retryable=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.send_text(encode_server_message(error)), 1.0)
            await asyncio.wait_for(self.ws.close(1001, reason[:120]), 1.0)

    def _hello(self) -> Outgoing:
        return self._message(
            SessionStart(
                session_id=self.id,
                voice=self.defaults.voice or "",
                speed=self.defaults.speed or 1.0,
                format=self.defaults.format or "pcm",
                sample_rate=24_000,
                limits=self.config.limits(),
            )
        )

    # Reader

    async def _read(self) -> bool:
        """Read until the session ends; True when it asked the writer to close (a graceful end)."""
        while self.state is SessionState.OPEN:
            try:
                message = await asyncio.wait_for(self.ws.receive(), self._read_timeout())
            except TimeoutError:
                if self._text_idle():
                    continue
                if self._busy():
                    continue
                await self._put(Outgoing(close=(1000, "idle timeout")), control=True)
                return True
            except WebSocketDisconnect:
                return False
            if message["type"] == "websocket.disconnect":
                return False
            frame = message.get("text") if message.get("text") is not None else message.get("bytes")
            if frame is None:
                continue
            if await self._handle_frame(frame):
                return True
        return False

    async def _handle_frame(self, frame: str | bytes) -> bool:
        """Act on one frame; True when the session should end."""
        request_id = None
        try:
            message = parse_client_message(frame, max_bytes=self.config.max_frame_bytes)
            request_id = getattr(message, "request_id", None)
            return await self._handle(message)
        except SpeakstreamError as exc:
            await self._error(exc, request_id)
            return False
        except Exception:  # a bug: the client hears of it, the session goes on
            log.exception("session %s: a frame failed", self.id)
            await self._error(internal_error(), request_id)
            return False

    async def _handle(self, message: ClientMessage) -> bool:
        if isinstance(message, TextMessage):
            check_text(message.text)
            reply = self._new_reply(message.request_id, message.options)
            await reply.speak(message.text)
            self._enqueue(reply)
        elif isinstance(message, AppendMessage):
            await self._append(message)
        elif isinstance(message, FlushMessage):
            self._flush(message)
        elif isinstance(message, CancelMessage):
            await self._cancel(message.request_id)
        elif isinstance(message, ConfigMessage):
            self._configure(message.options)
        elif isinstance(message, CloseMessage):
            await self._cancel(None, answer=False)
            await self._put(Outgoing(close=(1000, "closed by client")), control=True)
            return True
        return False

    def _new_reply(self, request_id: str | None, options: Options) -> Reply:
        if len(self._pending) >= self.config.max_pending_requests:
            raise Overloaded(
                f"{self.config.max_pending_requests} requests are already waiting", code="too_many_requests"
            )
        if request_id is not None and request_id in self._known_ids():
            raise ProtocolError(f"request_id {request_id!r} is already in use", code="duplicate_request_id")
        settings = self.rt.settings(options.over(self.defaults))
        return self.rt.reply(self.id, request_id, settings, self.client, route="websocket")

    def _known_ids(self) -> set[str]:
        ids = {r.request_id for r in self._pending}
        if self._active is not None:
            ids.add(self._active[0].request_id)
        return ids

    def _enqueue(self, reply: Reply) -> None:
        self._pending.append(reply)
        self._request_ready.set()

    async def _append(self, message: AppendMessage) -> None:
        stream = self._stream
        if stream is not None and message.request_id not in (None, stream.request_id):
            raise ProtocolError(
                f"request {stream.request_id!r} is still open; flush it before appending to another",
                code="stream_open",
            )
        fresh = stream is None
        if stream is None:
            stream = self._new_reply(message.request_id, message.options)
        if message.chunk:
            stream.push_chunk(message.text)
        else:
            await stream.apush(message.text)
        self._stream_text_at = time.monotonic()
        if fresh:
            self._enqueue(stream)
            self._stream = stream

    def _flush(self, message: FlushMessage) -> None:
        stream = self._stream
        if stream is None or message.request_id not in (None, stream.request_id):
            raise ProtocolError("there is no open appended request to flush", code="nothing_to_flush")
        stream.end_input()
        self._stream = None

    def _configure(self, options: Options) -> None:
        merged = options.over(self.defaults)
        validate(self.rt.require_scheduler(), self.rt.settings(merged))
        self.defaults = merged

    def _read_timeout(self) -> float:
        if self._stream is None:
            return self.config.idle_timeout_s
        left = self._stream_text_at + self.config.text_idle_s - time.monotonic()
        return max(0.0, min(self.config.idle_timeout_s, left))

    def _text_idle(self) -> bool:
        """End the open appended request when it had no text for ``text_idle_s``."""
        stream = self._stream
        if stream is None or time.monotonic() - self._stream_text_at < self.config.text_idle_s:
            return False
        log.info(
            "session %s: request %s had no text for %.0f s; ended", self.id, stream.request_id, self.config.text_idle_s
        )
        stream.end_input()
        self._stream = None
        return True

    def _busy(self) -> bool:
        return self._active is not None or bool(self._pending) or len(self._outbox) > 0

    # Cancel

    async def _cancel(self, request_id: str | None, *, answer: bool = True) -> None:
        targets = [r.request_id for r in self._pending if request_id in (None, r.request_id)]
        self._pending = deque(r for r in self._pending if r.request_id not in targets)
        if self._active is not None and request_id in (None, self._active[0].request_id):
            reply, task = self._active
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            targets.insert(0, reply.request_id)
        if self._stream is not None and self._stream.request_id in targets:
            self._stream = None
        for target in targets:
            await self._outbox.purge(target)
            if answer:
                await self._put(Outgoing(request_id=target, cancelled=True), control=True)
        if answer and not targets:
            if request_id is not None:
                raise InvalidInput(f"no request {request_id!r} to cancel", code="unknown_request")
            await self._put(Outgoing(request_id="", cancelled=True), control=True)

    # Runner

    async def _run_requests(self) -> None:
        while True:
            while not self._pending:
                self._request_ready.clear()
                await self._request_ready.wait()
            reply = self._pending.popleft()
            task = asyncio.create_task(self._speak(reply), name=f"{self.id}-{reply.request_id}")
            self._active = (reply, task)
            try:
                await asyncio.wait([task])
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                self._active = None

    async def _speak(self, reply: Reply) -> None:
        rid = reply.request_id
        self.rt.metrics.requests.labels("websocket").inc()
        self._sent.start(rid)
        await self._put(
            self._message(
                SynthesisStart(
                    request_id=rid,
                    voice=reply.settings.voice,
                    speed=reply.settings.speed,
                    format=reply.fmt.name,
                    sample_rate=reply.sample_rate,
                    mime_type=reply.fmt.mime_type,
                ),
                rid,
            )
        )
        try:
            try:
                async for out in reply.outputs():
                    await self._send_chunk(rid, out)
            except (SpeakstreamError, asyncio.CancelledError):
                raise
            except Exception as exc:  # a bug (an encoder's, say): an error for this request, not a hang
                log.exception("session %s: request %s failed", self.id, rid)
                raise internal_error() from exc
        except SpeakstreamError as exc:
            if self._stream is reply:
                self._stream = None
            self._sent.finish(rid)
            await self._error(exc, rid)
            if exc.code == "overloaded" and not self._pending:  # over capacity: try another replica
                await self._put(Outgoing(close=(1013, "try again later")), control=True)
            return
        if reply.stats.ttfa_s is not None:
            self.rt.metrics.ttfa.labels("websocket").observe(reply.stats.ttfa_s)
        complete = self._message(
            SynthesisComplete(
                request_id=rid,
                audio_bytes=reply.stats.audio_bytes,
                duration_s=round(reply.stats.duration_s, 4),
                chunks=reply.stats.chunks,
                timings=reply.stats.timings(),
                trace_id=reply.trace.trace_id,
            ),
            rid,
        )
        complete.finishes = rid
        await self._put(complete)

    async def _send_chunk(self, rid: str, out: ChunkOut) -> None:
        if out.starts_chunk:  # the chunk's words, known before its audio: sent ahead of it
            await self._put(
                self._message(
                    WordTimestamps(
                        request_id=rid,
                        sequence=out.sequence,
                        text=out.text,
                        offset_s=round(out.offset_s, 4),
                        duration_s=round(out.chunk_duration_s, 4),
                        words=[w.to_dict() for w in out.words],
                    ),
                    rid,
                )
            )
        frames = safe_audio_frames(out.data, self.config.audio_frame_bytes)
        done, words = 0, out.words
        for frame in frames:
            done += len(frame)
            covered = out.offset_s + out.duration_s * done / len(out.data)
            await self._put(Outgoing(frame, rid, audio_to_s=covered, words=words))
            words = ()  # the sent log learns each word once

    # Writer

    async def _write(self) -> None:
        while True:
            item = await self._outbox.get()
            payload = self._sent.cancelled(item.request_id or "") if item.cancelled else item.payload
            if payload:
                try:
                    await asyncio.wait_for(send_frame(self.ws, payload), self.config.send_timeout_s)
                except TimeoutError:
                    log.warning(
                        "session %s: client stopped reading for %.0f s; dropping it",
                        self.id,
                        self.config.send_timeout_s,
                    )
                    return
                self._sent.account(item, payload)
            if item.finishes is not None:
                self._sent.finish(item.finishes)
            if item.close is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.ws.close(*item.close), self.config.send_timeout_s)
                return

    # Helpers

    def _message(self, message: ServerMessage, request_id: str | None = None) -> Outgoing:
        return Outgoing(encode_server_message(message), request_id)

    async def _put(self, item: Outgoing, *, control: bool = False) -> None:
        await self._outbox.put(item, control=control)

    async def _error(self, exc: SpeakstreamError, request_id: str | None) -> None:
        self.rt.error(exc)
        item = self._message(ErrorMessage.of(exc, request_id))
        item.request_id = None  # errors survive a purge of their request
        await self._put(item, control=True)
