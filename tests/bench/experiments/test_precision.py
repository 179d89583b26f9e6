"""The precision experiment's summary and report: ratios of mixed to float, each decoder's WER."""

from speakstream.bench.experiments import precision


def test_the_summary_compares_mixed_with_float_and_keeps_the_export_for_scale() -> None:
    text = "Please bring your card."
    heard = {
        "float": [(text, "Please bring your card.")],
        "mixed": [(text, "Please bring your card.")],
    }
    seconds = {
        "float": {"opening": [0.30, 0.32, 0.34], "whole": [1.0, 1.0]},
        "mixed": {"opening": [0.24, 0.25, 0.26], "whole": [0.8, 0.8]},
    }
    result = precision._summarise(heard, {"mixed": [0.7, 0.8], "int8 export": [0.9, 1.0]}, seconds, audio_s=8.0)
    rows = result["rows"]
    assert (rows["float"]["wer"], rows["mixed"]["wer"]) == (0.0, 0.0)
    assert "wer" not in rows["int8 export"] and rows["int8 export"]["utterances"] == 2
    assert (rows["mixed"]["logmel_db"], rows["int8 export"]["logmel_db"]) == (0.75, 0.95)
    assert "logmel_db" not in rows["float"] and "opening_ms" not in rows["int8 export"]
    assert (rows["float"]["audio_per_s"], rows["mixed"]["audio_per_s"]) == (4.0, 5.0)
    assert result["mixed_vs_float"] == {"opening": round(0.25 / 0.32, 2), "whole": 1.25}
    report = precision.markdown(result)
    assert "| mixed | 1 | 0.0% | 0.75 | 250.0 / 250.0 | 5 |" in report
    assert "| int8 export | 2 |  | 0.95 |  |  |" in report
    assert "**0.78x** the time" in report and "**1.25x** the audio per second" in report


def test_the_int8_decoder_is_a_row_of_its_own_and_its_ratios_are_said() -> None:
    text = "Please bring your card."
    heard = {name: [(text, "Please bring your card.")] for name in precision.DECODERS}
    seconds = {
        "float": {"opening": [0.32], "whole": [1.0]},
        "mixed": {"opening": [0.24], "whole": [0.8]},
        "int8": {"opening": [0.16], "whole": [0.5]},
    }
    distance = {"mixed": [0.75], "int8": [2.8], "int8 export": [0.95]}
    result = precision._summarise(heard, distance, seconds, audio_s=8.0)
    assert result["vs_float"]["int8"] == {"opening": 0.5, "whole": 2.0}
    assert result["mixed_vs_float"] == result["vs_float"]["mixed"]
    report = precision.markdown(result)
    assert "| int8 | 1 | 0.0% | 2.8 | 160.0 / 160.0 | 16.0 |" in report
    assert "Int8 against float: the opening window in **0.5x** the time" in report
    del result["vs_float"]  # a run from before
    assert "Int8 against float" not in precision.markdown(result)
