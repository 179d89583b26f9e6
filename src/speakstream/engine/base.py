"""The engine interface every stage to its right depends on, and the checks all engines share.

An engine speaks a chunk in steps (``Stream``): reading its text (phonemes, the model's front), then
one piece of audio at a time (a decoder window). The scheduler runs each step on a worker thread
and hands it the load at that moment (``types.Load``) as plain data.
"""

from __future__ import annotations

import asyncio
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator
from dataclasses import replace
from typing import Protocol

from speakstream.engine.cancel import CancelToken
from speakstream.engine.phonemes.languages import Language
from speakstream.engine.phonemes.normalize import normalize
from speakstream.engine.phonemes.phonemizer import Phonemized, Phonemizer
from speakstream.engine.voices import VoiceBank, VoiceInfo, voices_of
from speakstream.errors import InvalidInput
from speakstream.types import AudioChunk, AudioPiece, Load, SynthesisTimings

MIN_SPEED = 0.5
MAX_SPEED = 2.0
WARM_TEXT = "Ready."
"""What ``warm`` speaks: short, but as long as the windows that open a reply."""


class Stream(Protocol):
    """One chunk's synthesis, one unit of work a call; each blocks (call it from a worker thread)."""

    @property
    def prepared(self) -> bool:
        """The text is read: the next call makes audio."""
        ...

    def prepare(self, load: Load) -> None:
        """Read the text (phonemes, the model's front): the work before the first piece."""
        ...

    def step(self, load: Load) -> AudioPiece | None:
        """The next piece, planned for ``load``; None once the chunk is done (prepares if needed)."""
        ...

    def held_s(self, load: Load) -> float:
        """How long the piece made last is held before it is sent (an opening's start-up buffer),
        weighed again for ``load`` as it is now that it is made."""
        ...


class Engine(Protocol):
    """Text in, speech out. ``synthesize`` blocks; call it from a worker thread in async code."""

    sample_rate: int
    device: str
    lanes: int
    """Inferences it runs at once: the scheduler's workers when the server sets none."""
    weights: str
    """Where its sessions' weights come from: one shared copy found beside the assets, in a
    cache, or built at this start (``assets``, ``cache``, ``built``), or ``unshared``."""

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

    def sound_key(self, text: str, *, voice: str, speed: float, normalized: bool = True) -> Hashable:
        """Everything that changes how ``text`` sounds spoken so (the audio cache's key); raises
        the ``InvalidInput`` that ``stream`` would for a voice or speed it cannot use."""
        ...

    def phonemize(self, text: str, speaks: Language, *, normalized: bool = True) -> Phonemized:
        """What its G2P makes of ``text`` in ``speaks`` (normalised first unless ``normalized`` is
        false): the phonemes a pronunciation rule would replace."""
        ...

    def throughput(self) -> float:
        """Audio seconds a second it can make with every lane busy, estimated from its measured
        speed (``math.inf``: no estimate): what admission starts from before it measures."""
        ...

    def stream(
        self,
        text: str,
        *,
        voice: str,
        speed: float = 1.0,
        cancel: CancelToken | None = None,
        opening: bool = True,
        normalized: bool = True,
    ) -> Stream:
        """Speak ``text`` step by step; the pieces joined are ``synthesize``'s audio. ``opening``:
        the chunk opens a reply, so its first piece comes as soon as it can; ``normalized``
        false: the client normalised the text, so the engine reads it as it is."""
        ...


def pieces(stream: Stream, load: Load | None = None) -> Iterator[AudioPiece]:
    """Every piece of ``stream``, each step planned for ``load`` as if taken just before it (default:
    a reply alone, no listener known): the engine used directly, without a scheduler."""
    load = load or Load()
    while (piece := stream.step(replace(load, taken_at=time.perf_counter()))) is not None:
        yield piece


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


class VoiceBankEngine(ABC):
    """What every engine over a ``VoiceBank`` shares: the catalogue and the input checks."""

    voice_bank: VoiceBank
    phonemizer: Phonemizer
    lanes = 1
    weights = "unshared"

    def phonemize(self, text: str, speaks: Language, *, normalized: bool = True) -> Phonemized:
        prepare = (lambda plain: normalize(plain, speaks)) if normalized else None
        return self.phonemizer.phonemize(text, speaks, prepare=prepare)

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
        normalized: bool = True,
    ) -> Stream:
        """The chunk's audio piece by piece (``opening``: it opens a reply, so its first piece comes
        as soon as it can)."""
        return self.stream_of(text, voice, speed, cancel, opening, normalized)

    def stream_of(
        self, text: str, voice: str, speed: float, cancel: CancelToken | None, opening: bool, normalized: bool = True
    ) -> Stream:
        """``stream``, for an engine that makes a chunk at once (and reads its text as it is, so
        ``normalized`` changes nothing): its audio cut into growing pieces."""
        return WholeChunk(lambda: cut_into_pieces(self.synthesize(text, voice=voice, speed=speed, cancel=cancel)))

    def warm(self, voice: str = "af_heart") -> None:
        """``synthesize`` twice in ``voice``: the first run allocates, the second is measured."""
        for _ in range(2):
            self.synthesize(WARM_TEXT, voice=voice)

    def throughput(self) -> float:
        """No estimate: admission measures what the engine makes."""
        return math.inf

    def sound_key(self, text: str, *, voice: str, speed: float, normalized: bool = True) -> Hashable:
        """The text as given, the voice blend as weighed, its language, the speed and this engine."""
        return self.sound_of(text, self.check_voice(voice), voice, speed)

    def sound_of(self, text: str, info: VoiceInfo, voice: str, speed: float) -> Hashable:
        """``sound_key`` of a voice already checked (``info``)."""
        blend = tuple((name, round(weight, 4)) for name, weight in self.voice_bank.parse(voices_of(voice)))
        return (id(self), text.strip(), blend, info.speaks.tag, round(check_speed(speed), 4))

    def checked(self, text: object, voice: str, speed: object) -> tuple[str, float, VoiceInfo]:
        """The text, speed and voice of a request, or the ``InvalidInput`` that explains why not."""
        return check_text(text), check_speed(speed), self.check_voice(voice)


class WholeChunk:
    """A ``Stream`` over a chunk made at once: ``prepare`` makes it, each step gives the next piece."""

    def __init__(self, make: Callable[[], Iterator[AudioPiece]]) -> None:
        self._make = make
        self._pieces: Iterator[AudioPiece] | None = None

    @property
    def prepared(self) -> bool:
        return self._pieces is not None

    def prepare(self, load: Load) -> None:
        self._made()

    def step(self, load: Load) -> AudioPiece | None:
        return next(self._made(), None)

    def held_s(self, load: Load) -> float:
        return 0.0  # made whole: nothing after its first piece waits for a lane

    def _made(self) -> Iterator[AudioPiece]:
        if self._pieces is None:
            self._pieces = self._make()
        return self._pieces


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
