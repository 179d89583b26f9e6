"""Admission on its own: room for replies' chunks in flight, per server and per client."""

from __future__ import annotations

import asyncio

import pytest

from speakstream.errors import Overloaded
from speakstream.scheduler.admission import Admission


def test_admission_counts_reserved_slots() -> None:
    admission = Admission(max_queue=6)
    admission.reserve(3)
    admission.reserve(3)
    assert admission.reserved == 6
    with pytest.raises(Overloaded) as refused:
        admission.reserve(1)
    assert refused.value.retryable and refused.value.code == "overloaded"
    admission.release(3)
    admission.reserve(2)
    assert admission.reserved == 5
    admission.release(100)  # never below zero
    assert admission.reserved == 0


def test_one_client_cannot_reserve_past_its_share() -> None:
    admission = Admission(max_queue=12, max_per_client=6)
    admission.reserve(3, "x")
    admission.reserve(3, "x")
    with pytest.raises(Overloaded) as refused:
        admission.reserve(3, "x")
    assert refused.value.retryable and refused.value.code == "client_limit"
    admission.reserve(3, "y")  # another client still gets in
    admission.release(3, "x")
    admission.reserve(3, "x")
    assert admission.reserved == 9


def test_a_listener_that_would_pass_the_capacity_is_refused_and_room_comes_back() -> None:
    """Each admitted reply asks for an audio second a second; past ``max_load`` of what the engine
    makes the next is refused, retryable, and admitted again once one ends."""
    admission = Admission(max_queue=100, capacity=lambda: 3.0, max_load=0.8)
    admission.reserve(3, "a")
    admission.reserve(3, "b")  # 2 <= 0.8 x 3
    with pytest.raises(Overloaded) as refused:
        admission.reserve(3, "c")  # 3 > 2.4
    assert refused.value.code == "overloaded" and refused.value.retryable and admission.refused == 1
    admission.release(3, "a")
    admission.reserve(3, "c")
    assert admission.replies == 2 and admission.reserved == 6


def test_one_reply_is_always_admitted_however_slow_the_engine() -> None:
    admission = Admission(max_queue=100, capacity=lambda: 0.5, max_load=0.8)
    admission.reserve(3)
    with pytest.raises(Overloaded):
        admission.reserve(3)


async def test_a_reply_may_wait_for_room_instead() -> None:
    admission = Admission(max_queue=100, capacity=lambda: 1.0, max_load=1.0)
    admission.reserve(3, "a")
    waiter = asyncio.create_task(admission.reserve_waiting(3, "b", 5.0))
    await asyncio.sleep(0.05)
    assert not waiter.done() and admission.refused == 0  # waiting, not refused
    admission.release(3, "a")
    waited = await asyncio.wait_for(waiter, 5)
    assert waited >= 0.04 and admission.replies == 1
    with pytest.raises(Overloaded):  # no room within the wait: refused after it
        await admission.reserve_waiting(3, "c", 0.05)


async def test_a_client_past_its_share_may_wait_for_one_of_its_replies_to_end() -> None:
    admission = Admission(max_queue=100, max_per_client=3)
    admission.reserve(3, "a")
    waiter = asyncio.create_task(admission.reserve_waiting(3, "a", 5.0))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    admission.reserve(3, "b")  # another client gets in meanwhile
    admission.release(3, "a")
    assert await asyncio.wait_for(waiter, 5) >= 0.04
    with pytest.raises(Overloaded) as refused:  # its own reply did not end within the wait
        await admission.reserve_waiting(3, "a", 0.05)
    assert refused.value.code == "client_limit" and admission.refused == 0


def test_the_capacity_is_shared_out_by_client() -> None:
    """Room for 2.4 listeners: client a took both; b is refused; when one of a's replies ends, a
    asking again is refused while b is asking, and b gets in. A client alone gets all the room."""
    admission = Admission(max_queue=64, capacity=lambda: 3.0, max_load=0.8)
    admission.reserve(1, "a")
    admission.reserve(1, "a")
    with pytest.raises(Overloaded):
        admission.reserve(1, "b")
    admission.release(1, "a")
    with pytest.raises(Overloaded):
        admission.reserve(1, "a")  # b asked lately: a has its share
    admission.reserve(1, "b")
    assert admission.replies == 2
    admission.release(1, "a")
    admission.release(1, "b")
    assert admission.replies == 0
    lone = Admission(max_queue=64, capacity=lambda: 3.0, max_load=0.8)
    lone.reserve(1, "c")
    lone.reserve(1, "c")  # nobody else asks: the whole room
    assert lone.replies == 2


def test_room_that_frees_goes_to_the_client_that_waited_longest() -> None:
    """Room for one listener: a flooding client a holds it; b is refused and waits; when a's reply
    ends, a asking again first is refused, b gets in; then it is a's turn."""
    admission = Admission(max_queue=64, capacity=lambda: 1.0, max_load=0.8)
    admission.reserve(1, "a")
    with pytest.raises(Overloaded):
        admission.reserve(1, "b")
    with pytest.raises(Overloaded):
        admission.reserve(1, "a")  # a waits too, since after b
    admission.release(1, "a")
    with pytest.raises(Overloaded):
        admission.reserve(1, "a")  # the room is b's
    admission.reserve(1, "b")
    admission.release(1, "b")
    with pytest.raises(Overloaded):
        admission.reserve(1, "c")  # a newcomer: a has waited
    admission.reserve(1, "a")
