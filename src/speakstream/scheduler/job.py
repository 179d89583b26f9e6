"""One chunk of one reply as the scheduler holds it, and the reply's playback clock."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Hashable, Iterable
from dataclasses import dataclass, field

from speakstream.engine.base import Engine, Stream
from speakstream.engine.cancel import CancelToken
from speakstream.types import AudioPiece

MAX_PIECES_AHEAD = 64
"""Pieces of one chunk made but not yet taken by its reply (a chunk has far fewer windows)."""
Clock = Callable[[], float]
"""Seconds on a monotonic clock (``time.perf_counter``, or a test's fake)."""


def clock_now() -> float:
    """``time.perf_counter()`` looked up as it is called, so a simulation's virtual clock serves."""
    return time.perf_counter()


@dataclass(slots=True)
class PlaybackClock:
    """How far a reply's audio is ahead of its listener, who is assumed to play it in real time
    from the moment its first piece was made and to wait, when it runs dry, for the next: what
    the engine may spend on the next window. It counts the gaps the server caused (a piece late
    while its text was already queued)."""

    started_at: float | None = None
    """When the listener would have started, its waits included (it plays on from there)."""
    audio_s: float = 0.0
    now: Clock = field(default=clock_now, repr=False)
    gaps: int = 0
    """Times the listener ran dry while the server had the text of what came next."""
    gap_s: float = 0.0
    """Seconds of those gaps."""

    @property
    def playing(self) -> bool:
        return self.started_at is not None

    def add(self, seconds: float, queued_at: float | None = None, *, hold_s: float = 0.0) -> float:
        """A piece of ``seconds`` made now, whose chunk was queued at ``queued_at`` (None: a gap
        before it is not the server's); the server's gap before it, in seconds (0: none).
        ``hold_s``: the first piece is sent that much later, and the listener starts then."""
        now = self.now()
        if self.started_at is None:
            self.started_at = now + hold_s
        dry = now - self.started_at - self.audio_s
        if dry > 0:  # the listener waited, and plays on from now
            self.started_at += dry
            if queued_at is not None and queued_at < now - dry:
                self.gaps += 1
                self.gap_s += dry
                self.audio_s += seconds
                return dry
        self.audio_s += seconds
        return 0.0

    def ahead_s(self) -> float:
        if self.started_at is None:
            return 0.0
        return max(0.0, self.audio_s - (self.now() - self.started_at))


def least_buffered(jobs: Iterable[Job], *, besides: PlaybackClock | None) -> float | None:
    """The least any listener hearing its reply has buffered, over ``jobs``' replies other than the
    one whose clock is ``besides`` (None: no such listener)."""
    clocks = {id(job.clock): job.clock for job in jobs if job.clock is not None and job.clock is not besides}
    return min((clock.ahead_s() for clock in clocks.values() if clock.playing), default=None)


@dataclass(eq=False)
class Job:
    """One chunk of one reply, synthesised window by window."""

    session_id: str
    request_id: str
    index: int
    """Position of the chunk in its reply; 0 is the first."""
    text: str
    voice: str
    speed: float
    client: str = ""
    """Who asked (an address): turns are shared out per client first."""
    normalized: bool = True
    """The engine normalises the text (false: the client did)."""
    enqueued_at: float = field(default_factory=clock_now)
    started_at: float | None = None
    token: CancelToken = field(default_factory=CancelToken)
    """Stops the synthesis of this chunk if it is already running."""
    pieces: asyncio.Queue[AudioPiece | BaseException | None] = field(
        default_factory=lambda: asyncio.Queue(maxsize=MAX_PIECES_AHEAD)
    )
    synthesis: Stream | None = None
    """The engine's stream of this chunk, made at its first turn."""
    made: int = 0
    """Pieces made so far."""
    running: bool = False
    ended: bool = False
    taken: Callable[[], None] | None = None
    """Called when the reply takes a piece (room again in ``pieces``)."""
    clock: PlaybackClock | None = None
    """The reply's playback clock, shared by its chunks (None: no listener known)."""
    failed_s: float = 0.0
    """Engine seconds of the step that failed or was cancelled (a piece carries its own timings)."""
    preempted: bool = False
    """Paused for another reply's first window during the window it is making now (a window is
    paused at most once, so it always ends)."""
    crowded: bool = False
    """More replies waited for their first window than the lanes when this one was queued or when
    its opening was planned: that window is made the shortest that sounds right."""
    sound: Hashable | None = None
    """What the chunk sounds like (``Engine.sound_key``), when the scheduler caches audio."""
    cached: AudioPiece | None = None
    """The chunk's audio from the cache: answered with no engine time when it reaches its turn."""
    made_pieces: list[AudioPiece] = field(default_factory=list)
    """The pieces made so far, kept for the cache (only with a ``sound``)."""
    busy_s: float = 0.0
    """Seconds its turns held a lane."""
    audio_s: float = 0.0
    """Audio made so far."""
    beside_others: bool = True
    """Every turn so far ran while other work ran too: the chunk measures the capacity."""
    gap_s: float = 0.0
    """The server's gap before the piece made last (``PlaybackClock.add``)."""
    release_at: float | None = None
    """When the piece delivered first may be sent (its ``hold_s`` after it was made)."""
    _made: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    """Set as each piece (or the end) is delivered: a held piece goes when the next comes."""

    @property
    def queue_wait_s(self) -> float:
        return (self.started_at or time.perf_counter()) - self.enqueued_at

    @property
    def first_window(self) -> bool:
        """The first window of a reply: what a listener is waiting for."""
        return self.index == 0 and self.made == 0

    def begin(self, engine: Engine) -> Stream:
        """The engine's stream of this chunk, made at its first turn."""
        self.synthesis = engine.stream(
            self.text,
            voice=self.voice,
            speed=self.speed,
            cancel=self.token,
            opening=self.index == 0,
            normalized=self.normalized,
        )
        return self.synthesis

    async def stream(self) -> AsyncIterator[AudioPiece]:
        """The chunk's pieces as the engine makes them; raises what synthesis raised."""
        while True:
            item = await self.pieces.get()
            if self.taken is not None:
                self.taken()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            await self._held()
            yield item

    async def _held(self) -> None:
        """Until ``release_at``, or until the chunk's next piece is made (two pieces cover what one
        held was to): then the listener starts now."""
        release_at, self.release_at = self.release_at, None
        if release_at is None:
            return
        self._made.clear()
        if self.pieces.empty():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._made.wait(), max(0.0, release_at - clock_now()))
        if self.clock is not None and self.clock.started_at is not None:
            self.clock.started_at = min(self.clock.started_at, clock_now())

    def made_whole(self, piece: AudioPiece) -> list[AudioPiece] | None:
        """Count ``piece`` toward the chunk's audio, keep it when the chunk is cached; the whole
        chunk's pieces once it is done (None before, and for a chunk with no ``sound``)."""
        self.audio_s += piece.duration_s
        if self.sound is None:
            return None
        self.made_pieces.append(piece)
        whole, self.made_pieces = (self.made_pieces, []) if piece.last else (None, self.made_pieces)
        return whole

    def close(self, last: AudioPiece | BaseException | None) -> None:
        self.ended = True
        self.synthesis = None
        if last is not None:
            self.deliver(last)
        self.deliver(None)

    def deliver(self, item: AudioPiece | BaseException | None) -> None:
        with contextlib.suppress(asyncio.QueueFull):  # only a reply that stopped reading fills it
            self.pieces.put_nowait(item)
        self._made.set()
