"""One reply: text (whole, or fed as fragments) -> chunks -> scheduler -> encoder -> outputs.

Every transport (WebSocket, SSE, HTTP streaming, the OpenAI route, the agent) speaks a reply
through this class, so chunking, pipelining and timing are the same everywhere. A submitter task
keeps up to ``lookahead`` chunks queued at the scheduler, so the next chunk is synthesised while
the current one is being encoded and sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import replace
from typing import Any

from speakstream.audio import audio_format, open_encoder, output_rate
from speakstream.errors import InvalidInput, SpeakstreamError
from speakstream.scheduler import Job, PlaybackClock, Scheduler
from speakstream.server.encoding import ChunkOut, ReplyAudio, ReplyStats
from speakstream.server.reading import ReplySettings, Spoken, resolved, script_for, shown, speaker_info, spoken
from speakstream.server.tracing import ReplyTrace
from speakstream.text import ChunkPolicy
from speakstream.text.length import least_seconds
from speakstream.text.script import Part
from speakstream.text.spans import SpanFinder
from speakstream.text.ssml import Pause
from speakstream.types import AudioPiece, WordTimestamp

OFF_LOOP_CHARS = 2_000
"""Text from this long is chunked in a worker thread: hostile text costs the chunker about 1.5 ms
per 1,000 characters, which the event loop would otherwise spend."""


class Reply:
    """Speaks one reply; feed it with ``push``/``end_input`` and iterate ``outputs()`` once."""

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        session_id: str,
        request_id: str,
        settings: ReplySettings,
        policy: ChunkPolicy | None = None,
        lookahead: int = 2,
        max_text_chars: int = 20_000,
        max_audio_s: float = 1800.0,
        client: str = "",
        admission_wait_s: float = 0.0,
        trace: ReplyTrace | None = None,
    ) -> None:
        """``admission_wait_s``: how long the reply may wait for room when the server is at its
        capacity (0: refused at once); ``trace``: its spans (default: none)."""
        self.scheduler = scheduler
        self._admission_wait_s = admission_wait_s
        self.session_id = session_id
        self.client = client
        """Who asked (an address): the scheduler's turns and limits are per client."""
        self.request_id = request_id
        self.settings = settings = resolved(scheduler, settings)
        self.fmt = audio_format(settings.format)
        self.sample_rate = output_rate(self.fmt, settings.sample_rate)
        self.stats = ReplyStats()
        self.trace = trace or ReplyTrace(None, None)
        self.clock = PlaybackClock()
        """How far this reply's audio is ahead of its listener (sizes the engine's windows)."""
        self._script = script_for(settings, policy or ChunkPolicy())
        self._texts: deque[Spoken | Pause] = deque()
        self.spans = SpanFinder()
        """Where each word came from in the client's text."""
        self._queued: dict[int, Spoken] = {}
        self._speaker = settings.voice_name
        self._text_ready = asyncio.Event()
        self._ended = False
        self._received = 0
        self._max_text_chars = max_text_chars
        self._max_audio_s = max_audio_s
        self._least_s = 0.0
        """The least the text queued so far takes to speak (``least_seconds``), against the limit."""
        self._lookahead = lookahead
        self._release: weakref.finalize[Any, Any] | None = None
        self.texts: list[str] = []
        """Every chunk spoken so far, in order."""

    async def admitted(self) -> None:
        """Reserve room at the scheduler for this reply's chunks in flight, waiting for it up to
        ``admission_wait_s`` when the server is at its capacity (``Overloaded`` when the server is
        full). Idempotent; released when the reply ends, or is dropped unplayed."""
        if self._release is not None:
            return
        slots, started = self._lookahead + 1, time.perf_counter()
        try:
            if self._admission_wait_s > 0:
                waited = await self.scheduler.admission.reserve_waiting(slots, self.client, self._admission_wait_s)
                self.stats.admission_wait_s = waited
            else:
                self.scheduler.admission.reserve(slots, self.client)
        except SpeakstreamError as exc:
            self.trace.span("admission", started, time.perf_counter(), {"speakstream.refused": exc.code})
            self.trace.end(exc.code)
            raise
        self.trace.span("admission", started, time.perf_counter())
        self._release = weakref.finalize(self, self.scheduler.admission.release, slots, self.client)

    def release(self) -> None:
        if self._release is not None:
            self._release()

    def push(self, fragment: str) -> None:
        """Raw text (an LLM delta): this reply's chunker decides where chunks end."""
        self._take(fragment)
        self._queue(self._script.feed(fragment))

    async def apush(self, fragment: str) -> None:
        """``push``, with a fragment of ``OFF_LOOP_CHARS`` or more chunked in a worker thread; the
        caller awaits it before it touches this reply again (one reader per session)."""
        if len(fragment) < OFF_LOOP_CHARS:
            self.push(fragment)
            return
        self._take(fragment)
        self._queue(await asyncio.to_thread(self._script.feed, fragment))

    async def speak(self, text: str) -> None:
        """A whole text, then the end of input (a long one chunked off the event loop)."""
        await self.apush(text)
        self.end_input()

    def speak_as(self, voice: str | None, pause_s: float = 0.0) -> None:
        """Text pushed after this is read by ``voice`` (None: the reply's own) after ``pause_s`` of
        silence; text before it is cut off and read by the voice before. The same voice: no-op."""
        if (speaker := voice or self.settings.voice_name) == self._speaker and pause_s <= 0:
            return
        speaker_info(self.scheduler, self.settings, voice)  # an unknown voice is refused before its text
        self._queue(self._script.speak_as(voice, pause_s))
        self._speaker = speaker

    def push_chunk(self, text: str) -> None:
        """Text the client already chunked: spoken as one chunk, as it is (after anything pushed
        before it), so a chunking client such as ``VoiceAgent`` is the only one that decides."""
        self._take(text, apart=True)
        self._queue(self._script.chunk(text))

    @property
    def chunks_queued(self) -> int:
        """Chunks cut so far: those handed to the engine and those waiting for their turn."""
        return len(self.texts) + len(self._texts)

    def _take(self, text: str, *, apart: bool = False) -> None:
        if self._ended:
            raise InvalidInput(f"request {self.request_id} already ended its input", code="request_closed")
        self._received += len(text)
        if self._received > self._max_text_chars:
            raise InvalidInput(f"text is over the {self._max_text_chars}-character limit", code="text_too_long")
        self.spans.add(text, apart=apart)

    def end_input(self) -> None:
        if self._ended:
            return
        self._ended = True
        self._queue(self._script.end())
        self._text_ready.set()

    def _queue(self, parts: list[Part]) -> None:
        """Queue the script's parts, each chunk with the voice and speed it is read in (a voice
        or language it cannot be read in is refused here, before its turn)."""
        checked = not self._script.ssml
        for part in parts:
            queued = part if isinstance(part, Pause) else spoken(self.scheduler, self.settings, part, checked=checked)
            self._least_s += queued.seconds if isinstance(queued, Pause) else least_seconds(queued.text) / queued.speed
            if self._least_s > self._max_audio_s:
                raise InvalidInput(
                    f"the text takes at least {self._least_s:.0f} s to speak, over the "
                    f"{self._max_audio_s:g}-second audio limit",
                    code="audio_too_long",
                )
            self._texts.append(queued)
        if parts:
            self._text_ready.set()

    async def outputs(self) -> AsyncGenerator[ChunkOut, None]:
        """Encoded audio chunk by chunk; the last item holds the encoder's tail (no words)."""
        await self.admitted()
        encoder = open_encoder(self.fmt.name, output_rate_hz=self.sample_rate, bitrate=self.settings.bitrate)
        audio = ReplyAudio(self.fmt, encoder, self.stats, self.trace, self.clock, self._max_audio_s)
        jobs: asyncio.Queue[Job | Pause | SpeakstreamError | None] = asyncio.Queue(maxsize=self._lookahead + 2)
        in_flight = asyncio.Semaphore(self._lookahead + 1)  # exactly the slots ``admit`` reserved
        submitter = asyncio.create_task(self._submit(jobs, in_flight), name=f"submit-{self.request_id}")
        error: str | None = "cancelled"
        try:
            sequence = 0
            while (job := await jobs.get()) is not None:
                if isinstance(job, SpeakstreamError):
                    raise job
                outs = (
                    self._silence(audio, job, sequence)
                    if isinstance(job, Pause)
                    else self._encode(audio, job, sequence)
                )
                async for out in outs:
                    sent = time.perf_counter()
                    yield out
                    self.trace.span("send", sent, time.perf_counter(), {"speakstream.bytes": len(out.data)})
                    sequence += 1
                in_flight.release()
            if self.stats.chunks == 0:
                raise InvalidInput("the text has nothing speakable", code="empty_text")
            self.stats.gaps, self.stats.gap_s = self.clock.gaps, self.clock.gap_s
            yield await audio.tail(sequence)
            await submitter
            error = None
        except SpeakstreamError as exc:
            error = exc.code
            raise
        finally:
            self.trace.set(ttfa_s=self.stats.ttfa_s, audio_s=self.stats.duration_s, chunks=self.stats.chunks)
            self.trace.set(gaps=self.stats.gaps, voice=self.settings.voice, format=self.fmt.name)
            self.trace.end(error)
            submitter.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await submitter
            self.scheduler.cancel(self.session_id, self.request_id)
            with contextlib.suppress(Exception):  # a reply cut short still releases its codec
                encoder.close()
            self.release()

    async def _submit(
        self, jobs: asyncio.Queue[Job | Pause | SpeakstreamError | None], in_flight: asyncio.Semaphore
    ) -> None:
        index = 0
        while True:
            while not self._texts and not self._ended:
                self._text_ready.clear()
                await self._text_ready.wait()
            if not self._texts:
                break
            await in_flight.acquire()
            part = self._texts.popleft()
            if isinstance(part, Pause):
                jobs.put_nowait(part)
                continue
            self.texts.append(part.text)
            self._queued[index] = part
            try:
                job = self.scheduler.submit(
                    self.session_id,
                    self.request_id,
                    index,
                    part.text,
                    voice=part.voice,
                    speed=part.speed,
                    clock=self.clock,
                    client=self.client,
                    normalized=self.settings.normalize,
                )
            except SpeakstreamError as exc:  # the reply fails with it
                jobs.put_nowait(exc)
                return
            index += 1
            jobs.put_nowait(job)  # bounded by ``in_flight``
        jobs.put_nowait(None)

    async def _encode(self, audio: ReplyAudio, job: Job, sequence: int) -> AsyncIterator[ChunkOut]:
        """The chunk's pieces, encoded as they come from the engine."""
        try:
            async for piece in job.stream():
                words = self._placed(job, piece, audio.stats.duration_s - piece.offset_s)
                speaker = self._queued[job.index].speaker if piece.index == 0 else ""
                yield await audio.piece(job, piece, sequence, shown(job.text), words, speaker)
                sequence += 1
        except InvalidInput as exc:
            if exc.code != "empty_text":
                raise  # else: nothing speakable in this chunk, and the reply goes on

    async def _silence(self, audio: ReplyAudio, pause: Pause, sequence: int) -> AsyncIterator[ChunkOut]:
        yield await audio.silence(pause, sequence)

    def _placed(self, job: Job, piece: AudioPiece, chunk_start: float) -> tuple[WordTimestamp, ...]:
        """The piece's words, timed from the start of the reply, each with its span in the client's text."""
        if not piece.words:
            return ()
        self.spans.ssml = self._script.ssml
        spans = self.spans.place([w.word for w in piece.words], job.text, self._queued[job.index].ends_at)
        return tuple(replace(w.shifted(chunk_start), chars=chars) for w, chars in zip(piece.words, spans, strict=True))
