"""The concurrency experiment pools every session of every run of a level."""

from typing import Any

from speakstream.bench.experiments import concurrency


def _session(ttfa_ms: float, audio_s: float = 10.0) -> dict[str, Any]:
    return {"ttfa_ms": ttfa_ms, "stall_ms": 0.0, "audio_s": audio_s}


def test_a_level_pools_the_sessions_of_all_its_runs() -> None:
    runs: list[concurrency.Run] = [([_session(400), None], 5.0), ([_session(600), _session(800)], 10.0)]
    level = concurrency._pooled(2, runs)
    assert level["runs"] == 2 and level["errors"] == 1
    assert level["ttfa_ms"]["n"] == 3 and level["ttfa_ms"]["max"] == 800
    assert level["throughput"] == 2.0  # 30 audio seconds in 15 wall seconds


def _result(runs: int | None) -> dict[str, Any]:
    level = concurrency._pooled(1, [([_session(400)], 10.0)])
    if runs is None:  # a run from before the field
        del level["runs"]
    else:
        level["runs"] = runs
    return {"text_chars": 100, "modes": {"priority": [level]}, "p95_over_1s_at": {"priority": None}}


def test_the_report_says_how_many_runs_a_level_pools() -> None:
    assert "each level ran 3 times" in concurrency.markdown(_result(3))
    assert "each level ran" not in concurrency.markdown(_result(1))
    assert "each level ran" not in concurrency.markdown(_result(None))
