"""The engine's text work (normalising, reading a voice spec) runs in linear time on hostile input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from speakstream.engine.phonemes.languages import parse_language
from speakstream.engine.phonemes.normalize import normalize
from speakstream.engine.voices import MAX_SPEC_CHARS, VoiceBank
from speakstream.errors import UnknownVoice
from tests.scaling import RATIO_LIMIT, UNITS, growth, hostile_units

BANK = VoiceBank({name: np.zeros((510, 1, 256), np.float32) for name in ("af_heart", "af_bella")})


@pytest.mark.parametrize("unit", [*UNITS, "a.a", "a@a.", "www.", "http://a", "12-", "(555) "], ids=repr)
def test_normalize_costs_linear_time(unit: str) -> None:
    assert growth(normalize, unit) < RATIO_LIMIT


@settings(max_examples=20, deadline=None, derandomize=True)
@given(unit=hostile_units())
def test_normalize_costs_linear_time_on_generated_runs(unit: str) -> None:
    assert growth(normalize, unit) < RATIO_LIMIT


OTHER_LANGUAGES = ["es", "fr-fr", "pt-br", "hi", "zh", "ja"]
OTHER_UNITS = ["1", "1.", "1,", "1/", "1-", "1:", "$1", "R$", "1 €", "%", "1/1/", "2026-"]


@pytest.mark.parametrize("tag", OTHER_LANGUAGES)
@pytest.mark.parametrize("unit", OTHER_UNITS, ids=repr)
def test_normalize_in_other_languages_costs_linear_time(tag: str, unit: str) -> None:
    language = parse_language(tag)
    assert growth(lambda text: normalize(text, language), unit) < RATIO_LIMIT


@pytest.mark.parametrize("spec", ["af_heart:" + "1" * 5000 + "x", " " * 5000 + "x", "af_heart:" + "." * 5000])
def test_a_long_voice_spec_is_refused_at_once(spec: str) -> None:
    with pytest.raises(UnknownVoice, match=str(MAX_SPEC_CHARS)):
        BANK.parse(spec)


@pytest.mark.parametrize("weight", ["1" * 12 + "x", "0." + "1" * 12 + "x", "9" * 40])
def test_a_spec_of_many_digits_within_the_cap_fails_fast_and_clearly(weight: str) -> None:
    with pytest.raises(UnknownVoice, match="cannot read voice"):
        BANK.parse(f"af_heart:{weight}")


def test_blends_and_weights_still_read() -> None:
    assert BANK.parse(" af_heart : 1. ") == [("af_heart", 1.0)]
    assert BANK.parse("af_heart:.5,af_bella:1.5") == [("af_bella", 0.75), ("af_heart", 0.25)]
    with pytest.raises(UnknownVoice, match="twice"):  # a voice blended with itself is a mistake
        BANK.parse("af_heart:.5,af_heart:1.5")
