import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speakstream.engine.phonemes.normalize import normalize, quiet_runs


@pytest.mark.parametrize(
    ("text", "spoken"),
    [
        ("It is 10:30 now.", "It is 10 30 now."),
        ("At 9:05 today", "At 9 oh 5 today"),
        ("At 10:00 sharp", "At 10 o'clock sharp"),
        ("at 10:00 a.m.", "at 10 a.m."),
        ("Version 2.4.1 fixes it", "Version 2 point 4 point 1 fixes it"),
        ("Install v1.2.3 now", "Install version 1 point 2 point 3 now"),
        ("Due 2024-03-15.", "Due March 15, 2024."),
        ("Call 555-123-4567 now", "Call 5 5 5, 1 2 3, 4 5 6 7 now"),
        ("Mail jane.doe@example.com now", "Mail jane dot doe at example dot com now"),
        ("Visit example.com/downloads today", "Visit example dot com slash downloads today"),
        ("It hit 38.5°C.", "It hit 38.5 degrees Celsius."),
        ("Order #48213.", "Order number 48213."),
        ("Use e.g. Chrome", "Use for example Chrome"),
        ("on Baker St. Please", "on Baker Street. Please"),
        ("the St. Mary's clinic", "the Saint Mary's clinic"),
        ("Pi is 3.14 and $3.50", "Pi is 3.14 and $3.50"),
        ("Card 4000123412341234.", "Card 4 0 0 0 1 2 3 4 1 2 3 4 1 2 3 4."),
        ("About 400012341234123 stars", "About 400012341234123 stars"),  # 15 digits: still a number
    ],
)
def test_normalize(text: str, spoken: str) -> None:
    assert normalize(text) == spoken


MARKS = [*list(".,;:!?…-—*#~/\\|()[]{}<>_=+^%&@$。！？，、"), "!?", ". ", "- ", "?!."]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(unit=st.sampled_from(MARKS), length=st.integers(4, 20_000))
def test_a_run_of_marks_of_any_length_becomes_at_most_one_pause(unit: str, length: int) -> None:
    run = (unit * (length // len(unit) + 1))[:length]
    quiet = quiet_runs(f"Before {run} after.")
    assert quiet.startswith("Before ") and quiet.endswith(" after.")
    assert len(quiet[len("Before ") : -len(" after.")].strip()) <= 1


@pytest.mark.parametrize("text", ["Wow!!! Great... Really?!", "C++ and a -> b", "$1,000.50!", "Wait -- what?"])
def test_runs_of_three_marks_or_fewer_are_left_as_they_are(text: str) -> None:
    assert quiet_runs(text) == text


def test_a_run_says_the_pause_it_means() -> None:
    assert quiet_runs("One.......... two") == "One. two"
    assert quiet_runs("One ---------- two") == "One , two"
    assert quiet_runs("Chapter 1 . . . . . . 12") == "Chapter 1 . 12"
    assert quiet_runs("Really?!?!?!?! Yes") == "Really? Yes"
    assert quiet_runs("Stars ****** here") == "Stars  here"
