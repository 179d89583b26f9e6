"""The stalls experiment's report: the chunk policies, and the slowed machine when it ran."""

from typing import Any

from speakstream.bench.experiments import stalls


def _play(gaps: int) -> dict[str, Any]:
    return {"ttfa_ms": 600.0, "stalls": gaps, "stall_ms": 100.0 * gaps, "audio_s": 37.0, "audio_per_wall_s": 1.5}


def _result(slowed: bool) -> dict[str, Any]:
    result: dict[str, Any] = {"reply_id": "long", "policies": stalls._summaries({"default": [_play(0), _play(2)]})}
    if slowed:
        result["slowed"] = stalls._summaries({name: [_play(i)] for i, name in enumerate(stalls.FLOORS)})
    return result


def test_each_arm_is_summarised_over_its_trials() -> None:
    summary = stalls._summaries({"default": [_play(0), _play(2)]})["default"]
    assert summary["stalls"]["mean"] == 1.0 and summary["stalls"]["n"] == 2
    assert set(summary) == set(stalls.KEYS)


def test_the_slowed_machine_has_its_own_table_when_it_ran() -> None:
    with_slowed, without = stalls.markdown(_result(True)), stalls.markdown(_result(False))
    assert "| default | 600" in with_slowed and "| default | 600" in without
    assert all(f"| {name} |" in with_slowed for name in stalls.FLOORS)
    assert "busy loop" in with_slowed and "busy loop" not in without
