"""One client's flood in the simulator: another client's listener hears its replies out, at every
machine speed (before per-client order among listeners running dry, 3.5-25 s of gaps a reply)."""

from __future__ import annotations

import pytest

from speakstream.bench.sim.cost import CostModel
from speakstream.bench.sim.flood import Flood, simulate_flood

COST = CostModel()


@pytest.mark.parametrize("speed", [0.5, 1.0, 2.0, 3.0])
def test_a_client_s_parallel_flood_leaves_another_client_s_listener_its_reply(speed: float) -> None:
    """Twenty-four long replies at once from one client, each asked again as it ends: the other
    client's replies after the first (which meets the flood's start) are heard with gaps under a
    quarter of their audio (0.76-1.04 s at half speed), under 0.3 s from the calibrated speed up."""
    heard = simulate_flood(COST.at(speed), Flood(replies=4))
    later = heard[1:]
    assert all(p.audio_s > 4.0 for p in heard)  # the whole reply
    assert all(p.stall_s < 0.25 * p.audio_s for p in later)
    if speed >= 1.0:
        assert all(p.stall_s < 0.3 for p in later)


def test_replies_never_read_leave_another_client_s_listener_its_reply() -> None:
    heard = simulate_flood(COST, Flood(parallel=10, reading=False, replies=4))
    assert all(p.stall_s < 0.2 * p.audio_s for p in heard[2:])


def test_a_flood_is_the_same_every_time() -> None:
    flood = Flood(parallel=8, replies=2)
    assert simulate_flood(COST, flood) == simulate_flood(COST, flood)
