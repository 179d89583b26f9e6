"""The reliability suites in their bounded CI form (the full sizes run with `make test-full`)."""

from __future__ import annotations

import pytest

from speakstream.engine.fake import FakeEngine
from speakstream.loadtest import abuse, faults, fuzz, load, overload, soak
from speakstream.loadtest.servers import fake_server


async def test_sixteen_sessions_each_get_exactly_their_own_audio() -> None:
    server = fake_server(FakeEngine(seconds_per_char=0.0005), max_sessions=32)
    try:
        results = await load.run_load(server.ws_url, [1, 4, 16], turns=2)
    finally:
        server.stop()
    for level in results:
        assert level["held"] == level["sessions"]
        assert level["errors"] == 0 and level["foreign"] == 0
        assert level["requests"] == 2 * level["sessions"]


@pytest.mark.slow
async def test_overload_is_refused_fast_and_the_server_recovers() -> None:
    result = await overload.run_overload()
    assert result["refused"] == "20/20"
    assert result["refusal_codes"] == ["overloaded (retryable=True)"]
    assert result["http_503_with_retry_after"] >= 1
    assert result["recovered"] is True


async def test_engine_failure_fails_one_request_only() -> None:
    result = await faults.engine_failure()
    assert result == {
        "error_frame": "engine_error (retryable=True)",
        "same_session_continues": True,
        "other_session_unaffected": True,
    }


@pytest.mark.slow
async def test_a_client_that_stops_reading_is_dropped() -> None:
    result = await faults.slow_reader(send_timeout_s=1.0)
    assert result["others_unaffected"] is True
    assert result["dropped"] is True  # how soon is a figure for the bench, not a test
    assert result["memory_growth_mb"] < 50


async def test_clients_vanishing_leave_nothing_behind() -> None:
    result = await faults.vanishing_clients(30)
    assert result["clean"] is True


@pytest.mark.slow
async def test_sigterm_mid_reply_closes_sessions_with_a_reason() -> None:
    result = await faults.sigterm_mid_reply(grace_s=5.0)
    assert result["error_frame"] is True
    assert result["close_code"] == 1001 and result["close_reason"] == "server shutting down"
    assert result["exit_s"] < result["grace_s"] + 2


@pytest.mark.slow
async def test_soak_stays_flat() -> None:
    result = await soak.run_soak(messages=300, sessions=60)
    assert result["messages"]["flat"] and result["sessions"]["flat"], result


@pytest.mark.full
async def test_full_soak() -> None:
    result = await soak.run_soak(messages=2000, sessions=500)
    assert result["messages"]["flat"] and result["sessions"]["flat"], result


@pytest.mark.slow
async def test_hostile_frames_never_crash_a_live_session() -> None:
    result = await fuzz.run_fuzz(frames=300, bodies=100)
    assert result["bad_inputs"].startswith(f"{len(fuzz.BAD_INPUTS)}/{len(fuzz.BAD_INPUTS)}")
    assert result["frame_hangs"] == 0 and result["http"]["crashes"] == result["http"]["hangs"] == 0, result
    assert result["session_usable_after"] and result["server_healthy_after"]


@pytest.mark.full
async def test_full_fuzz() -> None:
    result = await fuzz.run_fuzz(frames=10_000, bodies=1_000, seed=11)
    assert result["frame_hangs"] == 0 and result["http"]["crashes"] == result["http"]["hangs"] == 0, result
    assert result["session_usable_after"] and result["server_healthy_after"]


@pytest.mark.full  # 78 s of attacks; `make test-full`
@pytest.mark.slow
async def test_attacks_leave_a_well_behaved_client_served() -> None:
    """Outcomes only (the timing ratios are docs/reliability.md's, from the Kokoro run)."""
    result = await abuse.run_abuse(fake_engine=True, trials=3)
    attacks = {name: r["outcome"] for name, r in result["attacks"].items()}
    assert all(
        r["refusals"] == 0 and r["first_audio_ms"]["n"] == r["gap_ms"]["n"] == 3 for r in result["attacks"].values()
    ), result
    assert set(attacks["hostile texts"]["statuses"]) <= {"200", "400"}
    assert attacks["appends never flushed"] == {"sessions": 30, "ended_by_text_idle": 10, "refused": 20}
    assert set(attacks["responses never read"]["answers"]) <= {"200", "200 dropped"}
    assert "200 dropped" in attacks["responses never read"]["answers"]
    assert attacks["bodies that never finish"]["answers"] == {"408": 20}
    assert attacks["handshake flood"]["answers"] == {"accepted": 64, "refused": 86}
    assert set(attacks["one client's parallel flood"]["statuses"]) == {"200", "503"}
    assert attacks["cross-site WebSockets"]["answers"] == {"HTTP 403": 20}
