"""Character timings from word timings: they cover the chunk's audio exactly, in order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from speakstream.server.alignment import char_times
from speakstream.types import WordTimestamp


def test_words_share_their_span_and_gaps_go_to_what_lies_between() -> None:
    words = [WordTimestamp("Hello", 0.0, 0.5), WordTimestamp("world", 0.6, 1.0)]
    times = char_times("Hello, world!", words, 1.2)
    assert times.chars == list("Hello, world!")
    assert times.starts_ms[0] == 0 and times.starts_ms[7] == 600  # "w"
    assert times.starts_ms[-1] + times.durations_ms[-1] == 1200  # "!" ends with the audio


def test_a_word_not_in_the_text_leaves_its_span_to_its_neighbours() -> None:
    times = char_times("It is 20 now", [WordTimestamp("twenty", 0.3, 0.8)], 1.0)
    assert times.starts_ms[0] == 0 and sum(times.durations_ms) == 1000


@given(
    st.lists(st.sampled_from(["a", "bb", "ccc", "hello", "?", "!", "x1"]), min_size=1, max_size=12),
    st.lists(st.floats(0.01, 0.5), min_size=12, max_size=12),
    st.floats(0.0, 1.0),
)
def test_times_cover_the_audio_in_order(words: list[str], spans: list[float], tail: float) -> None:
    text = " ".join(words)
    at, timed = 0.0, []
    for word, span in zip(words, spans, strict=False):
        timed.append(WordTimestamp(word, at, at + span))
        at += span
    duration = at + tail
    times = char_times(text, timed, duration)
    assert len(times.chars) == len(times.starts_ms) == len(times.durations_ms) == len(text)
    assert all(d >= 0 for d in times.durations_ms)
    assert all(a + d == b for a, d, b in zip(times.starts_ms, times.durations_ms, times.starts_ms[1:], strict=False))
    assert times.starts_ms[-1] + times.durations_ms[-1] == round(duration * 1000)
