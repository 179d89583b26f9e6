"""SSML ``<say-as>``: each kind rewritten in a form the language's normaliser and G2P read."""

from __future__ import annotations

import pytest

from speakstream.text.say_as import say_as


@pytest.mark.parametrize(
    ("kind", "text", "fmt", "language", "said"),
    [
        ("characters", "cat", "", "en-us", "C. A. T"),
        ("spell-out", "ab 12", "", "en-gb", "A. B. 1. 2"),
        ("characters", "abc", "", "es", "a b c"),
        ("digits", "2024", "", "en-us", "2 0 2 4"),
        ("ordinal", "3", "", "en-us", "3rd"),
        ("ordinal", "12", "", "en-us", "12th"),
        ("ordinal", "22", "", "en-us", "22nd"),
        ("ordinal", "3", "", "es", "tercero"),
        ("ordinal", "3", "", "fr-fr", "troisième"),
        ("ordinal", "3", "", "zh", "3"),
        ("telephone", "+1 555-0123", "", "en-us", "plus 1, 5 5 5, 0 1 2 3"),
        ("date", "3/5/2025", "mdy", "en-us", "2025-03-05"),
        ("date", "3/5/2025", "", "es", "2025-05-03"),
        ("date", "2025-05-03", "", "en-us", "2025-05-03"),
        ("date", "13/13/2025", "dmy", "en-us", "13/13/2025"),
        ("cardinal", "1,234,567", "", "en-us", "1234567"),
        ("time", "14:30", "", "en-us", "14:30"),
        ("unknown-kind", " as is ", "", "en-us", "as is"),
    ],
)
def test_say_as_reads_each_kind(kind: str, text: str, fmt: str, language: str, said: str) -> None:
    assert say_as(kind, text, fmt, language) == said
