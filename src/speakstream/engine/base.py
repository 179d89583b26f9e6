"""The engine interface every stage to its right depends on, and the checks all engines share."""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Protocol

from speakstream.engine.voices import VoiceBank, VoiceInfo
from speakstream.errors import InvalidInput, SpeakstreamError
from speakstream.types import AudioChunk, AudioPiece, SynthesisTimings

MIN_SPEED = 0.5
MAX_SPEED = 2.0
Ahead = Callable[[], float | None]
"""Seconds of a reply's audio its listener has buffered now (None: not known)."""
Crowded = Callable[[], bool]
"""Whether more listeners wait for their first audio than the engine runs at once, asked as the
window that opens a reply is sized (replies that came while its text was read count)."""


class SynthesisCancelled(SpeakstreamError):
    code = "cancelled"


class CancelToken:
    """Lets another thread stop a synthesis that is running (barge-in), or pause it: a paused
    synthesis stops the inference it is in and runs it again once resumed, so that another reply's
    first window can have the engine at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._callbacks: list[Callable[[], None]] = []
        self._interrupt: Callable[[], None] | None = None
        self._run: tuple[float, float | None] | None = None
        self._resumed = threading.Event()
        self._resumed.set()
        self._waited_s = 0.0

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def paused(self) -> bool:
        return not self._resumed.is_set()

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
            interrupt = self._interrupt
        self._resumed.set()  # a paused synthesis wakes up to stop
        for callback in [*callbacks, *([interrupt] if interrupt else [])]:
            callback()

    def pause(self) -> None:
        """Stop the running inference (see ``interruptible``); the next waits in ``wait_turn``."""
        with self._lock:
            if self._cancelled:
                return
            self._resumed.clear()
            interrupt = self._interrupt
        if interrupt is not None:
            interrupt()

    def resume(self) -> None:
        self._resumed.set()

    def wait_turn(self) -> None:
        """Block while paused; raise ``SynthesisCancelled`` if cancelled."""
        if self.paused:
            started = time.perf_counter()
            self._resumed.wait()
            self._waited_s += time.perf_counter() - started
        self.check()

    @property
    def waited_s(self) -> float:
        """Seconds the synthesis has waited, paused, for its turn (``wait_turn``), in all: not its
        inference time."""
        return self._waited_s

    @contextlib.contextmanager
    def interruptible(self, stop: Callable[[], None], expected_s: float | None = None) -> Iterator[None]:
        """While inside, ``cancel`` and ``pause`` call ``stop`` (the running inference's own stop);
        ``expected_s``: how long the inference should take, if known (see ``running``)."""
        with self._lock:
            self._interrupt = stop
            self._run = (time.perf_counter(), expected_s)
            pending = self._cancelled or self.paused
        if pending:
            stop()
        try:
            yield
        finally:
            with self._lock:
                self._interrupt = None
                self._run = None

    def running(self) -> tuple[float, float | None] | None:
        """Seconds the inference in progress has run and how long it should take (None if not
        known), or None between inferences: what pausing it now would lose."""
        run = self._run
        return None if run is None else (time.perf_counter() - run[0], run[1])

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when cancelled (at once if it already is)."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return
        callback()

    def check(self) -> None:
        if self._cancelled:
            raise SynthesisCancelled("synthesis cancelled")


class Engine(Protocol):
    """Text in, speech out. ``synthesize`` blocks; call it from a worker thread in async code."""

    sample_rate: int
    device: str

    def voices(self) -> list[VoiceInfo]: ...

    def check_voice(self, voice: str) -> VoiceInfo:
        """The voice's catalogue entry; raises ``UnknownVoice`` for an unknown name or blend."""
        ...

    def synthesize(self, text: str, *, voice: str, speed: float = 1.0, cancel: CancelToken | None = None) -> AudioChunk:
        """Speak ``text``; a cancelled ``cancel`` token stops it early with ``SynthesisCancelled``."""
        ...

    def warm(self, voice: str) -> None:
        """Before serving: make the first replies as fast as the later ones (blocks)."""
        ...

    def stream(
        self,
        text: str,
        *,
        voice: str,
        speed: float = 1.0,
        cancel: CancelToken | None = None,
        opening: bool = True,
        ahead: Ahead | None = None,
        crowded: Crowded | None = None,
    ) -> Iterator[AudioPiece]:
        """Speak ``text`` piece by piece (each ``next`` is one unit of work, e.g. a decoder window);
        the pieces joined are ``synthesize``'s audio. ``opening``: the chunk opens a reply (make
        its first piece as soon as possible); ``ahead``: seconds of the reply's audio its listener
        has buffered, so an engine can size its work to arrive in time; ``crowded()``: more
        listeners wait for their first audio than the engine runs at once (an opening's work
        delays the listeners behind it: make it the least that sounds right)."""
        ...


class WorkClock:
    """Seconds a synthesis spent working since it last started the clock: the time it waited,
    paused, for its turn (``CancelToken.waited_s``) is left out, the stopped try's compute is not."""

    def __init__(self, cancel: CancelToken | None) -> None:
        self._cancel = cancel
        self.restart()

    def restart(self) -> None:
        self._started, self._waited = time.perf_counter(), self._waited_s()

    def seconds(self) -> float:
        return time.perf_counter() - self._started - (self._waited_s() - self._waited)

    def _waited_s(self) -> float:
        return 0.0 if self._cancel is None else self._cancel.waited_s


def check_speed(speed: object) -> float:
    if isinstance(speed, bool) or not isinstance(speed, int | float) or not math.isfinite(speed):
        raise InvalidInput("speed must be a number", code="invalid_speed")
    if not MIN_SPEED <= float(speed) <= MAX_SPEED:
        raise InvalidInput(f"speed must be between {MIN_SPEED} and {MAX_SPEED}, got {speed}", code="invalid_speed")
    return float(speed)


def check_text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidInput("text must be a string", code="invalid_text")
    if not text.strip():
        raise InvalidInput("text is empty", code="empty_text")
    return text


WARM_TEXT = "Ready."
"""What ``warm`` speaks: short, but as long as the windows that open a reply."""


class VoiceBankEngine(ABC):
    """What every engine over a ``VoiceBank`` shares: the catalogue and the input checks."""

    voice_bank: VoiceBank

    def voices(self) -> list[VoiceInfo]:
        return self.voice_bank.catalogue()

    def check_voice(self, voice: str) -> VoiceInfo:
        return self.voice_bank.info(voice)

    async def asynthesize(
        self, text: str, *, voice: str = "af_heart", speed: float = 1.0, cancel: CancelToken | None = None
    ) -> AudioChunk:
        """``synthesize`` in a worker thread, for async code (the event loop keeps running)."""
        return await asyncio.to_thread(self.synthesize, text, voice=voice, speed=speed, cancel=cancel)

    @abstractmethod
    def synthesize(
        self, text: str, *, voice: str = "af_heart", speed: float = 1.0, cancel: CancelToken | None = None
    ) -> AudioChunk: ...

    def stream(
        self,
        text: str,
        *,
        voice: str = "af_heart",
        speed: float = 1.0,
        cancel: CancelToken | None = None,
        opening: bool = True,
        ahead: Ahead | None = None,
        crowded: Crowded | None = None,
    ) -> Iterator[AudioPiece]:
        """For an engine that makes a chunk at once: its audio, cut into growing pieces."""
        chunk = self.synthesize(text, voice=voice, speed=speed, cancel=cancel)
        yield from cut_into_pieces(chunk)

    def warm(self, voice: str = "af_heart") -> None:
        """``synthesize`` twice in ``voice``: the first run allocates, the second is measured."""
        for _ in range(2):
            self.synthesize(WARM_TEXT, voice=voice)

    def checked(self, text: object, voice: str, speed: object) -> tuple[str, float, VoiceInfo]:
        """The text, speed and voice of a request, or the ``InvalidInput`` that explains why not."""
        return check_text(text), check_speed(speed), self.check_voice(voice)


def cut_into_pieces(chunk: AudioChunk, first_s: float = 0.3, max_s: float = 2.4) -> Iterator[AudioPiece]:
    """A whole chunk as pieces of 0.3, 0.6, 1.2, 2.4, 2.4 ... seconds (what a windowed engine yields)."""
    rate, total, start, size, index = chunk.sample_rate, len(chunk.samples), 0, first_s, 0
    while True:
        end = min(total, start + max(1, int(size * rate)))
        yield AudioPiece(
            chunk.samples[start:end],
            index,
            start / rate,
            chunk.duration_s,
            chunk.words if index == 0 else (),
            end >= total,
            chunk.timings if index == 0 else SynthesisTimings(),
            rate,
        )
        if end >= total:
            return
        start, size, index = end, min(max_s, size * 2), index + 1
