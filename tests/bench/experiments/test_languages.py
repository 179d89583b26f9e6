"""The languages experiment's report: whole and windowed decoding side by side for each first voice."""

from typing import Any

from speakstream.bench.experiments import languages


def _row(name: str, first: str, whole: float, windowed: float) -> dict[str, Any]:
    return {
        "name": name,
        "peer_rate": None,
        "peer_voice": first,
        "windowed_rate": windowed,
        "metric": "WER",
        "voices": {first: whole, "xx_other": 0.5},
        "clips": 6,
        "rate": (whole + 0.5) / 2,
        "example": None,
    }


def test_each_language_shows_its_first_voice_whole_and_windowed() -> None:
    accuracy = {"es": _row("Spanish", "ef_dora", 0.1, 0.0), "it": _row("Italian", "if_sara", 0.2, 0.3)}
    first = {tag: {"voice": row["peer_voice"], "ttfa_ms": {"p50": 400.0}} for tag, row in accuracy.items()}
    report = languages.markdown({"accuracy": accuracy, "first_audio": first})
    assert "first voice: whole / windowed" in report
    assert "| 10.0% / 0.0% |" in report and "| 20.0% / 30.0% |" in report
    assert "50.0% (xx_other)" in report  # the worst voice is still any voice's
    assert "first voice, whole 15.0% against windowed 15.0%" in report
