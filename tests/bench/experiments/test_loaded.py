"""Words heard under load: the report sets each level beside whole decoding."""

from speakstream.bench.experiments import loaded


def test_the_report_gives_each_level_its_points_against_whole_decoding() -> None:
    result = {
        "sentences": 6,
        "voices": 5,
        "whole_wer": 0.01,
        "levels": [{"sessions": 1, "replies": 5, "wer": 0.01}, {"sessions": 8, "replies": 8, "wer": 0.025}],
    }
    report = loaded.markdown(result)
    assert "| through the server, 8 at once | 8 | 2.5% | +1.5 |" in report
    assert "| whole decoding (engine, one sentence at a time) |  | 1.0% |  |" in report
