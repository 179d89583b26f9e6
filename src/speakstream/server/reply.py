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
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from speakstream.audio import Encoder, audio_format, open_encoder, output_rate
from speakstream.engine.base import check_speed
from speakstream.engine.phonemes.inline import to_kokoro
from speakstream.engine.phonemes.phonemizer import vocab
from speakstream.engine.phonemes.scripts import check_script
from speakstream.errors import InvalidInput, SpeakstreamError
from speakstream.protocol import CHUNKING
from speakstream.scheduler import Job, PlaybackClock, Scheduler
from speakstream.server.tracing import ReplyTrace
from speakstream.text import ChunkPolicy, IncrementalSentenceChunker, chunk_text
from speakstream.text.chunker import has_words
from speakstream.text.lexicon import INLINE, Lexicon, Rewriter
from speakstream.types import AudioPiece, WordTimestamp


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplySettings:
    voice: str = "af_heart"
    speed: float = 1.0
    format: str = "pcm"
    sample_rate: int | None = None
    """Output rate; None means the format's default (24 kHz, or 8 kHz for mu-law)."""
    bitrate: int | None = None
    chunking: str = "auto"
    """``auto``: the server's policy; ``sentences``: whole sentences only; ``none``: one chunk."""
    lexicon: Lexicon | None = None
    """Pronunciation rules, applied to the text before it is chunked."""


@dataclass(slots=True)
class ChunkOut:
    """The encoded audio of one piece of a chunk (may be empty while a codec fills a frame).

    A chunk's first piece carries its ``text``, ``words`` and ``chunk_duration_s`` (all known from
    the model's durations before its audio is made); its later pieces carry audio only."""

    sequence: int
    """Counts every output of the reply: 0, 1, 2, ..."""
    text: str
    data: bytes
    offset_s: float
    """Where this piece's audio starts in the reply."""
    duration_s: float
    """This piece's audio."""
    words: tuple[WordTimestamp, ...]
    """Word times from the start of the reply."""
    chunk_duration_s: float = 0.0
    """The whole chunk's audio (on a chunk's first piece), from the model's durations: an upper
    bound, as the engine trims the chunk's trailing silence while it decodes."""
    ends_chunk: bool = False
    """The chunk's last piece."""

    @property
    def starts_chunk(self) -> bool:
        return bool(self.text)


