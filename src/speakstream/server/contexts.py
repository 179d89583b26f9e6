"""A WebSocket of named contexts: what the dialects of other TTS services have in common.

ElevenLabs' ``multi-stream-input`` and Cartesia's ``/tts/websocket`` multiplex replies on one
connection by a context id that the client picks. Here each context is one ``Reply`` (the same
chunker, scheduler and encoders as every other route) spoken by its own owned task, so contexts
overlap and the scheduler shares the engine between them fairly. A dialect subclasses
``ContextSocket`` and owns only its wire format: ``handle`` turns a client message into calls of
``open``/``text``/``flush``/``end``/``cancel``; ``chunk_messages``, ``done_messages`` and
``error_message`` turn what a context makes into that service's messages.

The connection itself (admission, the reader and writer, idle timeout, errors, close, shutdown,
teardown) is the session core's (``server/socket.py``), as for our own protocol.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.websockets import WebSocket

from speakstream.errors import InvalidInput, Overloaded, ProtocolError, SpeakstreamError
from speakstream.protocol import Options
from speakstream.server.alignment import SourceAlignment
from speakstream.server.encoding import ChunkOut
from speakstream.server.outbox import Outgoing
from speakstream.server.reply import Reply
from speakstream.server.runtime import Runtime
from speakstream.server.socket import SocketSession

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


class ContextSocket(SocketSession):
    """A dialect's socket on the session core: contexts opened, fed and ended by the dialect's
    messages, each spoken by its own owned task."""

    transport = "contexts"

    def __init__(self, websocket: WebSocket, runtime: Runtime, client: str = "") -> None:
        super().__init__(websocket, runtime, client)
        self.contexts: dict[str, Context] = {}
        self.inactivity_s = self.config.idle_timeout_s

    # The dialect's part

    async def handle(self, message: dict[str, Any]) -> bool:
        """Act on one client message; True ends the connection (after the contexts finish)."""
        raise NotImplementedError

    def chunk_messages(self, ctx: Context, out: ChunkOut) -> list[str | bytes]:
        raise NotImplementedError

    def done_messages(self, ctx: Context) -> list[str]:
        """What a context ends with once all its audio is out."""
        return []

    # The core's hooks

    def parse(self, frame: str | bytes) -> dict[str, Any]:
        if len(frame) > self.config.max_frame_bytes:
            raise ProtocolError(f"message is over the {self.config.max_frame_bytes}-byte limit", code="frame_too_large")
        try:
            message = json.loads(frame)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ProtocolError("message is not valid JSON", code="invalid_json") from exc
        if not isinstance(message, dict):
            raise ProtocolError("message must be a JSON object")
        return message

    def reference(self, message: dict[str, Any]) -> str | None:
        context_id = message.get("context_id")
        return context_id if isinstance(context_id, str) else None

    def read_timeout(self) -> float:
        left = self.last_message_at + self.inactivity_s - time.monotonic()
        for ctx in self.contexts.values():
            if not ctx.ended:
                left = min(left, ctx.text_at + self.config.text_idle_s - time.monotonic())
        return max(0.05, left)

    def quiet(self) -> bool:
        self._end_idle_contexts()
        return time.monotonic() - self.last_message_at < self.inactivity_s or self._busy()

    def idle_error(self) -> SpeakstreamError:
        message = f"no message for {self.inactivity_s:g} s; the connection is closed"
        return InvalidInput(message, code="input_timeout_exceeded")

    async def finish(self) -> None:
        """The client's contexts finish before the close."""
        for ctx in list(self.contexts.values()):
            if not ctx.ended:
                self.end(ctx)
        pending = [c.task for c in self.contexts.values() if c.task is not None]
        if pending:
            await asyncio.wait(pending, timeout=self.config.idle_timeout_s)

    async def stop_work(self) -> None:
        for ctx in list(self.contexts.values()):
            await self.cancel(ctx)

    # Operations for the dialect

    def open(self, context_id: str, options: Options, *, bitrate: int | None = None) -> Context:
        """A new context speaking with ``options`` over the server's defaults."""
        if len(self.contexts) >= MAX_CONTEXTS:
            raise Overloaded(f"at most {MAX_CONTEXTS} contexts may be open on one connection", code="max_contexts")
        settings = self.rt.settings(options, bitrate=bitrate)
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
        await self.outbox.purge(ctx.reply.request_id)

    async def send(self, payload: str, ctx: Context | None = None) -> None:
        await self.put(Outgoing(payload, ctx.reply.request_id if ctx else None), control=ctx is None)

    def _end_idle_contexts(self) -> None:
        """A context whose input stays open with no text for ``text_idle_s`` is ended (what it
        has is spoken), so a client that never closes its contexts holds no engine slots."""
        now = time.monotonic()
        for ctx in list(self.contexts.values()):
            if not ctx.ended and now - ctx.text_at >= self.config.text_idle_s:
                log.info("%s: context %s had no text for %.0f s; ended", self.id, ctx.id, self.config.text_idle_s)
                self.end(ctx)

    def _busy(self) -> bool:
        return any(c.ended for c in self.contexts.values()) or len(self.outbox) > 0

    # A context's task

    async def _speak(self, ctx: Context) -> None:
        try:
            await self.relay(ctx.reply, lambda out: self._send_chunk(ctx, out))
        except SpeakstreamError as exc:
            if exc.code != "empty_text" or ctx.reply.stats.audio_bytes:
                self._forget(ctx)
                await self.error(exc, ctx.id)
                return
        self._forget(ctx)
        if ctx.reply.stats.ttfa_s is not None:
            self.rt.metrics.ttfa.labels(self.transport).observe(ctx.reply.stats.ttfa_s)
        for done in self.done_messages(ctx):
            await self.put(Outgoing(done, ctx.reply.request_id))

    async def _send_chunk(self, ctx: Context, out: ChunkOut) -> None:
        ctx.track.see(out)
        for payload in self.chunk_messages(ctx, out):
            await self.put(Outgoing(payload, ctx.reply.request_id))

    def _forget(self, ctx: Context) -> None:
        if self.contexts.get(ctx.id) is ctx:
            del self.contexts[ctx.id]
