"""Where a window ends: at a word gap near its size, never leaving a sliver, and where a long
window splits into two halves decoded at once."""

from __future__ import annotations

from collections.abc import Sequence

from speakstream.engine.windows.policy import WindowPolicy


def cut(policy: WindowPolicy, start: int, size: int, end: int) -> int:
    """Where a window of ``size`` from ``start`` ends: never leaving a sliver before ``end``."""
    stop = min(end, start + size)
    return end if end - stop < policy.shortest else stop


def snap(policy: WindowPolicy, start: int, stop: int, end: int, boundaries: Sequence[int]) -> int:
    """``stop`` moved to a word gap: the last within ``back_frames`` before it, else the first within
    ``ahead_frames`` after it, leaving the window and the rest at least ``shortest`` long (a seam
    between words is inaudible; one inside a word can break it)."""
    shortest, seams = policy.shortest, policy.seams
    fits = [b for b in boundaries if b - start >= shortest and end - b >= shortest]
    before = [b for b in fits if stop - seams.back_frames <= b <= stop]
    after = [b for b in fits if stop < b <= stop + seams.ahead_frames]
    return before[-1] if before else after[0] if after else stop


def snap_opening(policy: WindowPolicy, stop: int, end: int, boundaries: Sequence[int], reach: int) -> int:
    """The opening's end ``stop`` moved forward to the first word gap within ``reach``. Never back:
    the opening's audio is what covers the next window's compute."""
    fits = [b for b in boundaries if stop <= b <= stop + reach and end - b >= policy.shortest]
    return fits[0] if fits else stop


def split(policy: WindowPolicy, start: int, end: int, boundaries: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Window ``[start, end)`` as two halves (a window of ``split.frames`` or more), their seam at the
    word gap nearest the middle within ``split.reach_frames``, else at the middle; else itself."""
    shortest = policy.shortest
    if not policy.split.frames or end - start < max(policy.split.frames, 2 * shortest):
        return ((start, end),)
    middle = (start + end) // 2
    reach = policy.split.reach_frames
    near = [b for b in boundaries if abs(b - middle) <= reach and start + shortest <= b <= end - shortest]
    seam = min(near, key=lambda b: abs(b - middle)) if near else middle
    return (start, seam), (seam, end)


BATCH_SIZES = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
"""The lengths, in frames, a batched engine decodes its windows at, so that windows of different
sessions share a length and so a batch: each a half more than the one before, so a window grows by
a fifth on average (its context, which costs a GPU little)."""


def sized(start: int, end: int, total: int, sizes: Sequence[int] = BATCH_SIZES) -> tuple[int, int]:
    """Frames ``[start, end)`` of an utterance of ``total`` grown to the next of ``sizes``: the end
    moved later, then the start earlier, within the utterance (what is kept stays as it was; the
    rest is context). A window as long as the largest, or an utterance shorter than the size,
    keeps what it can."""
    size = next((s for s in sizes if s >= end - start), end - start)
    end = min(total, start + size)
    return max(0, end - size), end
