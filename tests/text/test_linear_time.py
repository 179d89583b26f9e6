"""Every text-stage entry point runs in linear time on hostile input (see ``tests.scaling``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings

from speakstream.text import IncrementalSentenceChunker, SpeakableFilter, chunk_text, speakable
from speakstream.text.lexicon import Lexicon, Rule
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


HOSTILE_RULES = Lexicon(
    [Rule(string=w, alias="x", word_boundaries=False) for w in ("a", "e.g.", "[", "a.", "1", "Mr", "你好")]
    + [Rule(string=f"w{i}", alias="x", case_sensitive=False) for i in range(500)]
)


def _fed_rewriter(text: str) -> None:
    rewriter = HOSTILE_RULES.rewriter()
    for i in range(0, len(text), 7):
        rewriter.feed(text[i : i + 7])
    rewriter.flush()


ENTRY_POINTS: dict[str, Callable[[str], object]] = {
    "pronunciation rules": HOSTILE_RULES.apply,
    "pronunciation rules fed in fragments": _fed_rewriter,
    "chunk_text": chunk_text,
    "chunker fed in fragments": _fed_chunker,
    "speakable": speakable,
    "speakable filter fed in fragments": _fed_filter,
    "split_sentences": split_sentences,
}


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_known_hostile_runs_cost_linear_time(name: str, unit: str) -> None:
    assert growth(ENTRY_POINTS[name], unit) < RATIO_LIMIT


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(unit=hostile_units())
def test_generated_hostile_runs_cost_linear_time(name: str, unit: str) -> None:
    assert growth(ENTRY_POINTS[name], unit) < RATIO_LIMIT
