"""First-window priority and preemption on their own: decisions over plain jobs and numbers, the
playback clock on a fake clock."""

from __future__ import annotations

import pytest

from speakstream.scheduler.job import Job, PlaybackClock
from speakstream.scheduler.priority import Priority, crowded, openings, worth_pausing


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _job(session: str, index: int = 0, made: int = 0) -> Job:
    job = Job(session, f"{session}-r", index, f"{session}{index}", "af_heart", 1.0)
    job.made = made
    return job


def _first(ready: list[Job]) -> Job | None:
    return ready[0] if ready else None


def test_a_playback_clock_drains_in_real_time_from_the_first_piece() -> None:
    clock = FakeClock()
    playback = PlaybackClock(now=clock)
    assert playback.ahead_s() == 0.0 and not playback.playing
    playback.add(2.0)
    assert playback.playing and playback.ahead_s() == 2.0
    clock.now += 0.5
    assert playback.ahead_s() == 1.5
    playback.add(1.0)
    clock.now += 10.0
    assert playback.ahead_s() == 0.0  # ran dry: never negative


@pytest.mark.parametrize(
    ("buffered_s", "window_s", "paused"),
    [
        (100.0, 0.2, True),  # a listener far ahead loses nothing it would hear
        (0.0, 10.0, True),  # a dry listener's long window: the wait saved is longer than the stall added
        (0.0, 0.2, False),  # a dry listener's short window: the first window waits for it instead
        (float("inf"), 0.2, True),  # a reply whose listener is not known yet
        (0.5, 0.66, False),  # a listener hearing speech would run dry: no gap for another's first word
        (1.5, 0.66, True),  # ... one far enough ahead hears none
    ],
)
def test_a_window_is_paused_when_it_adds_no_gap_or_saves_more_than_it_adds_to_one(
    buffered_s: float, window_s: float, paused: bool
) -> None:
    assert worth_pausing(window_s, window_s, buffered_s, first_window_s=0.4) is paused


def test_the_job_s_window_is_weighed_with_its_listener_s_buffer() -> None:
    clock = FakeClock()
    priority, job = Priority(), _job("a", 1)
    job.clock = PlaybackClock(now=clock)
    job.clock.add(5.0)
    clock.now += 5.0  # the listener has heard it all: dry
    with job.token.interruptible(lambda: None, expected_s=0.2):
        assert not priority.worth(job)
    clock.now -= 4.0  # 4 s ahead
    with job.token.interruptible(lambda: None, expected_s=0.2):
        assert priority.worth(job)
    assert priority.worth(job)  # between inferences nothing decoded is lost


def test_a_window_is_paused_only_when_its_listener_outlasts_it_run_again_beside_another() -> None:
    """A paused window runs again, whole, beside the next windows of the reply it was paused for:
    on a share of the cores, so it is weighed at a narrow copy's speed. A listener who would
    outlast it run again alone, but not beside, is not paused."""
    clock = FakeClock()
    priority, job = Priority(), _job("a", 1)
    priority.first_window_s = 0.2
    job.clock = PlaybackClock(now=clock)
    job.clock.add(0.75)  # 0.75 s ahead: 0.2 + 0.5 alone fits, 0.2 + 0.75 beside does not
    with job.token.interruptible(lambda: None, expected_s=0.5):
        assert not priority.worth(job)
    job.clock.add(0.25)
    with job.token.interruptible(lambda: None, expected_s=0.5):
        assert priority.worth(job)


def test_a_second_window_waits_for_the_first_lane_to_end_its_later_window() -> None:
    """While every lane runs a later window, the wait for one is the least time left of them (a
    window paused for an opening: the opening's time, then its whole time again); with a lane free
    or running a first window, none."""
    priority = Priority(lanes=3)
    priority.first_window_s = 0.3
    long, short = _job("a", 1, made=1), _job("b", 1, made=1)
    priority.busy.update({long, short})
    assert priority.lane_wait_s() == 0.0
    priority.lanes = 2
    with long.token.interruptible(lambda: None, expected_s=2.0), short.token.interruptible(lambda: None, 0.8):
        assert 0.7 < priority.lane_wait_s() <= 0.8
        priority.pause_for_urgent()  # both far from their listeners' dry: both paused
        assert priority.paused == {long, short}
    assert priority.lane_wait_s() == pytest.approx(0.3 + 0.8)
    priority.resume_paused()
    assert priority.lane_wait_s() == 0.0  # between inferences: not known
    priority.busy = {long, _job("c")}
    assert priority.lane_wait_s() == 0.0  # a first window's lane frees soon


