"""``VoiceAgent``: an LLM text stream spoken through a speech session, in two modes.

- ``bidi``: one task feeds the LLM's deltas through the speakable-text filter and the chunker into
  the session as chunks complete; another drains audio and events. Both push into one queue, so
  events come out in true arrival order.
- ``batch``: waits for the whole reply, then makes one synthesis call (the fair baseline: same
  server, same session, it only waits for the full text).

``interrupt()`` is barge-in: it stops the LLM stream and the synthesis at once, drops queued
audio, and reports how much audio was delivered and the last word the listener could have heard.
It answers at any moment: before the first chunk reached the server, while it speaks, or after the
reply already ended (then it reports nothing to interrupt and returns at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from speakstream.agent.events import (
    AgentDone,
    AgentError,
    AgentEvent,
    AgentStart,
    AudioChunkEvent,
    ChunkSent,
    TextDelta,
    WordTimestampsEvent,
)
from speakstream.agent.sources import TextSource
from speakstream.channel import Channel
from speakstream.errors import SpeakstreamError
from speakstream.protocol import (
    AudioEvent,
    Cancelled,
    ControlEvent,
    ErrorMessage,
    SynthesisComplete,
    SynthesisStart,
    WordTimestamps,
)
from speakstream.text import ChunkPolicy, IncrementalSentenceChunker, SpeakableFilter, SpeakableOptions

MODES = ("bidi", "batch")
_RUNS = itertools.count(1)


@dataclass(slots=True)
class _Progress:
    start: float = field(default_factory=time.perf_counter)
    first_text: float | None = None
    llm_done: float | None = None
    first_chunk: float | None = None
    first_audio: float | None = None
    audio_bytes: int = 0
    sample_rate: int = 24_000
    format: str = "pcm"
    words: list[dict[str, Any]] = field(default_factory=list)

    def since(self, moment: float | None) -> float | None:
        return None if moment is None else round(moment - self.start, 4)


class VoiceAgent:
    def __init__(
        self,
        source: TextSource,
        channel: Channel,
        *,
        mode: str = "bidi",
        voice: str | None = None,
        speed: float | None = None,
        audio_format: str = "pcm",
        policy: ChunkPolicy | None = None,
        speakable_options: SpeakableOptions | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.source, self.channel, self.mode = source, channel, mode
        self.options = {"voice": voice, "speed": speed, "format": audio_format}
        self.policy = policy
        self.speakable_options = speakable_options
        self.request_id = ""
        self._progress = _Progress()
        self._queue: asyncio.Queue[AgentEvent] = asyncio.Queue(maxsize=1024)
        self._feeder: asyncio.Task[None] | None = None
        self.started = asyncio.Event()
        """Set once ``run`` has started its tasks (an interrupt from then on is acted on)."""
        self._finished = asyncio.Event()
        """Set once the run's last event (``agent_done`` or ``error``) is queued."""
        self._cancel_report: dict[str, Any] | None = None
        self._interrupting = False

    @property
    def running(self) -> bool:
        """A run has started and its last event is not out yet."""
        return self._feeder is not None and not self._finished.is_set()

    def _now(self) -> float:
        return round(time.perf_counter() - self._progress.start, 4)

    async def run(self, prompt: str) -> AsyncIterator[AgentEvent]:
        """Speak the reply to ``prompt``; the last event is ``agent_done`` or ``error``."""
        self._progress = _Progress()
        self.request_id = f"agent-{next(_RUNS)}"
        self._queue = asyncio.Queue(maxsize=1024)  # nothing of an earlier run leaks into this one
        self._finished.clear()
        self._cancel_report = None
        self._interrupting = False
        feeder = asyncio.create_task(self._feed(prompt), name=f"{self.request_id}-feed")
        drainer = asyncio.create_task(self._drain(), name=f"{self.request_id}-drain")
        self._feeder = feeder
        self.started.set()
        try:
            yield AgentStart(t=0.0, mode=self.mode, prompt=prompt, source=self.source.name)
            while True:
                event = await self._queue.get()
                yield event
                if isinstance(event, AgentDone | AgentError):
                    break
        finally:
            self._finished.set()  # also when the consumer stops early
            for task in (feeder, drainer):
                task.cancel()
            await asyncio.gather(feeder, drainer, return_exceptions=True)

    async def interrupt(self) -> dict[str, Any] | None:
        """Barge-in: stop the LLM and the synthesis now; report what the listener got.

        None when there was nothing to interrupt (no run, or its reply had already ended)."""
        if not self.running or self._interrupting:
            return None
        self._interrupting = True
        if self._feeder is not None:
            self._feeder.cancel()
            await asyncio.gather(self._feeder, return_exceptions=True)
        await self.channel.cancel(request_id=self.request_id)
        # the drainer ends the run on `cancelled`, on `synthesis_complete` (the reply won the race)
        # or on `unknown_request` (nothing had reached the server); the timeout only bounds a hang
        await asyncio.wait_for(self._finished.wait(), 30.0)
        return self._cancel_report

    # Feeding

    async def _feed(self, prompt: str) -> None:
        try:
            if self.mode == "bidi":
                await self._feed_streaming(prompt)
            else:
                await self._feed_whole(prompt)
            self._progress.llm_done = time.perf_counter()
        except SpeakstreamError as exc:
            with contextlib.suppress(SpeakstreamError):
                await self.channel.cancel(request_id=self.request_id)
            await self._end(AgentError(t=self._now(), code=exc.code, message=exc.message, retryable=exc.retryable))

    async def _deltas(self, prompt: str) -> AsyncIterator[str]:
        async for delta in self.source.stream(prompt):
            if self._progress.first_text is None:
                self._progress.first_text = time.perf_counter()
            await self._queue.put(TextDelta(t=self._now(), text=delta))
            yield delta

    async def _feed_streaming(self, prompt: str) -> None:
        spoken = SpeakableFilter(self.speakable_options)
        chunker = IncrementalSentenceChunker(self.policy)
        sent = 0
        async for delta in self._deltas(prompt):
            for chunk in chunker.feed(spoken.feed(delta)):
                await self._send_chunk(chunk, sent)
                sent += 1
        for chunk in chunker.feed(spoken.flush()) + chunker.flush_all():
            await self._send_chunk(chunk, sent)
            sent += 1
        if sent == 0:
            raise SpeakstreamError("the LLM's reply had nothing to speak", code="empty_text")
        await self.channel.flush(request_id=self.request_id)

    async def _send_chunk(self, chunk: str, index: int) -> None:
        options = {k: v for k, v in self.options.items() if v is not None} if index == 0 else {}
        await self.channel.append(chunk + " ", request_id=self.request_id, chunk=True, **options)
        self._progress.first_chunk = self._progress.first_chunk or time.perf_counter()
        await self._queue.put(ChunkSent(t=self._now(), text=chunk, index=index))

    async def _feed_whole(self, prompt: str) -> None:
        spoken = SpeakableFilter(self.speakable_options)
        parts = [spoken.feed(delta) async for delta in self._deltas(prompt)]
        text = ("".join(parts) + spoken.flush()).strip()
        if not text:
            raise SpeakstreamError("the LLM's reply had nothing to speak", code="empty_text")
        options = {k: v for k, v in self.options.items() if v is not None}
        await self.channel.speak(text, request_id=self.request_id, **options)
        self._progress.first_chunk = time.perf_counter()
        await self._queue.put(ChunkSent(t=self._now(), text=text, index=0))

    # Draining

    async def _drain(self) -> None:
        while True:
            event = await self.channel.receive()
            if isinstance(event, AudioEvent):
                if event.request_id == self.request_id:
                    await self._audio(event)
                continue
            if event.request_id not in (self.request_id, None):
                continue
            if await self._control(event):
                return

    async def _audio(self, event: AudioEvent) -> None:
        progress = self._progress
        progress.first_audio = progress.first_audio or event.received_at
        progress.audio_bytes += len(event.data)
        await self._queue.put(
            AudioChunkEvent(
                t=progress.since(event.received_at) or 0.0,
                audio=event.data,
                size=len(event.data),
                request_id=event.request_id,
            )
        )

    async def _control(self, event: ControlEvent) -> bool:
        """Handle one control message of this run; True when the run is over."""
        message = event.parsed
        if isinstance(message, SynthesisStart):
            self._progress.sample_rate = message.sample_rate
            self._progress.format = message.format
        elif isinstance(message, WordTimestamps):
            self._progress.words.extend(message.words)
            await self._queue.put(
                WordTimestampsEvent(t=self._now(), text=message.text, words=message.words, offset_s=message.offset_s)
            )
        elif isinstance(message, SynthesisComplete):
            await self._end(self._done(audio_s=message.duration_s))
            return True
        elif isinstance(message, Cancelled) or (
            self._interrupting and isinstance(message, ErrorMessage) and message.code == "unknown_request"
        ):  # `unknown_request`: the interrupt came before any text had reached the server
            self._cancel_report = self._interruption(message if isinstance(message, Cancelled) else None)
            await self._end(self._done(audio_s=self._cancel_report["delivered_s"], interrupted=self._cancel_report))
            return True
        elif isinstance(message, ErrorMessage) and not self._interrupting:
            await self._end(
                AgentError(t=self._now(), code=message.code, message=message.message, retryable=message.retryable)
            )
            return True
        return False

    async def _end(self, event: AgentDone | AgentError) -> None:
        """Queue the run's last event; from here on there is nothing left to interrupt."""
        if not self._finished.is_set():
            self._finished.set()
            await self._queue.put(event)

    def _done(self, *, audio_s: float | None, interrupted: dict[str, Any] | None = None) -> AgentDone:
        p = self._progress
        timings = {
            "ttft_s": p.since(p.first_text),
            "llm_done_s": p.since(p.llm_done),
            "first_chunk_s": p.since(p.first_chunk),
            "ttfa_s": p.since(p.first_audio),
            "audio_s": audio_s,
            "total_s": self._now(),
        }
        return AgentDone(
            t=self._now(), mode=self.mode, timings=timings, audio_bytes=p.audio_bytes, interrupted=interrupted
        )

    def _interruption(self, cancelled: Cancelled | None) -> dict[str, Any]:
        """What the listener got: audio delivered, and what a real-time player had played."""
        p = self._progress
        delivered_s = cancelled.duration_s if cancelled else 0.0
        played_s = 0.0 if p.first_audio is None else min(delivered_s, time.perf_counter() - p.first_audio)
        heard = [w["word"] for w in p.words if float(w["end_s"]) <= played_s]
        return {
            "audio_bytes": cancelled.audio_bytes if cancelled else 0,
            "delivered_s": round(delivered_s, 4),
            "last_word_delivered": cancelled.last_word if cancelled else None,
            "heard_s": round(played_s, 4),
            "last_word_heard": heard[-1] if heard else None,
        }
