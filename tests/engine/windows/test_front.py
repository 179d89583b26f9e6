import numpy as np

from speakstream.engine.windows.front import Utterance, timeline
from speakstream.types import SAMPLE_RATE, WordTimestamp


def _utterance(samples: int, *words: tuple[str, int, int]) -> Utterance:
    empty = np.zeros(0, np.float32)
    timed = tuple(WordTimestamp(w, a / SAMPLE_RATE, b / SAMPLE_RATE) for w, a, b in words)
    return Utterance(empty, empty, empty, empty, 0, 0, samples, timed, 0, samples, 0)


def test_a_chunks_words_follow_its_first_piece_cut_to_its_speech() -> None:
    first = _utterance(24_000, ("one", 3_000, 9_000), ("two", 10_000, 24_000))
    second = _utterance(12_000, ("three", 480, 12_000))
    words, total = timeline([first, second], pause=2_400, cut=2_000)
    assert total == 24_000 + 2_400 + 12_000 - 2_000
    at = [(w.word, round(w.start_s * SAMPLE_RATE), round(w.end_s * SAMPLE_RATE)) for w in words]
    assert at == [("one", 1_000, 7_000), ("two", 8_000, 22_000), ("three", 24_880, 36_400)]
    assert words[-1].end_s == total / SAMPLE_RATE  # counted in samples: the last word ends with the chunk
