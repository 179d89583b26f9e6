"""Admission on its own: room for replies' chunks in flight, per server and per client."""

from __future__ import annotations

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
