"""Fairness on its own: clients first, then their sessions, one turn each; chunks in order."""

from __future__ import annotations

from speakstream.scheduler.job import Job
from speakstream.scheduler.turns import Turns


def _job(session: str, index: int = 0, client: str = "") -> Job:
    return Job(session, f"{session}-r", index, f"{session}{index}", "af_heart", 1.0, client)


def _turns(turns: Turns, count: int) -> list[str]:
    """The next ``count`` turns, each job back in line after its turn (done after its second)."""
    order, steps = [], {}
    for _ in range(count):
        job = turns.next_of(turns.ready())
        if job is None:
            break
        order.append(job.text)
        steps[job.text] = steps.get(job.text, 0) + 1
        if steps[job.text] == 2:
            turns.drop(job)
        turns.had_turn(job)
    return order


def test_sessions_take_turns_and_a_session_s_chunks_go_in_order() -> None:
    turns = Turns()
    for job in (_job("a", 1), _job("a", 2), _job("b", 1)):
        turns.add(job)
    assert turns.queued == 3 and turns.replies == 2
    assert _turns(turns, 10) == ["a1", "b1", "a1", "b1", "a2", "a2"]
    assert turns.queued == 0 and turns.replies == 0


def test_clients_take_turns_before_their_sessions_do() -> None:
    """Client x has three sessions, client y one: y gets every other turn, not every fourth."""
    turns = Turns()
    for job in [*(_job(s, 1, "x") for s in "abc"), _job("d", 1, "y")]:
        turns.add(job)
    assert _turns(turns, 4) == ["a1", "d1", "b1", "d1"]


def test_a_running_chunk_or_one_whose_reply_is_full_is_not_ready() -> None:
    turns = Turns()
    running, full, ready = _job("a"), _job("b"), _job("c")
    for job in (running, full, ready):
        turns.add(job)
    running.running = True
    while not full.pieces.full():
        full.pieces.put_nowait(None)
    assert turns.ready() == [ready]


def test_cancel_takes_a_session_s_chunks_or_one_request_s_out_of_the_line() -> None:
    turns = Turns()
    keep, drop = _job("a"), Job("a", "drop", 1, "x", "af_heart", 1.0)
    turns.add(keep)
    turns.add(drop)
    assert turns.cancel("a", "drop") == [drop] and turns.queued == 1
    assert turns.cancel("a") == [keep] and turns.queued == 0 and turns.sessions == []
    assert turns.cancel("nobody") == []
