"""Text stage: chunker + speakable filter throughput, and sentence splitters compared on the
segmentation corpus (accuracy and speed)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from speakstream.bench.context import BenchContext
from speakstream.bench.tables import table
from speakstream.data import replies, segmentation_cases
from speakstream.text import IncrementalSentenceChunker, SpeakableFilter, split_sentences

NAME = "text"
TITLE = "Text stage: throughput and sentence splitting"


def corpus(size: int) -> str:
    text = "\n\n".join(r["text"] for r in replies().values())
    return (text * (size // len(text) + 1))[:size]


def throughput(size: int, fragment: int = 3) -> dict[str, float]:
    text = corpus(size)
    best = float("inf")
    for _ in range(3):
        spoken, chunker = SpeakableFilter(), IncrementalSentenceChunker()
        started = time.perf_counter()
        for i in range(0, len(text), fragment):
            chunker.feed(spoken.feed(text[i : i + fragment]))
        chunker.feed(spoken.flush())
        chunker.flush_all()
        best = min(best, time.perf_counter() - started)
    return {"chars": size, "seconds": round(best, 4), "chars_per_s": round(size / best)}


def splitters() -> dict[str, Callable[[str], list[str]]]:
    found: dict[str, Callable[[str], list[str]]] = {"speakstream": lambda t: [s.text for s in split_sentences(t)]}
    try:
        import pysbd

        segmenter = pysbd.Segmenter(language="en", clean=False)
        found["pysbd 0.3"] = lambda t: [s.strip() for s in segmenter.segment(t) if s.strip()]
    except ImportError:
        pass
    try:
        import sentencex

        found["sentencex"] = lambda t: [s.strip() for s in sentencex.segment("en", t) if s.strip()]
    except ImportError:
        pass
    try:
        import blingfire

        found["blingfire"] = lambda t: [s for s in blingfire.text_to_sentences(t).split("\n") if s]
    except ImportError:
        pass
    return found


def score(split: Callable[[str], list[str]]) -> dict[str, Any]:
    cases = segmentation_cases()
    correct = 0
    for case in cases:
        sentences = split(str(case["text"]))
        keeps = all(any(k in s for s in sentences) for k in case["keep"])  # type: ignore[attr-defined]
        correct += keeps and len(sentences) == 2
    text = " ".join(str(c["text"]) for c in cases) * 40
    started = time.perf_counter()
    split(text)
    return {"correct": correct, "cases": len(cases), "chars_per_s": round(len(text) / (time.perf_counter() - started))}


async def run(ctx: BenchContext) -> dict[str, Any]:
    sizes = (10_000, 100_000) if ctx.quick else (10_000, 100_000, 1_000_000)
    return {
        "throughput": [throughput(s) for s in sizes],
        "splitters": {name: score(split) for name, split in splitters().items()},
    }


def markdown(result: dict[str, Any]) -> str:
    speed = table(
        ["input", "seconds", "chars/s"],
        [
            [f"{r['chars'] // 1000} KB in 3-char fragments", r["seconds"], r["chars_per_s"]]
            for r in result["throughput"]
        ],
    )
    split = table(
        ["splitter", "corpus cases right", "chars/s"],
        [[n, f"{r['correct']}/{r['cases']}", r["chars_per_s"]] for n, r in result["splitters"].items()],
    )
    return (
        f"Speakable filter + chunker, fed in 3-character fragments:\n\n{speed}\nSentence splitters on "
        f"`segmentation.jsonl` (right = every `keep` intact and two sentences):\n\n{split}"
    )
