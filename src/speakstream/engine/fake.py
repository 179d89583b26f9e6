"""A fast, deterministic stand-in engine for protocol and transport tests.

It speaks a quiet tone whose length follows the text (about 60 ms a character, scaled by speed),
spreads word timestamps evenly, and can be told to be slow or to fail, for fault tests. Every
capability is also tested against the real Kokoro engine.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable

import numpy as np

from speakstream.engine.base import VoiceBankEngine
from speakstream.engine.cancel import CancelToken
from speakstream.engine.phonemes.phonemizer import Phonemizer
from speakstream.engine.voices import KOKORO_VOICES, VoiceBank
from speakstream.errors import EngineError
from speakstream.types import SAMPLE_RATE, AudioChunk, SynthesisTimings, WordTimestamp

_WORD = re.compile(r"\w[\w'.-]*")


class FakeEngine(VoiceBankEngine):
    """Deterministic tone 'speech'; ``seconds_per_char`` of compute simulates a real engine."""

    sample_rate = SAMPLE_RATE
    device = "fake"

    def __init__(
        self,
        *,
        seconds_per_char: float = 0.0,
        audio_per_char_s: float = 0.06,
        fail_when: Callable[[str], bool] | None = None,
    ) -> None:
        self.seconds_per_char = seconds_per_char
        self.audio_per_char_s = audio_per_char_s
        self.fail_when = fail_when
        self.calls: list[str] = []
        self.voices_used: list[str] = []
        """The voice spec of each call, beside ``calls``."""
        self.voice_bank = VoiceBank({name: np.zeros((510, 256), np.float32) for name in KOKORO_VOICES})
        self.phonemizer = Phonemizer()
        """The real G2P (it needs no model), for the phoneme routes."""

    def throughput(self) -> float:
        """Its audio a character over its compute a character, per lane."""
        return self.lanes * self.audio_per_char_s / self.seconds_per_char if self.seconds_per_char else math.inf

    def synthesize(
        self, text: str, *, voice: str = "af_heart", speed: float = 1.0, cancel: CancelToken | None = None
    ) -> AudioChunk:
        text, speed, _ = self.checked(text, voice, speed)
        self.calls.append(text)
        self.voices_used.append(voice)
        if self.fail_when and self.fail_when(text):
            raise EngineError(f"injected failure for {text[:30]!r}")
        started = time.perf_counter()
        deadline = started + self.seconds_per_char * len(text)
        while time.perf_counter() < deadline:  # "compute" that a cancel can stop, like ONNX Runtime
            time.sleep(min(0.005, max(0.0, deadline - time.perf_counter())))
            if cancel is not None:
                if cancel.paused:  # like an inference: stopped, run again when resumed
                    cancel.wait_turn()
                    deadline = time.perf_counter() + self.seconds_per_char * len(text)
                cancel.check()
        count = max(1, int(len(text) * self.audio_per_char_s / speed * SAMPLE_RATE))
        t = np.arange(count, dtype=np.float32) / SAMPLE_RATE
        samples = (0.2 * np.sin(2 * np.pi * 220.0 * t)).astype(np.float32)
        words = _even_words(text, count / SAMPLE_RATE)
        timings = SynthesisTimings(0.0, time.perf_counter() - started)
        return AudioChunk(samples, SAMPLE_RATE, text, words, timings)


def _even_words(text: str, duration_s: float) -> tuple[WordTimestamp, ...]:
    words = _WORD.findall(text)
    if not words:
        return ()
    step = duration_s / len(words)
    return tuple(WordTimestamp(w, i * step, (i + 1) * step) for i, w in enumerate(words))
