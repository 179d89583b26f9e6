"""The sound measures on signals built to known answers: silences, levels, pitch steps, matching."""

import numpy as np
import pytest

from speakstream.bench import sound

RATE = 24_000


def _tone(seconds: float, hz: float = 200.0, amplitude: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def _quiet(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * RATE), np.float32)


def _words(*spans: tuple[str, float, float]) -> list[dict[str, object]]:
    return [{"word": w, "start_s": a, "end_s": b} for w, a, b in spans]


def _pair(
    pause: float, whole_pause: float, hz_after: float = 200.0, amplitude: float = 0.3
) -> tuple[sound.Rendering, sound.Rendering]:
    """Two words of 0.5 s with ``pause`` between, as two chunks; the same words whole with ``whole_pause``."""
    streamed = np.concatenate([_tone(0.5, amplitude=amplitude), _quiet(pause), _tone(0.5, hz_after)])
    whole = np.concatenate([_tone(0.5), _quiet(whole_pause), _tone(0.5, hz_after)])
    first = [("one", 0.0, 0.5)]
    return (
        sound.rendering(streamed, RATE, [_words(*first), _words(("two", 0.5 + pause, 1.0 + pause))]),
        sound.rendering(whole, RATE, [_words(*first, ("two", 0.5 + whole_pause, 1.0 + whole_pause))]),
    )


def test_the_longest_silence_between_two_instants_and_where_it_starts() -> None:
    quiet = np.array([0, 1, 1, 0, 1, 1, 1, 1, 0, 0], dtype=bool)
    assert sound.silence(quiet, 0.0, 0.1) == pytest.approx((0.04, 0.04))
    assert sound.silence(quiet, 0.0, 0.03) == pytest.approx((0.01, 0.02))
    assert sound.silence(np.zeros(10, dtype=bool), 0.0, 0.1) == pytest.approx((0.05, 0.0))


def test_a_join_longer_than_the_wholes_is_measured_as_the_difference() -> None:
    streamed, whole = _pair(0.30, 0.12)
    (join,) = sound.joins(streamed, whole, pitch=False)
    assert join.silence_s == pytest.approx(0.30, abs=0.011)
    assert join.whole_silence_s == pytest.approx(0.12, abs=0.011)
    assert join.silence_diff_s == pytest.approx(0.18, abs=0.02)


def test_a_pitch_step_across_a_join_is_read_in_semitones() -> None:
    streamed, whole = _pair(0.2, 0.2, hz_after=200.0 * 2 ** (3 / 12))
    (join,) = sound.joins(streamed, whole)
    assert join.pitch_step == pytest.approx(3.0, abs=0.3)
    assert join.whole_pitch_step == pytest.approx(3.0, abs=0.3)


def test_a_step_over_an_octave_is_folded_into_one_as_pyins_octave_errors_are() -> None:
    streamed, whole = _pair(0.2, 0.2, hz_after=200.0 * 2 ** (15 / 12))
    (join,) = sound.joins(streamed, whole)
    assert join.pitch_step == pytest.approx(3.0, abs=0.3)


def test_a_chunk_at_half_the_amplitude_is_6_db_under_the_whole() -> None:
    streamed, whole = _pair(0.2, 0.2, amplitude=0.15)
    levels = sound.chunk_levels(streamed, whole)
    assert [round(level.level_diff_db, 1) for level in levels] == [-6.0, 0.0]
    assert levels[0].lufs_diff == pytest.approx(-6.0, abs=0.2)
    assert sound.spread([level.level_diff_db for level in levels]) == pytest.approx(6.0, abs=0.05)


def test_words_are_matched_in_order_across_spelling_and_punctuation() -> None:
    a = [sound.Word(w, 0, 0) for w in ("Hello,", "world", "again")]
    b = [sound.Word(w, 0, 0) for w in ("hello", "big", "World.", "again")]
    assert sound.matched(a, b) == {0: 0, 1: 2, 2: 3}


def test_a_join_whose_words_the_whole_does_not_speak_as_neighbours_is_left_out() -> None:
    streamed, whole = _pair(0.2, 0.2)
    other = sound.rendering(whole.samples, RATE, [_words(("one", 0.0, 0.5), ("and", 0.5, 0.6), ("two", 0.7, 1.2))])
    assert sound.joins(streamed, other, pitch=False) == []


def test_a_join_where_the_wholes_own_windows_meet_is_left_out() -> None:
    streamed, whole = _pair(0.2, 0.2)
    windows = sound.rendering(whole.samples, RATE, [_words(("one", 0.0, 0.5)), _words(("two", 0.7, 1.2))])
    assert sound.joins(streamed, windows, pitch=False) == []
    assert [join.chunk for join in sound.joins(streamed, whole, pitch=False)] == [0]


def test_a_chunks_level_is_its_speech_not_its_pauses() -> None:
    """The same words with a longer pause inside the streamed chunk are at the same level."""
    word = _tone(0.5)
    streamed = np.concatenate([word, _quiet(0.6), word])
    whole = np.concatenate([word, _quiet(0.1), word])
    words = [("one", 0.0, 0.5)]
    levels = sound.chunk_levels(
        sound.rendering(streamed, RATE, [_words(*words, ("two", 1.1, 1.6))]),
        sound.rendering(whole, RATE, [_words(*words, ("two", 0.6, 1.1))]),
    )
    assert [round(level.level_diff_db, 2) for level in levels] == [0.0]
