"""Every text-stage entry point runs in linear time on hostile input (see ``tests.scaling``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings

from speakstream.text import IncrementalSentenceChunker, SpeakableFilter, chunk_text, speakable
from speakstream.text.segment import split_sentences
from tests.scaling import RATIO_LIMIT, UNITS, growth, hostile_units


def _fed_chunker(text: str) -> None:
    chunker = IncrementalSentenceChunker()
    for i in range(0, len(text), 7):
        chunker.feed(text[i : i + 7])
    chunker.flush_all()


def _fed_filter(text: str) -> None:
    markdown = SpeakableFilter()
    for i in range(0, len(text), 7):
        markdown.feed(text[i : i + 7])
    markdown.flush()


ENTRY_POINTS: dict[str, Callable[[str], object]] = {
    "chunk_text": chunk_text,
    "chunker fed in fragments": _fed_chunker,
    "speakable": speakable,
    "speakable filter fed in fragments": _fed_filter,
    "split_sentences": split_sentences,
}


STILL_QUADRATIC = {
    ("chunk_text", "."),
    ("chunk_text", "!"),
    ("chunk_text", "a."),
    ("chunk_text", "e.g. "),
    ("chunk_text", "Mr. "),
    ("chunker fed in fragments", "."),
    ("chunker fed in fragments", "!"),
    ("chunker fed in fragments", "\n"),
}
BORDERLINE = {("split_sentences", "\n")}
"""About 36x at ten times the input (super-linear, not yet quadratic): either outcome is accepted."""
"""Found by these tests and not fixed yet (issue 15): runs of terminators, abbreviations and
newlines are rescanned once per chunk or candidate. Strict: a fix turns them into failures to remove."""


def _cases() -> list[object]:
    def marks(case: tuple[str, str]) -> list[pytest.MarkDecorator]:
        if case in STILL_QUADRATIC:
            return [pytest.mark.xfail(reason="still quadratic", strict=True)]
        if case in BORDERLINE:
            return [pytest.mark.xfail(reason="super-linear", strict=False)]
        return []

    return [pytest.param(name, unit, marks=marks((name, unit))) for name in ENTRY_POINTS for unit in UNITS]


@pytest.mark.parametrize(("name", "unit"), _cases())
def test_known_hostile_runs_cost_linear_time(name: str, unit: str) -> None:
    assert growth(ENTRY_POINTS[name], unit) < RATIO_LIMIT


@pytest.mark.parametrize("name", ["speakable"])  # the others still have quadratic cases (above)
@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(unit=hostile_units())
def test_generated_hostile_runs_cost_linear_time(name: str, unit: str) -> None:
    assert growth(ENTRY_POINTS[name], unit) < RATIO_LIMIT