def test_a_first_window_goes_first_and_waits_rather_than_share_the_cores_with_a_later_one() -> None:
    priority = Priority()
    later, first, other_first = _job("a", 1), _job("b"), _job("c")
    assert priority.pick([later, first], _first) is first
    priority.busy.add(_job("x", 1))  # a later window runs
    assert priority.pick([later, first], _first) is None  # the first waits; nothing later starts
    priority.busy.clear()
    assert priority.pick([other_first], _first) is other_first
    priority.busy.add(other_first)
    assert priority.pick([later], _first) is None  # a first window has the cores
    assert priority.pick([first], _first) is first  # ... shared with first windows only
    priority.ended(other_first)
    assert priority.pick([later], _first) is later
    assert Priority(first_chunk_priority=False).pick([later, first], _first) is later


def test_a_client_s_opening_jumps_the_queue_once_until_another_client_s_turn_ends() -> None:
    """Another client's listener waits its turn, not until it runs dry: a client that holds a lane,
    or whose opening ran since another client's turn ended, opens in its turn like any window;
    alone, a client opens as fast as it asks."""
    priority = Priority(lanes=2)
    polite, flood_a, flood_b = _job("p", 1), _job("a"), _job("b")
    polite.client, flood_a.client, flood_b.client = "polite", "flooder", "flooder"

    def flooder_turn(jobs: list[Job]) -> Job | None:
        return next((job for job in jobs if job.client == "flooder"), jobs[0] if jobs else None)

    assert priority.pick([polite, flood_a, flood_b], flooder_turn) is flood_a  # it jumps
    priority.started(flood_a)
    priority.busy.add(flood_a)
    assert priority.pick([polite, flood_b], flooder_turn) is None  # the opening that jumped has the cores
    assert priority.jumping([polite, flood_b]) == []  # the flooder holds a lane
    priority.busy.discard(flood_a)
    priority.ended(flood_a)
    assert priority.jumping([polite, flood_b]) == []  # its opening ran: its next one waits its turn
    assert priority.pick([polite, flood_b], lambda jobs: jobs[0]) is polite
    priority.started(polite)
    priority.ended(polite)  # the other client's turn ended
    assert priority.jumping([polite, flood_b]) == [flood_b]
    priority.started(flood_b)
    priority.ended(flood_b)
    assert priority.jumping([flood_a]) == [flood_a]  # alone: every opening jumps


def test_a_listener_about_to_run_dry_goes_before_first_windows_and_the_turns() -> None:
    """Under two first windows' time left, a playing listener's window goes first, the closest to
    dry first, even beside a first window; far enough ahead, first windows and turns decide."""
    clock, priority = FakeClock(), Priority()
    priority.first_window_s = 0.2
    ahead, near, nearer, first = _job("a", 1), _job("b", 1), _job("c", 1), _job("d")
    for job, buffered in ((ahead, 5.0), (near, 0.3), (nearer, 0.1)):
        job.clock = PlaybackClock(now=clock)
        job.clock.add(buffered)
    assert priority.pick([ahead, near, nearer, first], _first) is nearer
    assert priority.pick([ahead, near, first], _first) is near
    priority.busy.add(_job("x"))  # a first window runs: a later one starts beside it all the same
    assert priority.pick([ahead, near], _first) is near
    priority.busy.clear()
    assert priority.pick([ahead, first], _first) is first  # 5 s ahead: the first window goes first
    unheard = _job("e", 1)
    unheard.clock = PlaybackClock(now=clock)  # nothing made yet: not running dry
    assert priority.pick([unheard, first], _first) is first


def test_a_busy_later_window_is_paused_for_a_first_one_once_and_resumed_after() -> None:
    priority = Priority()
    running, first = _job("a", 1), _job("b")
    priority.busy.add(running)
    assert priority.pick_urgent([first], _first) is first
    priority.pause_for_urgent()
    assert running.preempted and running.token.paused and priority.paused == {running}
    assert priority.in_flight == 0  # a paused window waits
    priority.resume_paused()
    assert not running.token.paused and not priority.paused
    old = Priority(beside=False)
    old.busy.add(running)
    assert old.pick_urgent([first], _first) is None  # paused once in this window: it ends
    assert Priority(preempt=False).pick_urgent([first], _first) is None


def test_a_worker_with_nothing_to_pick_looks_again_when_a_listener_starts_running_dry() -> None:
    clock, priority = FakeClock(), Priority()
    priority.first_window_s = 0.2
    near, far, unheard, first = _job("a", 1), _job("b", 1), _job("c", 1), _job("d")
    for job, buffered in ((near, 0.7), (far, 3.0)):
        job.clock = PlaybackClock(now=clock)
        job.clock.add(buffered)
    unheard.clock = PlaybackClock(now=clock)
    assert priority.until_dry_s([far, near, unheard, first]) == pytest.approx(0.3)  # 0.7 - two first windows
    clock.now += 0.35
    assert priority.until_dry_s([near]) is None  # running dry now: picked, not waited for
    assert priority.until_dry_s([unheard, first]) is None


