"""Throughput of the text stage: speakable filter + chunker fed in 3-character fragments.

    python benchmarks/text_throughput.py

Prints chars/s at 10 KB, 100 KB and 1 MB; linear feeding keeps chars/s flat as size grows.
"""

from __future__ import annotations

import time

from speakstream.data import replies
from speakstream.text import IncrementalSentenceChunker, SpeakableFilter


def corpus(size: int) -> str:
    text = "\n\n".join(r["text"] for r in replies().values())
    return (text * (size // len(text) + 1))[:size]


def run(text: str, fragment: int = 3) -> tuple[float, int]:
    spoken, chunker = SpeakableFilter(), IncrementalSentenceChunker()
    chunks = 0
    start = time.perf_counter()
    for i in range(0, len(text), fragment):
        chunks += len(chunker.feed(spoken.feed(text[i : i + fragment])))
    chunks += len(chunker.feed(spoken.flush())) + len(chunker.flush_all())
    return time.perf_counter() - start, chunks


def main() -> None:
    print(f"{'size':>8} {'seconds':>8} {'chars/s':>12} {'chunks':>7}")
    for size in (10_000, 100_000, 1_000_000):
        seconds, chunks = min(run(corpus(size)) for _ in range(3))
        print(f"{size:>8} {seconds:>8.3f} {size / seconds:>12,.0f} {chunks:>7}")


if __name__ == "__main__":
    main()
