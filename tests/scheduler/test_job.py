"""A reply's playback clock: what its listener has buffered, and the gaps the server caused."""

import pytest

from speakstream.scheduler.job import PlaybackClock


class Tick:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_a_listener_that_ran_dry_plays_on_from_the_next_piece() -> None:
    """After a gap the listener has the new piece buffered, not less than nothing: windows are
    sized from what it will really hear."""
    now = Tick()
    clock = PlaybackClock(now=now)
    clock.add(1.0, queued_at=0.0)
    now.t = 1.5  # dry since 1.0
    clock.add(2.0, queued_at=0.0)
    assert clock.ahead_s() == pytest.approx(2.0)
    now.t = 2.5
    assert clock.ahead_s() == pytest.approx(1.0)


def test_only_a_gap_whose_text_was_queued_counts_as_the_server_s() -> None:
    now = Tick()
    clock = PlaybackClock(now=now)
    clock.add(1.0, queued_at=0.0)
    now.t = 1.5
    clock.add(1.0, queued_at=0.2)  # queued while the listener still played: the server's gap
    now.t = 4.0
    clock.add(1.0, queued_at=3.8)  # the text came after the listener ran dry: the writer's
    now.t = 4.5
    clock.add(1.0, queued_at=4.1)  # in time: no gap
    assert (clock.gaps, clock.gap_s) == (1, pytest.approx(0.5))
    assert clock.ahead_s() == pytest.approx(1.5)
