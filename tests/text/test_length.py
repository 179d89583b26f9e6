"""The least a text takes to speak: a true lower bound of what the real voices make, known in
linear time, so that a server refuses up front only what could never fit its audio limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speakstream.engine.kokoro import KokoroEngine
from speakstream.text.length import LONG_DIGITS, SECONDS_PER_CHARACTER, SECONDS_PER_DIGIT, least_seconds
from tests.scaling import RATIO_LIMIT, UNITS, growth

DATA = Path(__file__).parents[2] / "src" / "speakstream" / "data"


def test_letters_and_long_digit_runs_are_counted_apart() -> None:
    assert least_seconds("") == 0.0
    assert least_seconds("Hi, you!") == pytest.approx(5 * SECONDS_PER_CHARACTER)
    assert least_seconds("1" * (LONG_DIGITS - 1)) == pytest.approx((LONG_DIGITS - 1) * SECONDS_PER_CHARACTER)
    assert least_seconds("card 1234567890123456.") == pytest.approx(4 * SECONDS_PER_CHARACTER + 16 * SECONDS_PER_DIGIT)


@pytest.mark.parametrize("unit", [*UNITS, "7", "7 "], ids=repr)
def test_the_bound_costs_linear_time(unit: str) -> None:
    assert growth(least_seconds, unit) < RATIO_LIMIT


CODE = "Your code is 98765432109876543210."


def _replies() -> list[str]:
    replies = [json.loads(line)["text"] for line in (DATA / "replies.jsonl").read_text().splitlines() if line]
    return sorted(replies, key=len)[:3]


@pytest.mark.model
@pytest.mark.parametrize(
    ("voice", "texts"), [("af_heart", [*_replies(), "a. " * 10, CODE]), ("am_adam", [CODE]), ("bf_emma", [CODE])]
)
def test_the_bound_is_below_what_the_real_voices_make(kokoro: KokoroEngine, voice: str, texts: list[str]) -> None:
    for text in texts:
        made = kokoro.synthesize(text, voice=voice).duration_s
        assert least_seconds(text) <= made, (text[:40], least_seconds(text), made)
