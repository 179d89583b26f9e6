"""One client's flood in the simulator: another client's listener hears its replies out, at every
machine speed (before per-client order among listeners running dry, 3.5-25 s of gaps a reply;
before a client's openings jumped the queue one a turn, 0.1-4.7 s under a client opening reply
after reply)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from speakstream.bench.sim.cost import CostModel
from speakstream.bench.sim.flood import Flood, simulate_flood

COST = CostModel()


@pytest.mark.parametrize("speed", [0.5, 1.0, 2.0, 3.0])
def test_a_client_s_parallel_flood_leaves_another_client_s_listener_its_reply(speed: float) -> None:
    """Twenty-four long replies at once from one client, each asked again as it ends: the other
    client's replies after the first (which meets the flood's start) are heard with gaps under
    0.4 of their audio at half speed (1.05-1.67 s: its lane's share makes small windows slower than
    they play), none over 0.3 s from three quarters of the calibrated speed up."""
    heard = simulate_flood(COST.at(speed), Flood(replies=4))
    later = heard[1:]
    assert all(p.audio_s > 4.0 for p in heard)  # the whole reply
    assert all(p.stall_s < 0.4 * p.audio_s for p in later)
    if speed >= 0.75:
        assert all(p.stall_s < 0.3 for p in later)


def test_replies_never_read_leave_another_client_s_listener_its_reply() -> None:
    heard = simulate_flood(COST, Flood(parallel=10, reading=False, replies=4))
    assert all(p.stall_s < 0.2 * p.audio_s for p in heard[2:])


OPENERS = {
    "hostile texts": Flood(parallel=2, reading=False, send_timeout_s=0, text="a." * 10_000),
    "hostile abbreviations": Flood(parallel=2, reading=False, send_timeout_s=0, text="e.g. " * 4_000),
    "short replies": Flood(parallel=4, text="Hi there."),
    "one-sentence replies": Flood(parallel=2, text="Sure, I can help with that right away."),
}
"""Clients that open reply after reply: the abuse suite's hostile texts (two loops of replies
dropped after their first audio), and a busy client's short replies, heard to the end."""


@pytest.mark.parametrize("speed", [1.0, 1.5, 2.0, 3.0])
@pytest.mark.parametrize("attack", list(OPENERS))
def test_a_client_opening_reply_after_reply_leaves_another_client_s_listener_its_reply(
    attack: str, speed: float
) -> None:
    """Its openings jump the queue one a turn, so the other client's listener is served in its
    turn, not only once it has run dry beside those openings: under 0.2 s of gaps a reply (0.16 at
    most; before, up to 0.74 s under the hostile texts from the calibrated speed up, and 1.6-3.2 s
    with four loops of short replies at every speed)."""
    heard = simulate_flood(COST.at(speed), replace(OPENERS[attack], replies=4))
    assert all(p.audio_s > 4.0 for p in heard)
    assert all(p.stall_s < 0.2 for p in heard)
    assert all(p.ttfa_s < 1.5 for p in heard)


def test_a_flood_is_the_same_every_time() -> None:
    flood = Flood(parallel=8, replies=2)
    assert simulate_flood(COST, flood) == simulate_flood(COST, flood)
