"""A WebSocket of named contexts: what the dialects of other TTS services have in common.

ElevenLabs' ``multi-stream-input`` and Cartesia's ``/tts/websocket`` multiplex replies on one
connection by a context id that the client picks. Here each context is one ``Reply`` (the same
chunker, scheduler and encoders as every other route) spoken by its own owned task, so contexts
overlap and the scheduler shares the engine between them fairly. A dialect subclasses
``ContextSocket`` and owns only its wire format: ``handle`` turns a client message into calls of
``open``/``text``/``flush``/``end``/``cancel``; ``chunk_messages``, ``done_messages`` and
``error_message`` turn what a context makes into that service's messages.

The discipline is our own protocol's: bounded outbox, a client that stops reading is dropped,
bad input answers with an error in the dialect's shape and the connection goes on, and every task
is cancelled and awaited on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from speakstream.errors import InvalidInput, Overloaded, ProtocolError, SpeakstreamError, internal_error
from speakstream.protocol import Options
from speakstream.server.dialects.alignment import SourceAlignment
from speakstream.server.outbox import Outbox, Outgoing, send_frame
from speakstream.server.reply import ChunkOut, Reply
from speakstream.server.runtime import Runtime

log = logging.getLogger("speakstream.contexts")
MAX_CONTEXTS = 5
"""Contexts open at once on one connection (ElevenLabs' limit too)."""


@dataclass(slots=True)
class ChunkTracker:
    """Where a reply's outputs are: chunks begun and done, and, on a chunk's last piece, that
    chunk's first piece (its text and words) with its real length. The engine trims a chunk's
    trailing silence as it decodes, so the model's durations give only an upper bound of its
    length until then: timings sent with the last piece match the audio exactly."""

    chunks: int = 0
    chunks_done: int = 0
    chunk: ChunkOut | None = None
    finished: tuple[ChunkOut, float] | None = None

    def see(self, out: ChunkOut) -> None:
        self.finished = None
        if out.starts_chunk:
            self.chunks += 1
            self.chunk = out
        if out.ends_chunk and self.chunk is not None:
            self.finished = (self.chunk, out.offset_s + out.duration_s - self.chunk.offset_s)
            self.chunk = None
            self.chunks_done = self.chunks


@dataclass(eq=False)
class Context:
    """One context: its reply, the task that speaks it, and what the dialect keeps about it."""

    id: str
    reply: Reply
    task: asyncio.Task[None] | None = None
    text_at: float = field(default_factory=time.monotonic)
    ended: bool = False
    track: ChunkTracker = field(default_factory=ChunkTracker)
    source: SourceAlignment = field(default_factory=SourceAlignment)
    """How far its timing of the client's own text has got (the dialects' alignments)."""
    flushes: list[tuple[int, int]] = field(default_factory=list)
    """(flush id, chunks queued when it was asked) for flushes not yet answered."""
    flush_count: int = 0
    cut_timer: asyncio.TimerHandle | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """The dialect's own settings of this context."""


class ContextSocket:
    transport = "contexts"
    """The label of this dialect in metrics."""

    def __init__(self, websocket: WebSocket, runtime: Runtime, client: str = "") -> None:
        self.ws = websocket
        self.rt = runtime
        self.client = client
        self.config = runtime.config
        self.id = runtime.new_id(self.transport)
        self.contexts: dict[str, Context] = {}
        self.inactivity_s = self.config.idle_timeout_s
        self._outbox = Outbox(maxsize=64)
        self._last_message_at = time.monotonic()
        self._closing = False
        self._open = False
        self._close_queued = False

    # The dialect's part

    async def start(self) -> None:
        """Check the handshake's parameters (raise to refuse the connection with an error)."""

    async def handle(self, message: dict[str, Any]) -> bool:
        """Act on one client message; True ends the connection (after the contexts finish)."""
        raise NotImplementedError

    def chunk_messages(self, ctx: Context, out: ChunkOut) -> list[str | bytes]:
        raise NotImplementedError

    def done_messages(self, ctx: Context) -> list[str]:
        """What a context ends with once all its audio is out."""
        return []

    def error_message(self, exc: SpeakstreamError, context_id: str | None) -> str:
        raise NotImplementedError

    # Operations for the dialect

    def open(self, context_id: str, options: Options, *, bitrate: int | None = None) -> Context:
        """A new context speaking with ``options`` over the server's defaults."""
        if len(self.contexts) >= MAX_CONTEXTS:
            raise Overloaded(f"at most {MAX_CONTEXTS} contexts may be open on one connection", code="max_contexts")
        settings = replace(self.rt.settings(options), bitrate=bitrate)
        reply = self.rt.reply(self.id, self.rt.new_id("ctx"), settings, self.client, route=self.transport)
        ctx = Context(context_id, reply)
        self.contexts[context_id] = ctx
        ctx.task = asyncio.create_task(self._speak(ctx), name=f"{self.id}-{context_id[:40]}")
        self.rt.metrics.requests.labels(self.transport).inc()
        return ctx

    async def text(self, ctx: Context, text: str, *, whole: bool = False) -> None:
        """Text for the context: the chunker decides where chunks end; ``whole``: the text is
        complete (a client that sends whole sentences), so what the chunker holds of it is spoken
        now rather than kept for what may follow."""
        ctx.text_at = time.monotonic()
        await ctx.reply.apush(text)
        if whole:
            ctx.reply.push_chunk("")

    def flush(self, ctx: Context) -> int:
        """Speak what the context holds now; returns the flush's id (1, 2, ...), which
        ``flushes_done`` gives back once all the text before it has been spoken."""
        ctx.reply.push_chunk("")
        ctx.flush_count += 1
        ctx.flushes.append((ctx.flush_count, ctx.reply.chunks_queued))
        return ctx.flush_count

    def flushes_done(self, ctx: Context, *, final: bool = False) -> list[int]:
        done = [fid for fid, chunks in ctx.flushes if final or chunks <= ctx.track.chunks_done]
        ctx.flushes = ctx.flushes[len(done) :]
        return done

    def cut_after(self, ctx: Context, delay_s: float) -> None:
        """Speak what the context holds if no text comes for ``delay_s`` (a buffer delay)."""
        if ctx.cut_timer is not None:
            ctx.cut_timer.cancel()
        ctx.cut_timer = asyncio.get_running_loop().call_later(delay_s, self._cut, ctx)

    def _cut(self, ctx: Context) -> None:
        if not ctx.ended:
            ctx.reply.push_chunk("")

    def end(self, ctx: Context) -> None:
        """No more text: the context finishes what it has, then its done message goes out."""
        ctx.ended = True
        if ctx.cut_timer is not None:
            ctx.cut_timer.cancel()
        ctx.reply.end_input()

    async def cancel(self, ctx: Context) -> None:
        """Stop now: no more audio of this context, and no done message."""
        self._forget(ctx)
        if ctx.cut_timer is not None:
            ctx.cut_timer.cancel()
        if ctx.task is not None:
            ctx.task.cancel()
            await asyncio.gather(ctx.task, return_exceptions=True)
        await self._outbox.purge(ctx.reply.request_id)

    async def send(self, payload: str, ctx: Context | None = None) -> None:
        await self._outbox.put(Outgoing(payload, ctx.reply.request_id if ctx else None), control=ctx is None)

    async def refuse(self, exc: SpeakstreamError, code: int = 1008) -> None:
        """An error in the dialect's shape, then close (a connection that cannot go on)."""
        self.rt.error(exc)
        await self._outbox.put(Outgoing(self.error_message(exc, None)), control=True)
        await self._outbox.put(Outgoing(close=(code, exc.message[:120])), control=True)
        self._close_queued = True

    # Lifecycle

    async def run(self) -> None:
        if not self.rt.open_session(self):
            await self.ws.close(1013, "too many sessions")
            return
        tasks: list[asyncio.Task[Any]] = []
        try:
            await self.ws.accept()
            self._open = True
            tasks = [asyncio.create_task(self._write(), name=f"{self.id}-writer")]
            try:
                await self.start()
                self.rt.require_scheduler()
            except SpeakstreamError as exc:
                await self.refuse(exc)
            else:
                tasks.append(asyncio.create_task(self._read(), name=f"{self.id}-reader"))
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            reader = tasks[-1] if len(tasks) > 1 else None
            if reader in done and _asked_to_close(reader):  # the client's contexts finish first
                await self._finish_contexts()
                await self._outbox.put(Outgoing(close=(1000, "closed by client")), control=True)
                self._close_queued = True
            if self._close_queued:  # let the last messages and the close frame out
                await asyncio.wait([tasks[0]], timeout=self.config.send_timeout_s)
        finally:
            await self._teardown(tasks)

    async def _finish_contexts(self) -> None:
        for ctx in list(self.contexts.values()):
            if not ctx.ended:
                self.end(ctx)
        pending = [c.task for c in self.contexts.values() if c.task is not None]
        if pending:
            await asyncio.wait(pending, timeout=self.config.idle_timeout_s)

    async def _teardown(self, tasks: list[asyncio.Task[Any]]) -> None:
        self._closing = True
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for ctx in list(self.contexts.values()):
            await self.cancel(ctx)
        if self.rt.scheduler is not None:
            self.rt.scheduler.cancel(self.id)
        self.rt.close_session(self)
        with contextlib.suppress(Exception):  # the peer may be gone or stuck: nothing left to tell it
            await asyncio.wait_for(self.ws.close(1000), 1.0)

    async def shutdown(self, reason: str) -> None:
        """Server stopping: close with 1001 (going away) within the grace period."""
        if not self._open or self._closing:
            return
        self._closing = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(1001, reason[:120]), 1.0)

    # Reader

    async def _read(self) -> bool:
        while True:
            try:
                message = await asyncio.wait_for(self.ws.receive(), self._read_timeout())
            except TimeoutError:
                self._end_idle_contexts()
                if time.monotonic() - self._last_message_at < self.inactivity_s or self._busy():
                    continue
                await self.refuse(
                    InvalidInput(
                        f"no message for {self.inactivity_s:g} s; the connection is closed",
                        code="input_timeout_exceeded",
                    ),
                    code=1000,
                )
                return False
            except WebSocketDisconnect:
                return False
            if message["type"] == "websocket.disconnect":
                return False
            self._last_message_at = time.monotonic()
            frame = message.get("text") if message.get("text") is not None else message.get("bytes")
            if frame is not None and await self._handle_frame(frame):
                return True

    async def _handle_frame(self, frame: str | bytes) -> bool:
        context_id = None
        try:
            message = self._parse(frame)
            context_id = message.get("context_id") if isinstance(message.get("context_id"), str) else None
            return await self.handle(message)
        except SpeakstreamError as exc:
            await self._error(exc, context_id)
        except Exception:  # a bug: the client hears of it, the connection goes on
            log.exception("%s: a message failed", self.id)
            await self._error(internal_error(), context_id)
        return False

    def _parse(self, frame: str | bytes) -> dict[str, Any]:
        if len(frame) > self.config.max_frame_bytes:
            raise ProtocolError(f"message is over the {self.config.max_frame_bytes}-byte limit", code="frame_too_large")
        try:
            message = json.loads(frame)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ProtocolError("message is not valid JSON", code="invalid_json") from exc
        if not isinstance(message, dict):
            raise ProtocolError("message must be a JSON object")
        return message

    def _read_timeout(self) -> float:
        left = self._last_message_at + self.inactivity_s - time.monotonic()
        for ctx in self.contexts.values():
            if not ctx.ended:
                left = min(left, ctx.text_at + self.config.text_idle_s - time.monotonic())
        return max(0.05, left)

    def _end_idle_contexts(self) -> None:
        """A context whose input stays open with no text for ``text_idle_s`` is ended (what it
        has is spoken), so a client that never closes its contexts holds no engine slots."""
        now = time.monotonic()
        for ctx in list(self.contexts.values()):
            if not ctx.ended and now - ctx.text_at >= self.config.text_idle_s:
                log.info("%s: context %s had no text for %.0f s; ended", self.id, ctx.id, self.config.text_idle_s)
                self.end(ctx)

    def _busy(self) -> bool:
        return any(c.ended for c in self.contexts.values()) or len(self._outbox) > 0

    # A context's task

    async def _speak(self, ctx: Context) -> None:
        try:
            try:
                async for out in ctx.reply.outputs():
                    ctx.track.see(out)
                    for payload in self.chunk_messages(ctx, out):
                        await self._outbox.put(Outgoing(payload, ctx.reply.request_id))
            except (SpeakstreamError, asyncio.CancelledError):
                raise
            except Exception as exc:  # a bug (an encoder's, say): an error for this context, not a hang
                log.exception("%s: context %s failed", self.id, ctx.id)
                raise internal_error() from exc
        except SpeakstreamError as exc:
            if exc.code != "empty_text" or ctx.reply.stats.audio_bytes:
                self._forget(ctx)
                await self._error(exc, ctx.id)
                return
        self._forget(ctx)
        if ctx.reply.stats.ttfa_s is not None:
            self.rt.metrics.ttfa.labels(self.transport).observe(ctx.reply.stats.ttfa_s)
        for done in self.done_messages(ctx):
            await self._outbox.put(Outgoing(done, ctx.reply.request_id))

    def _forget(self, ctx: Context) -> None:
        if self.contexts.get(ctx.id) is ctx:
            del self.contexts[ctx.id]

    # Writer

    async def _write(self) -> None:
        while True:
            item = await self._outbox.get()
            if item.payload:
                try:
                    await asyncio.wait_for(send_frame(self.ws, item.payload), self.config.send_timeout_s)
                except TimeoutError:
                    log.warning("%s: client stopped reading for %.0f s; dropped", self.id, self.config.send_timeout_s)
                    return
            if item.close is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.ws.close(*item.close), self.config.send_timeout_s)
                return

    async def _error(self, exc: SpeakstreamError, context_id: str | None) -> None:
        self.rt.error(exc)
        await self._outbox.put(Outgoing(self.error_message(exc, context_id)), control=True)


def _asked_to_close(reader: asyncio.Task[Any] | None) -> bool:
    return reader is not None and not reader.cancelled() and reader.exception() is None and bool(reader.result())