def test_crowded_when_more_replies_wait_for_first_audio_than_the_lanes() -> None:
    waiting = [_job(s) for s in "abc"]
    assert crowded(waiting, lanes=2) and not crowded(waiting, lanes=3)
    assert not crowded([*waiting[:2], _job("d", 0, made=1), _job("e", 1)], lanes=2)  # later windows do not count
    waiting[0].ended = True
    assert not crowded(waiting, lanes=2)


def test_another_client_s_openings_crowd_one_s_own_as_one() -> None:
    """Another client's openings jump the queue one a turn: to one's own next opening they are one;
    one's own all count."""
    flood = [_job(s) for s in "abcd"]
    for job in flood:
        job.client = "flooder"
    assert openings(flood, "polite") == 1 and not crowded(flood, lanes=2, client="polite")
    assert openings(flood, "flooder") == 4 and crowded(flood, lanes=2, client="flooder")


def test_a_first_window_s_time_is_a_moving_average() -> None:
    priority = Priority()
    before = priority.first_window_s
    priority.first_window_took(0.1)
    assert 0.1 < priority.first_window_s < before


def test_another_client_s_first_window_takes_its_turn_beside_a_listener_running_dry() -> None:
    """A client whose listeners never read has clocks that say they ran dry: its windows go before
    its own clients' first windows, but another client's first window gets that client's turn."""
    clock, priority = FakeClock(), Priority()
    dry, own_first, other_first = _job("a", 1), _job("b"), _job("c")
    dry.client, own_first.client, other_first.client = "flooder", "flooder", "polite"
    dry.clock = PlaybackClock(now=clock)
    dry.clock.add(0.05)

    def polite_turn(jobs: list[Job]) -> Job | None:
        return next((job for job in jobs if job.client == "polite"), jobs[0] if jobs else None)

    assert priority.pick([dry, own_first], polite_turn) is dry
    assert priority.pick([dry, own_first, other_first], polite_turn) is other_first


def test_a_client_with_fewer_sessions_ready_goes_first_among_listeners_running_dry() -> None:
    """A client with many listeners starved (or never reading) sits at the front of the least
    buffered for good: another client's one listener running dry goes first; equals go by buffer."""
    clock, priority = FakeClock(), Priority()
    priority.first_window_s = 0.3
    starved = [_job(s, 1) for s in "abc"]
    polite, other = _job("p", 1), _job("q", 1)
    listeners = [(polite, "polite", 0.5), (other, "other", 0.2), *((j, "flooder", 0.0) for j in starved)]
    for job, client, buffered in listeners:
        job.client, job.clock = client, PlaybackClock(now=clock)
        job.clock.add(buffered + 0.01)
    clock.now += 0.01  # the flooder's listeners have run dry
    assert priority.pick([*starved, polite], _first) is polite
    assert priority.pick([*starved, polite, other], _first) is other  # one session each: least buffered
    assert priority.pick(starved[:1], _first) is starved[0]


def test_a_first_window_runs_beside_later_windows_that_may_not_be_paused() -> None:
    """A window paused once is not paused again: a reply arriving then opens on the urgent lane
    beside it rather than wait for it to end; beside another first window it waits as before."""
    priority = Priority()
    running, first = _job("a", 1), _job("b")
    running.preempted = True  # paused once already
    priority.busy.add(running)
    assert priority.pick_urgent([first], _first) is first
    old = Priority(beside=False)
    old.busy.add(running)
    assert old.pick_urgent([first], _first) is None  # it waited for the window to end
    opening = _job("c")
    priority.busy = {opening}
    assert priority.pick_urgent([first], _first) is None  # first windows share the cores already


def test_a_listener_that_would_run_dry_behind_the_urgent_lane_runs_beside_it_on_a_free_lane() -> None:
    """While an opening runs on the urgent lane a worker starts nothing, except the window of a
    listener with less buffered than the opening's time left and two first windows' more, and only
    where a lane is free: on one lane the opening keeps the core."""
    clock, priority = FakeClock(), Priority(lanes=2)
    priority.first_window_s = 0.2
    opening, near, ahead = _job("a"), _job("b", 1), _job("c", 1)
    for job, buffered in ((near, 0.7), (ahead, 5.0)):
        job.clock = PlaybackClock(now=clock)
        job.clock.add(buffered)
    priority.urgent.add(opening)
    assert priority.pick([near, ahead], _first) is None  # 0.7 s covers 0.4 s: nothing beside it
    with opening.token.interruptible(lambda: None, expected_s=0.5):
        assert priority.pick([near, ahead], _first) is near  # 0.5 s left of it, then 0.4: 0.7 runs dry
        assert priority.pick([ahead], _first) is None
        priority.busy.add(_job("x", 1))  # both lanes taken
        assert priority.pick([near], _first) is None
        one_lane = Priority(lanes=1)
        one_lane.first_window_s, one_lane.urgent = 0.2, {opening}
        assert one_lane.pick([near], _first) is None
