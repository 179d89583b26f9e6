import numpy as np
import pytest

from speakstream.bench.player import heard, pcm_arrivals, play
from speakstream.bench.stats import ratio, summary


def test_no_gap_when_audio_arrives_ahead_of_playback() -> None:
    playback = play([(1.0, 2.0), (1.5, 2.0), (2.9, 1.0)], sent_at=0.5)
    assert playback.ttfa_s == 0.5
    assert playback.gaps == ()
    assert playback.audio_s == 5.0


def test_gaps_are_counted_when_the_buffer_runs_dry() -> None:
    playback = play([(1.0, 1.0), (2.5, 1.0), (3.5, 1.0), (5.0, 0.5)], sent_at=0.0)
    assert playback.gaps == pytest.approx((0.5, 0.5))
    assert playback.stall_s == pytest.approx(1.0)
    assert playback.to_dict()["stalls"] == 2


def test_tiny_jitter_is_not_audible() -> None:
    assert play([(0.0, 1.0), (1.01, 1.0)], sent_at=0.0).gaps == ()


def test_what_is_heard_has_silence_where_the_buffer_ran_dry() -> None:
    one = np.ones(24_000, np.float32)
    audio = heard([(1.0, one), (2.5, one), (3.0, one[:12_000])])
    assert len(audio) == 24_000 + 12_000 + 24_000 + 12_000  # the last piece came before the buffer ran dry
    assert not audio[24_000:36_000].any() and audio[36_000:].all()
    assert len(heard([])) == 0


def test_pcm_arrivals() -> None:
    assert pcm_arrivals([(1.0, 48_000)]) == [(1.0, 1.0)]
    assert play([], 0.0).audio_s == 0


def test_summary_and_ratio() -> None:
    s = summary([0.1, 0.2, 0.3, 0.4], scale=1000)
    assert (s["mean"], s["p50"], s["min"], s["max"], s["n"]) == (250.0, 250.0, 100.0, 400.0, 4)
    assert summary([]) == {"n": 0}
    assert ratio(3.0, 1.5) == 2.0 and ratio(None, 1.0) is None and ratio(1.0, 0.0) is None
