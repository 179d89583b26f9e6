"""The streaming experiment's report text follows the window policy it ran with."""

from typing import Any

from speakstream.bench.experiments import streaming


def _result(**policy: Any) -> dict[str, Any]:
    fidelity = {
        "utterances": 2,
        "audio_s": 4.0,
        "wer_whole": 0.0,
        "wer_windowed": 0.0,
        "logmel_db": {"mean": 4.2},
        "logmel_db_5ms_delay": {"mean": 2.1},
        "seam_step": {"max": 0.4},
        "step_p999_elsewhere": {"mean": 0.2},
        "seams_over_p999": 0,
        "seams": 3,
        "first_audio_ms_whole": {"mean": 1000.0},
        "first_audio_ms_windowed": {"mean": 300.0},
        "throughput_ratio": 0.8,
    }
    base = {"first_frames": 20, "max_frames": 160, "context_frames": 12, "crossfade_samples": 96}
    return {"fidelity": fidelity, "latency": None, "policy": base | policy}


def test_the_report_says_the_opening_window_snaps_only_when_its_run_did() -> None:
    assert "forward by up to 4 frames when that puts it between words" in streaming.markdown(
        _result(opening_snap_frames=4)
    )
    assert "when that puts it between words" not in streaming.markdown(_result())  # a run from before
