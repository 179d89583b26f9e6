"""The streaming experiment's report text follows the window policy it ran with."""

from typing import Any

import numpy as np

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


def test_the_report_gives_the_opening_window_its_own_context_only_when_its_run_did() -> None:
    said = "4 after the window that opens a reply"
    assert said in streaming.markdown(_result(opening_context_frames=4))
    assert "after the window that opens" not in streaming.markdown(_result(opening_context_frames=None))
    assert "after the window that opens" not in streaming.markdown(_result())  # a run from before


def test_the_report_says_the_opening_on_a_shared_decoder_only_when_it_differs() -> None:
    slow = {"opening_frames": 31, "opening_frame_ms": 11.5, "opening_safety": 0.8}
    said = "; 20 while other replies share the decoder"
    assert said in streaming.markdown(_result(**slow, shared_opening_frames=20))
    assert "share the decoder" not in streaming.markdown(_result(**slow, shared_opening_frames=31))
    assert "share the decoder" not in streaming.markdown(_result(**slow))  # a run from before


def test_the_report_says_the_crowded_opening_only_when_its_run_had_one() -> None:
    said = "10 while more replies wait for their first audio than the lanes"
    assert f"20 ({said})" in streaming.markdown(_result(crowded_opening_frames=10))
    slow = {"opening_frames": 31, "opening_frame_ms": 11.5, "opening_safety": 0.8}
    assert f"; {said})" in streaming.markdown(_result(**slow, crowded_opening_frames=10))
    assert "wait for their first audio" not in streaming.markdown(_result(**slow))  # a run from before
    how = ", its end moved forward by up to 4 frames and decoded by the int8 decoder)"
    crowded = {"crowded_opening_frames": 8, "crowded_snap_frames": 4}
    assert how in streaming.markdown(_result(**crowded, crowded_decoder="int8"))
    assert "frames)" in streaming.markdown(_result(**crowded, crowded_decoder=None))
    assert "decoded by" not in streaming.markdown(_result(**crowded, crowded_decoder=None))


def test_an_utterance_heard_with_the_same_errors_both_ways_is_not_a_difference() -> None:
    text = "Please bring your card."
    pieces = [np.zeros(20 * 600, np.float32), np.zeros(32 * 600, np.float32)]
    assert (
        streaming.heard_differently("af_heart", text, "Please bring your cart.", "Please bring you card.", pieces)
        is None
    )
    difference = streaming.heard_differently(
        "af_heart", text, "Please bring your card.", "Please bring in a card.", pieces
    )
    assert difference is not None
    assert (difference["errors_whole"], difference["errors_windowed"]) == (0, 2)
    assert difference["window_frames"] == [20, 32]


def test_the_report_names_what_the_windowed_decode_was_heard_as() -> None:
    result = _result()
    result["fidelity"]["differences"] = [
        {
            "voice": "af_heart",
            "errors_whole": 0,
            "errors_windowed": 2,
            "heard_windowed": "card in a row",
            "window_frames": [20, 25, 31],
        },
        {
            "voice": "bm_george",
            "errors_whole": 1,
            "errors_windowed": 0,
            "heard_windowed": "Your flight",
            "window_frames": [23, 36],
        },
    ]
    report = streaming.markdown(result)
    assert "differed in 2 of 2 utterances: more windowed in 1, fewer in 1" in report
    assert '"card in a row" (af_heart, windows [20, 25, 31])' in report
    assert "Your flight" not in report  # only the utterances the windows made worse are quoted
    result["fidelity"]["differences"] = []
    assert "same number of word errors in both decodes of all 2 utterances" in streaming.markdown(result)
    del result["fidelity"]["differences"]
    assert "word errors" not in streaming.markdown(result)  # a run from before they were kept


def test_the_report_says_long_windows_are_decoded_in_pairs_only_where_they_were() -> None:
    said = "decoded as two halves at once on two narrow lanes, each half up to 160"
    assert "a window of 96 frames or more" in streaming.markdown(_result(split_frames=96))
    assert said in streaming.markdown(_result(split_frames=96))
    assert "two halves" not in streaming.markdown(_result(split_frames=0))  # a GPU, or one lane
    assert "two halves" not in streaming.markdown(_result())  # a run from before
