"""Batch lengths: a window grows to the next of a few lengths, within its utterance, keeping what
it covered, so that windows of different sessions share a length."""

from hypothesis import given
from hypothesis import strategies as st

from speakstream.engine.windows.ends import BATCH_SIZES, sized


@given(st.data())
def test_a_window_grows_to_the_next_batch_length_within_its_utterance(data: st.DataObject) -> None:
    total = data.draw(st.integers(1, 3000))
    start = data.draw(st.integers(0, total - 1))
    end = data.draw(st.integers(start + 1, total))
    low, high = sized(start, end, total)
    assert 0 <= low <= start < end <= high <= total
    size = next((s for s in BATCH_SIZES if s >= end - start), end - start)
    assert high - low == min(size, total)


def test_the_windows_a_planner_makes_land_on_six_lengths() -> None:
    spans = [sized(start, start + frames, 2000) for start in range(0, 900, 37) for frames in range(17, 129)]
    assert {high - low for low, high in spans} == {24, 32, 48, 64, 96, 128}