@dataclass(slots=True)
class ReplyStats:
    started_at: float = field(default_factory=time.perf_counter)
    first_audio_at: float | None = None
    audio_bytes: int = 0
    duration_s: float = 0.0
    chunks: int = 0
    queue_wait_s: float = 0.0
    admission_wait_s: float = 0.0
    """Seconds it waited for room at a server at its capacity."""
    phonemize_s: float = 0.0
    inference_s: float = 0.0
    encode_s: float = 0.0
    gaps: int = 0
    """Times its listener, playing in real time, ran dry while its next text was queued."""
    gap_s: float = 0.0

    @property
    def ttfa_s(self) -> float | None:
        return None if self.first_audio_at is None else self.first_audio_at - self.started_at

    def timings(self) -> dict[str, float]:
        return {
            "ttfa_s": round(self.ttfa_s or 0.0, 4),
            "queue_wait_s": round(self.queue_wait_s, 4),
            "admission_wait_s": round(self.admission_wait_s, 4),
            "phonemize_s": round(self.phonemize_s, 4),
            "inference_s": round(self.inference_s, 4),
            "encode_s": round(self.encode_s, 4),
            "gaps": self.gaps,
            "gap_s": round(self.gap_s, 4),
            "total_s": round(time.perf_counter() - self.started_at, 4),
        }


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
        self.settings = validate(scheduler, settings)
        self.fmt = audio_format(settings.format)
        self.sample_rate = output_rate(self.fmt, settings.sample_rate)
        self.stats = ReplyStats()
        self.trace = trace or ReplyTrace(None, None)
        self.clock = PlaybackClock()
        """How far this reply's audio is ahead of its listener (sizes the engine's windows)."""
        self._chunker = chunker_for(settings.chunking, policy or ChunkPolicy())
        self._rewriter: Rewriter | None = settings.lexicon.rewriter() if settings.lexicon else None
        self._texts: deque[str] = deque()
        self._text_ready = asyncio.Event()
        self._ended = False
        self._received = 0
        self._max_text_chars = max_text_chars
        self._max_audio_s = max_audio_s
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
        self._queue_texts(self._chunker.feed(self._rewritten(fragment)))

    async def apush(self, fragment: str) -> None:
        """``push``, with a fragment of ``OFF_LOOP_CHARS`` or more chunked in a worker thread; the
        caller awaits it before it touches this reply again (one reader per session)."""
        if len(fragment) < OFF_LOOP_CHARS:
            self.push(fragment)
            return
        self._take(fragment)
        chunker = self._chunker
        self._queue_texts(await asyncio.to_thread(lambda: chunker.feed(self._rewritten(fragment))))

    async def speak(self, text: str) -> None:
        """A whole text, then the end of input (a long one chunked off the event loop)."""
        await self.apush(text)
        self.end_input()

    def push_chunk(self, text: str) -> None:
        """Text the client already chunked: spoken as one chunk, as it is (after anything pushed
        before it), so a chunking client such as ``VoiceAgent`` is the only one that decides."""
        self._take(text)
        held = self._held_back()
        text = self._rewriter.lexicon.apply(text) if self._rewriter else text
        self._queue_texts([*held, *self._chunker.cut(), *([text.strip()] if text.strip() else [])])

    def _rewritten(self, fragment: str) -> str:
        """``fragment`` with the pronunciation rules applied (a tail that may start one is held)."""
        return self._rewriter.feed(fragment) if self._rewriter else fragment

    def _held_back(self) -> list[str]:
        """The chunks the text the rules held back completes, now that no more follows it."""
        return self._chunker.feed(self._rewriter.flush()) if self._rewriter else []

    @property
    def chunks_queued(self) -> int:
        """Chunks cut so far: those handed to the engine and those waiting for their turn."""
        return len(self.texts) + len(self._texts)

    def _take(self, text: str) -> None:
        if self._ended:
            raise InvalidInput(f"request {self.request_id} already ended its input", code="request_closed")
        self._received += len(text)
        if self._received > self._max_text_chars:
            raise InvalidInput(f"text is over the {self._max_text_chars}-character limit", code="text_too_long")

    def end_input(self) -> None:
        if self._ended:
            return
        self._ended = True
        self._queue_texts([*self._held_back(), *self._chunker.flush_all()])
        self._text_ready.set()

    def _queue_texts(self, texts: list[str]) -> None:
        texts = [text for text in texts if has_words(text)]  # a run of marks alone: the chunks' pause
        if texts:
            self._texts.extend(texts)
            self._text_ready.set()

    async def outputs(self) -> AsyncIterator[ChunkOut]:
        """Encoded audio chunk by chunk; the last item holds the encoder's tail (no words)."""
        await self.admitted()
        encoder = open_encoder(self.fmt.name, output_rate_hz=self.sample_rate, bitrate=self.settings.bitrate)
        jobs: asyncio.Queue[Job | SpeakstreamError | None] = asyncio.Queue(maxsize=self._lookahead + 2)
        in_flight = asyncio.Semaphore(self._lookahead + 1)  # exactly the slots ``admit`` reserved
        submitter = asyncio.create_task(self._submit(jobs, in_flight), name=f"submit-{self.request_id}")
        error: str | None = "cancelled"
        try:
            sequence = 0
            while (job := await jobs.get()) is not None:
                if isinstance(job, SpeakstreamError):
                    raise job
                async for out in self._encode(encoder, job, sequence):
                    sent = time.perf_counter()
                    yield out
                    self.trace.span("send", sent, time.perf_counter(), {"speakstream.bytes": len(out.data)})
                    sequence += 1
                in_flight.release()
            if self.stats.chunks == 0:
                raise InvalidInput("the text has nothing speakable", code="empty_text")
            self.stats.gaps, self.stats.gap_s = self.clock.gaps, self.clock.gap_s
            tail = await self._off_loop(encoder.close)
            yield ChunkOut(sequence, "", self._count(tail), self.stats.duration_s, 0.0, ())
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

    async def _submit(self, jobs: asyncio.Queue[Job | SpeakstreamError | None], in_flight: asyncio.Semaphore) -> None:
        index = 0
        while True:
            while not self._texts and not self._ended:
                self._text_ready.clear()
                await self._text_ready.wait()
            if not self._texts:
                break
            await in_flight.acquire()
            text = self._texts.popleft()
            self.texts.append(text)
            try:
                job = self.scheduler.submit(
                    self.session_id,
                    self.request_id,
                    index,
                    text,
                    voice=self.settings.voice,
                    speed=self.settings.speed,
                    clock=self.clock,
                    client=self.client,
                )
            except SpeakstreamError as exc:  # the reply fails with it
                jobs.put_nowait(exc)
                return
            index += 1
            jobs.put_nowait(job)  # bounded by ``in_flight``
        jobs.put_nowait(None)

    async def _encode(self, encoder: Encoder, job: Job, sequence: int) -> AsyncIterator[ChunkOut]:
        """The chunk's pieces, encoded as they come from the engine."""
        try:
            async for piece in job.stream():
                yield await self._encode_piece(encoder, job, piece, sequence)
                sequence += 1
        except InvalidInput as exc:
            if exc.code != "empty_text":
                raise  # else: nothing speakable in this chunk, and the reply goes on

    async def _encode_piece(self, encoder: Encoder, job: Job, piece: AudioPiece, sequence: int) -> ChunkOut:
        offset = self.stats.duration_s
        if offset + piece.duration_s > self._max_audio_s:
            raise InvalidInput(
                f"the request makes more than the {self._max_audio_s:g}-second audio limit", code="audio_too_long"
            )
        if piece.index == 0:
            self.stats.queue_wait_s += job.queue_wait_s
            self.stats.phonemize_s += piece.timings.phonemize_s
            self.stats.chunks += 1
        self.stats.inference_s += piece.timings.inference_s
        self.trace.piece(job.index, job.enqueued_at, piece)
        started = time.perf_counter()
        data = await self._off_loop(lambda: encoder.encode(piece.samples))
        self.stats.encode_s += time.perf_counter() - started
        self.trace.span("encode", started, time.perf_counter(), {"speakstream.chunk": job.index})
        self.stats.duration_s += piece.duration_s
        first = piece.index == 0
        chunk_start = offset - piece.offset_s
        return ChunkOut(
            sequence,
            shown(job.text) if first else "",
            self._count(data),
            offset,
            piece.duration_s,
            tuple(w.shifted(chunk_start) for w in piece.words),
            piece.chunk_duration_s if first else 0.0,
            piece.last,
        )

    async def _off_loop(self, encode: Callable[[], bytes]) -> bytes:
        """Raw formats are a copy; codecs run in a thread so the event loop stays free."""
        return encode() if self.fmt.raw else await asyncio.to_thread(encode)

    def _count(self, data: bytes) -> bytes:
        if data and self.stats.first_audio_at is None:
            self.stats.first_audio_at = time.perf_counter()
        self.stats.audio_bytes += len(data)
        return data


