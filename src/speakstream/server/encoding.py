"""A reply's audio on its way out: each piece encoded (off the event loop for a codec), placed
from the start of the reply, counted in the reply's stats and trace, and held to its audio limit."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from speakstream.audio import AudioFormat, Encoder
from speakstream.errors import InvalidInput
from speakstream.scheduler import Job, PlaybackClock
from speakstream.server.tracing import ReplyTrace
from speakstream.text.ssml import Pause
from speakstream.types import SAMPLE_RATE, AudioPiece, WordTimestamp


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
    voice: str = ""
    """Who speaks the chunk (on its first piece): the voice as the client named it."""

    @property
    def starts_chunk(self) -> bool:
        return bool(self.text)


@dataclass(slots=True)
class ReplyStats:
    started_at: float = field(default_factory=lambda: time.perf_counter())
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


@dataclass(slots=True)
class ReplyAudio:
    """One reply's encoder, and what its audio has come to so far."""

    fmt: AudioFormat
    encoder: Encoder
    stats: ReplyStats
    trace: ReplyTrace
    clock: PlaybackClock
    max_audio_s: float

    async def piece(
        self,
        job: Job,
        piece: AudioPiece,
        sequence: int,
        text: str,
        words: tuple[WordTimestamp, ...],
        voice: str = "",
    ) -> ChunkOut:
        """``piece`` of ``job``'s chunk encoded (``text``, ``voice``: the chunk's, on its first
        piece; ``words``: the piece's, placed in the reply)."""
        offset = self.stats.duration_s
        self._check_length(piece.duration_s)
        if piece.index == 0:
            self.stats.queue_wait_s += job.queue_wait_s
            self.stats.phonemize_s += piece.timings.phonemize_s
            self.stats.chunks += 1
        self.stats.inference_s += piece.timings.inference_s
        self.trace.piece(job.index, job.enqueued_at, piece)
        started = time.perf_counter()
        data = await self.off_loop(lambda: self.encoder.encode(piece.samples))
        self.stats.encode_s += time.perf_counter() - started
        self.trace.span("encode", started, time.perf_counter(), {"speakstream.chunk": job.index})
        self.stats.duration_s += piece.duration_s
        first = piece.index == 0
        chunk_s = piece.chunk_duration_s if first else 0.0
        shown = text if first else ""
        data = self._count(data)
        return ChunkOut(sequence, shown, data, offset, piece.duration_s, words, chunk_s, piece.last, voice)

    async def silence(self, pause: Pause, sequence: int) -> ChunkOut:
        """An SSML break: silence of its length, between two chunks (no engine time)."""
        samples = np.zeros(round(pause.seconds * SAMPLE_RATE), dtype=np.float32)
        self._check_length(pause.seconds)
        data = await self.off_loop(lambda: self.encoder.encode(samples))
        offset = self.stats.duration_s
        self.stats.duration_s += pause.seconds
        self.clock.add(pause.seconds)
        return ChunkOut(sequence, "", self._count(data), offset, pause.seconds, ())

    async def tail(self, sequence: int) -> ChunkOut:
        """What the encoder still holds, once the reply's audio is all in."""
        data = await self.off_loop(self.encoder.close)
        return ChunkOut(sequence, "", self._count(data), self.stats.duration_s, 0.0, ())

    async def off_loop(self, encode: Callable[[], bytes]) -> bytes:
        """Raw formats are a copy; codecs run in a thread so the event loop stays free."""
        return encode() if self.fmt.raw else await asyncio.to_thread(encode)

    def _check_length(self, seconds: float) -> None:
        if self.stats.duration_s + seconds > self.max_audio_s:
            raise InvalidInput(
                f"the request makes more than the {self.max_audio_s:g}-second audio limit", code="audio_too_long"
            )

    def _count(self, data: bytes) -> bytes:
        if data and self.stats.first_audio_at is None:
            self.stats.first_audio_at = time.perf_counter()
        self.stats.audio_bytes += len(data)
        return data
