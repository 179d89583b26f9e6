"""The speed probe: the engine's compute per second of audio, the fewest of its tries."""

from typing import Any

from speakstream.bench.probe import PROBE_TEXT, engine_rtf
from speakstream.engine.fake import FakeEngine
from speakstream.types import AudioChunk


class TimedEngine(FakeEngine):
    """Each synthesis takes the next of ``seconds`` on a clock of its own (no real time)."""

    def __init__(self, seconds: list[float]) -> None:
        super().__init__()
        self.seconds, self.now, self.texts = iter(seconds), 100.0, []

    def clock(self) -> float:
        return self.now

    def synthesize(self, text: str, **options: Any) -> AudioChunk:
        self.texts.append(text)
        self.now += next(self.seconds)
        return super().synthesize(text, **options)


def test_the_probe_decodes_the_fixed_sentence_and_keeps_the_fastest_try() -> None:
    engine = TimedEngine([2.0, 1.0, 3.0])
    audio_s = FakeEngine().synthesize(PROBE_TEXT).duration_s
    assert engine_rtf(engine, tries=3, clock=engine.clock) == round(1.0 / audio_s, 3)
    assert engine.texts == [PROBE_TEXT] * 3
