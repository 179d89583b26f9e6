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
import logging
import time
from collections import deque
from collections.abc import Coroutine
from typing import Any

from starlette.websockets import WebSocket

from speakstream.engine.base import check_text
from speakstream.errors import InvalidInput, Overloaded, ProtocolError, SpeakstreamError
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
from speakstream.server.encoding import ChunkOut
from speakstream.server.outbox import Outgoing, SentLog
from speakstream.server.reply import Reply
from speakstream.server.runtime import Runtime
from speakstream.server.socket import SocketSession

log = logging.getLogger("speakstream.session")


class BidiSession(SocketSession):
    """Our protocol on the session core: one request spoken at a time, in order, by an owned
    runner; a cancel answers with what the client was really sent (``SentLog``)."""

    transport = "websocket"

    def __init__(self, websocket: WebSocket, runtime: Runtime, client: str = "") -> None:
        super().__init__(websocket, runtime, client)
        self.options = Options()
        """What the session's ``configure`` messages set, over the server's defaults (a saved
        voice's own speed and language between them)."""
        self._pending: deque[Reply] = deque()
        self._request_ready = asyncio.Event()
        self._active: tuple[Reply, asyncio.Task[None]] | None = None
        self._stream: Reply | None = None
        self._stream_text_at = 0.0
        self._sent = SentLog()

    # The core's hooks

    async def start(self) -> None:
        await self.put(self._hello())

    def workers(self) -> list[Coroutine[Any, Any, None]]:
        return [self._run_requests()]

    def parse(self, frame: str | bytes) -> ClientMessage:
        return parse_client_message(frame, max_bytes=self.config.max_frame_bytes)

    def reference(self, message: Any) -> str | None:
        return getattr(message, "request_id", None)

    def error_message(self, exc: SpeakstreamError, reference: str | None) -> str:
        return encode_server_message(ErrorMessage.of(exc, reference))

    def read_timeout(self) -> float:
        if self._stream is None:
            return self.config.idle_timeout_s
        left = self._stream_text_at + self.config.text_idle_s - time.monotonic()
        return max(0.0, min(self.config.idle_timeout_s, left))

    def quiet(self) -> bool:
        return self._text_idle() or self._busy()

    async def finish(self) -> None:
        await self._cancel(None, answer=False)

    async def stop_work(self) -> None:
        if self._active is not None:
            self._active[1].cancel()
            await asyncio.gather(self._active[1], return_exceptions=True)

    def payload(self, item: Outgoing) -> str | bytes | None:
        return self._sent.cancelled(item.request_id or "") if item.cancelled else item.payload

    def sent(self, item: Outgoing, payload: str | bytes | None) -> None:
        if payload:
            self._sent.account(item, payload)
        if item.finishes is not None:
            self._sent.finish(item.finishes)

    def _hello(self) -> Outgoing:
        defaults = self.rt.defaults
        return self._message(
            SessionStart(
                session_id=self.id,
                voice=defaults.voice or "",
                speed=defaults.speed or 1.0,
                format=defaults.format or "pcm",
                sample_rate=24_000,
                limits=self.config.limits(),
            )
        )

    # Messages

    async def handle(self, message: ClientMessage) -> bool:
        return await self._handle(message)

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
            return True  # the core stops the requests (``finish``) and closes
        return False

    def _new_reply(self, request_id: str | None, options: Options) -> Reply:
        if len(self._pending) >= self.config.max_pending_requests:
            raise Overloaded(
                f"{self.config.max_pending_requests} requests are already waiting", code="too_many_requests"
            )
        if request_id is not None and request_id in self._known_ids():
            raise ProtocolError(f"request_id {request_id!r} is already in use", code="duplicate_request_id")
        settings = self.rt.settings(options.over(self.options))
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
        elif message.options.voice is not None:  # a dialogue: the speaker changes mid-reply
            stream.speak_as(message.options.voice)
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
        merged = options.over(self.options)
        self.rt.settings(merged)  # checked: a bad option is refused now, not at the next request
        self.options = merged

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
        return self._active is not None or bool(self._pending) or len(self.outbox) > 0

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
            await self.outbox.purge(target)
            if answer:
                await self.put(Outgoing(request_id=target, cancelled=True), control=True)
        if answer and not targets:
            if request_id is not None:
                raise InvalidInput(f"no request {request_id!r} to cancel", code="unknown_request")
            await self.put(Outgoing(request_id="", cancelled=True), control=True)

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
        self.rt.metrics.requests.labels(self.transport).inc()
        self._sent.start(rid)
        await self.put(self._message(started(reply), rid))
        try:
            await self.relay(reply, lambda out: self._send_chunk(rid, out))
        except SpeakstreamError as exc:
            if self._stream is reply:
                self._stream = None
            self._sent.finish(rid)
            await self.error(exc, rid)
            if exc.code == "overloaded" and not self._pending:  # over capacity: try another replica
                await self.put(Outgoing(close=(1013, "try again later")), control=True)
            return
        if reply.stats.ttfa_s is not None:
            self.rt.metrics.ttfa.labels(self.transport).observe(reply.stats.ttfa_s)
        complete = self._message(completed(reply), rid)
        complete.finishes = rid
        await self.put(complete)

    async def _send_chunk(self, rid: str, out: ChunkOut) -> None:
        if out.starts_chunk:  # the chunk's words, known before its audio: sent ahead of it
            await self.put(self._message(timestamps(rid, out), rid))
        frames = safe_audio_frames(out.data, self.config.audio_frame_bytes)
        done, words = 0, out.words
        for frame in frames:
            done += len(frame)
            covered = out.offset_s + out.duration_s * done / len(out.data)
            await self.put(Outgoing(frame, rid, audio_to_s=covered, words=words))
            words = ()  # the sent log learns each word once

    # Helpers

    def _message(self, message: ServerMessage, request_id: str | None = None) -> Outgoing:
        return Outgoing(encode_server_message(message), request_id)


def started(reply: Reply) -> SynthesisStart:
    """What a request's audio will be, sent before any of it."""
    return SynthesisStart(
        request_id=reply.request_id,
        voice=reply.settings.voice,
        speed=reply.settings.speed,
        format=reply.fmt.name,
        sample_rate=reply.sample_rate,
        mime_type=reply.fmt.mime_type,
    )


def timestamps(request_id: str, out: ChunkOut) -> WordTimestamps:
    """A chunk's words, timed, sent ahead of its audio."""
    return WordTimestamps(
        request_id=request_id,
        sequence=out.sequence,
        text=out.text,
        offset_s=round(out.offset_s, 4),
        duration_s=round(out.chunk_duration_s, 4),
        words=[w.to_dict() for w in out.words],
        voice=out.voice or None,
    )


def completed(reply: Reply) -> SynthesisComplete:
    """A request's totals and timings, once all its audio is out."""
    return SynthesisComplete(
        request_id=reply.request_id,
        audio_bytes=reply.stats.audio_bytes,
        duration_s=round(reply.stats.duration_s, 4),
        chunks=reply.stats.chunks,
        timings=reply.stats.timings(),
        trace_id=reply.trace.trace_id,
    )
