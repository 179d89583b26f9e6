"""Hypothesis strategies for agent-like text and ways to cut it into fragments."""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

PIECES = [
    "Hello",
    "there",
    "Dr.",
    "Smith",
    "e.g.",
    "i.e.",
    "etc.",
    "vs.",
    "U.S.",
    "a.m.",
    "p.m.",
    "$3.50",
    "1,299.99",
    "3.14",
    "v1.2.3",
    "10:30",
    "12.5%",
    "2024-03-15",
    "+1 (555) 123-4567",
    "https://example.com/a.b",
    "jane.doe@example.com",
    "...",
    "…",
    ".",
    "!",
    "?",
    ",",
    ";",
    ":",
    "—",
    '"',
    "'",
    "(",
    ")",
    "\n",
    "\n\n",
    "1.",
    "2)",
    "。",
    "！",
    "今日は",
    "晴れ",
    "word",
    "the",
    "a",
    "quick",
    "Brown",
    "fox",
    "42",
    "St.",
    "Baker",
    "No.",
    "5",
    " ",
    "  ",
    "-",
    "*",
]

agent_text = st.lists(st.sampled_from(PIECES), max_size=80).map(" ".join) | st.text(max_size=300)

_RUN_UNITS = [".", "!", "?", "。", "\n", " ", "\t", " \n"]
RUNS = st.builds(lambda unit, n: unit * n, st.sampled_from(_RUN_UNITS), st.integers(10, 90))
long_runs_text = st.lists(st.sampled_from(PIECES) | RUNS, max_size=30).map(" ".join)
"""Agent-like text with long runs of terminators and blanks (decided a bounded run at a time)."""


@st.composite
def fragmented(draw: st.DrawFn, text_strategy: st.SearchStrategy[str] = agent_text) -> tuple[str, list[str]]:
    """A text and one way of cutting it into consecutive fragments."""
    text = draw(text_strategy)
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=max(0, len(text)))))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds)]


def squash(text: str) -> str:
    return "".join(text.split())
