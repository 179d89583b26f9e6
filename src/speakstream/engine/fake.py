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
from speakstream.engine.voices import VoiceBank
from speakstream.errors import EngineError
from speakstream.types import SAMPLE_RATE, AudioChunk, SynthesisTimings, WordTimestamp

KOKORO_VOICES = (
    "af_alloy af_aoede af_bella af_heart af_jessica af_kore af_nicole af_nova af_river af_sarah "
    "af_sky am_adam am_echo am_eric am_fenrir am_liam am_michael am_onyx am_puck am_santa bf_alice "
    "bf_emma bf_isabella bf_lily bm_daniel bm_fable bm_george bm_lewis ef_dora em_alex em_santa "
    "ff_siwis hf_alpha hf_beta hm_omega hm_psi if_sara im_nicola jf_alpha jf_gongitsune jf_nezumi "
    "jf_tebukuro jm_kumo pf_dora pm_alex pm_santa zf_xiaobei zf_xiaoni zf_xiaoxiao zf_xiaoyi "
    "zm_yunjian zm_yunxi zm_yunxia zm_yunyang"
).split()
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
        self.voice_bank = VoiceBank({name: np.zeros((510, 256), np.float32) for name in KOKORO_VOICES})

    def throughput(self) -> float:
        """Its audio a character over its compute a character, per lane."""
        return self.lanes * self.audio_per_char_s / self.seconds_per_char if self.seconds_per_char else math.inf

    def synthesize(
        self, text: str, *, voice: str = "af_heart", speed: float = 1.0, cancel: CancelToken | None = None
    ) -> AudioChunk:
        text, speed, _ = self.checked(text, voice, speed)
        self.calls.append(text)
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