class WholeText:
    """The chunker of ``chunking: none``: the text is spoken as one piece, or, when it is longer
    than one engine job should be, as runs of whole sentences of up to ``max_chars`` (the engine
    would cut it at about the same places: its phoneme windows hold about 400 characters)."""

    def __init__(self, max_chars: int = 1_000) -> None:
        self._parts: list[str] = []
        self._max_chars = max_chars

    def feed(self, fragment: str) -> list[str]:
        self._parts.append(fragment)
        return []

    def cut(self) -> list[str]:
        text, self._parts = "".join(self._parts).strip(), []
        if len(text) <= self._max_chars:
            return [text] if text else []
        sentences = chunk_text(text, ChunkPolicy(first_clause=False, schedule=(), max_chunk_chars=self._max_chars))
        runs: list[str] = []
        for sentence in sentences:
            if runs and len(runs[-1]) + 1 + len(sentence) <= self._max_chars:
                runs[-1] += " " + sentence
            else:
                runs.append(sentence)
        return runs

    flush_all = cut


def chunker_for(chunking: str, policy: ChunkPolicy) -> IncrementalSentenceChunker | WholeText:
    if chunking == "none":
        return WholeText()
    if chunking == "sentences":
        return IncrementalSentenceChunker(replace(policy, first_clause=False, schedule=()))
    if chunking == "auto":
        return IncrementalSentenceChunker(policy)
    raise InvalidInput(f"chunking must be one of {', '.join(CHUNKING)}, not {chunking!r}", code="invalid_chunking")


def shown(text: str) -> str:
    """A chunk's text as clients see it: a word given inline phonemes is the word alone."""
    return INLINE.sub(r"\1", text) if "](/" in text else text


def check_readable(scheduler: Scheduler, settings: ReplySettings, text: str) -> None:
    """A whole text the reply's language cannot read is a 400 before any audio, not an error
    after the stream has begun (``unsupported_text``), and so are inline phonemes the model has
    no symbols for (``invalid_phonemes``)."""
    language = scheduler.engine.check_voice(settings.voice).speaks
    check_script(text, language)
    for given in INLINE.finditer(text):
        to_kokoro(given.group(2), language, vocab())


def validate(scheduler: Scheduler, settings: ReplySettings) -> ReplySettings:
    """Check voice, speed, format and rate before any work starts (clear 4xx / error frame)."""
    scheduler.engine.check_voice(settings.voice)
    check_speed(settings.speed)
    output_rate(audio_format(settings.format), settings.sample_rate)
    return settings
