"""Every window decision, made in one place: a pure function of (policy, speed, load, the chunk's
word gaps) that returns the next window's plan and the reason for it.

A window ``[start, end)`` of frames is decoded over ``[start - context, end + context)`` and only its
middle kept. The opening window of a reply is sized for the listener who waits for it (and so that
its audio covers the windows after it); every later one from what the listener has buffered (its
compute within a share of that), or by fixed growth when no listener is known. Seams move to fall
between words; a long window alone may be decoded as two halves at once. Nothing here runs a model
or reads a clock: the runner executes the plan, and tests drive this with plain numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from speakstream.engine.windows.policy import WindowPolicy
from speakstream.engine.windows.speed import Speed
from speakstream.types import SAMPLE_RATE, Load

FRAME_SAMPLES = 600
"""One frame of the duration predictor: 600 samples (25 ms at 24 kHz)."""
FRAME_S = FRAME_SAMPLES / SAMPLE_RATE
"""One frame's audio, in seconds."""
COVER_WINDOWS = 3
"""How many windows after an opening the opening must cover (``covers``)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """The frames of one utterance (a chunk's phoneme window) that its windows tile."""

    first: int
    """The first frame decoded (where speech starts, less the onset reach and lead)."""
    stop: int
    """One past the last frame decoded."""
    frames: int
    """The utterance's frames: no context reaches past them."""
    boundaries: tuple[int, ...] = ()
    """Frames between two words (ascending), where seams go."""
    opens_reply: bool = False
    """The first utterance of a chunk that opens its reply: its first window is the opening."""
    silent_s: float = 0.0
    """How much of the opening's audio may be silence cut before it plays (the onset reach)."""


@dataclass(frozen=True, slots=True)
class Situation:
    """What a decision reads besides the policy and the chunk, as plain data."""

    speed: Speed
    load: Load
    buffered_s: float | None = None
    """The listener's buffer now (``Load.buffered_at``); None: no listener known."""
    running: int = 0
    """Inferences running on the engine now (other replies' windows and fronts)."""
    pair_free: bool = False
    """Two narrow decoder copies are free to decode a window's halves at once."""
    crowded_decoder: bool = False
    """The engine has a crowded decoder."""

    @property
    def alone(self) -> bool:
        """Nothing else runs on the engine, or is about to: this window gets every core."""
        return self.running == 0 and not self.load.sharing


@dataclass(frozen=True, slots=True)
class Span:
    """One inference of a window: frames ``[start, end)`` decoded, ``[keep_start, keep_end)`` kept."""

    keep_start: int
    keep_end: int
    start: int
    end: int

    @property
    def frames(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """The next window of an utterance, how to decode it, and why it is this size."""

    start: int
    end: int
    spans: tuple[Span, ...]
    """One span, or two halves decoded at once."""
    last: bool
    """The utterance's last window."""
    planned: int = 0
    """Its size as planned, before the chunk's end or a word gap moved its end: what the next
    window's size follows."""
    decoder: str = "main"
    """``main``, or ``crowded`` (the engine's crowded decoder)."""
    reason: str = ""

    @property
    def frames(self) -> int:
        return self.end - self.start


def plan_window(
    policy: WindowPolicy, chunk: Chunk, index: int, start: int, previous: int, now: Situation
) -> WindowPlan:
    """Window ``index`` of ``chunk``, from frame ``start`` (``previous``: the last one's planned size)."""
    waiting = index == 0 and chunk.opens_reply
    crowded = waiting and now.load.crowded
    budget, why = (None, "") if waiting else frame_budget(policy, now)
    paired = bool(policy.split.frames) and pair_ready(now)
    longest = policy.budget.most_frames * (2 if paired else 1)
    first, opened = opening_frames(policy, now, chunk.silent_s, crowded=crowded) if index == 0 else (0, "")
    size = window_size(policy, index, previous, opening=chunk.opens_reply, budget=budget, first=first, longest=longest)
    cut_end = end = cut(policy, start, size, chunk.stop)
    if end < chunk.stop:
        reach = policy.opening.crowded_reach_frames if crowded else policy.opening.reach_frames
        end = (
            snap_opening(policy, end, chunk.stop, chunk.boundaries, reach)
            if waiting
            else snap(policy, start, end, chunk.stop, chunk.boundaries)
        )
    halves = split(policy, start, end, chunk.boundaries) if paired else ((start, end),)
    spans = tuple(_span(policy, chunk, a, b, opens=index == 0 and a == start, waiting=waiting) for a, b in halves)
    on_crowded = crowded and len(spans) == 1 and policy.opening.crowded_decoder and now.crowded_decoder
    reason = (opened if waiting else why) + (f"; end moved to a word gap from {cut_end}" if end != cut_end else "")
    return WindowPlan(start, end, spans, end == chunk.stop, size, "crowded" if on_crowded else "main", reason)


def pair_ready(now: Situation) -> bool:
    """A window sized now may be decoded as two halves at once: two narrow copies are free,
    nothing else runs, and no other reply waits for its next window."""
    return now.pair_free and now.alone and now.load.replies <= 1


def frame_budget(policy: WindowPolicy, now: Situation) -> tuple[float | None, str]:
    """Frames the decoder can make before the listener's buffer runs dry (None: no listener), and
    why. A listener run dry while other replies take turns gets no limit: the engine is short of
    time for everyone, and the largest window (the least context decoded twice) serves all best.
    A reply alone on a decoder near real time gets a window it can sustain (``sustained``)."""
    buffered, load = now.buffered_s, now.load
    if buffered is None:
        return None, f"no listener: grows {policy.budget.growth}x"
    if load.playing and buffered <= 0.0 and load.replies > 1:
        return math.inf, "listener ran dry while other replies wait: the largest"
    every, lone = max(now.speed.recent_s, 1e-6), max(now.speed.lone_s, 1e-6)
    frames = buffered / every
    why = f"{buffered:.2f} s buffered at {1000 * every:.1f} ms a frame"
    if policy.budget.sustain and now.alone:
        kept = sustained(policy, frames, lone)
        if kept != frames:
            return kept, why + f"; raised to a window it can sustain at {1000 * lone:.1f} ms a frame alone"
    return frames, why


def sustained(policy: WindowPolicy, budget: float, frame_s: float) -> float:
    """``budget``, unless the window it gives would cost more than it plays on a decoder taking
    ``frame_s`` a decoded frame (context included): then the budget of ``sustain`` times the window
    whose audio lasts as long as its compute (no limit when the decoder is slower than real time:
    the largest window loses the least)."""
    rtf = frame_s / FRAME_S
    if rtf >= 1.0:
        return math.inf
    context = 2 * policy.seams.context_frames
    even = context * rtf / (1.0 - rtf)
    if window_size(policy, 2, 0, opening=True, budget=budget) > even:  # a later window: at least least_frames
        return budget
    return max(budget, (even * policy.budget.sustain + context) / policy.budget.share)


def window_size(
    policy: WindowPolicy,
    index: int,
    previous: int,
    *,
    opening: bool,
    budget: float | None,
    first: int = 0,
    longest: int = 0,
) -> int:
    """Frames of window ``index`` (``previous``: the one before's; ``budget``: frames the decoder can
    make before the listener runs dry, None if not known; ``first``: the opening's size, default
    the least; ``longest``: default ``most_frames``). A first window whose listener waits (or soon
    will) is ``first``; the one after a short opening follows the buffer down to the least opening."""
    b = policy.budget
    longest = longest or b.most_frames
    if budget is None:
        size = None
    elif math.isinf(budget):
        size = longest
    else:
        size = int(budget * b.share) - 2 * policy.seams.context_frames
    if index == 0 and (opening or (size is not None and size < b.least_frames)):
        return max(1, first or policy.opening.least_frames)
    least = b.least_frames
    if size is None:
        size = int(b.later_first_frames if index == 0 else previous * b.growth)
    elif index == 1 and previous < b.least_frames:
        least = policy.opening.least_frames
    return max(1, min(longest, max(policy.opening.least_frames, least, size)))


def opening_frames(policy: WindowPolicy, now: Situation, silent_s: float, *, crowded: bool) -> tuple[int, str]:
    """The opening's size, and why: the fewest frames whose audio covers the windows after it at the
    decoder's speed alone, or, beside others, at the speed it has shared; a crowded one the
    shortest that sounds right when that is shorter."""
    if crowded:
        size, _ = opening_frames(policy, now, silent_s, crowded=False)
        frames = min(policy.opening.crowded_frames, size)
        return frames, f"crowded opening of {frames} frames ({now.load.waiting_first} waiting, {now.load.lanes} lanes)"
    shared = not now.alone
    frame_s = now.speed.shared_s if shared else now.speed.opening_s
    frames = opening_size(policy, frame_s, shared=shared, silent_s=silent_s)
    where = "shared" if shared else "alone"
    if frame_s is None:
        return frames, f"opening of {frames} frames (speed not measured yet)"
    covered = covers(policy, frames, frame_s, silent_s=silent_s)
    how = "covers the next windows" if covered else "covers nothing"
    return frames, f"opening of {frames} frames: {how} at {1000 * frame_s:.1f} ms a frame {where}"


def opening_size(policy: WindowPolicy, frame_s: float | None, *, shared: bool = False, silent_s: float = 0.0) -> int:
    """The fewest frames from the least opening up to the budget's least for which each of the
    windows after it is decoded in time (``covers``) on a decoder taking ``frame_s`` a frame (None:
    not measured yet). When none does, a gap comes whatever the opening: alone, the budget's least
    keeps first audio bounded; ``shared`` with other replies, the shortest, since the listeners
    waiting for first audio wait for each other's openings too."""
    least = policy.opening.least_frames
    if not frame_s:
        return least
    fits = (n for n in range(least, policy.budget.least_frames) if covers(policy, n, frame_s, silent_s=silent_s))
    return next(fits, least if shared else max(least, policy.budget.least_frames))


def covers(
    policy: WindowPolicy, opening: int, frame_s: float, windows: int = COVER_WINDOWS, *, silent_s: float = 0.0
) -> bool:
    """Whether a reply opened by ``opening`` frames (``silent_s`` of them cut as silence) plays
    without a gap through its next ``windows`` windows on a decoder taking ``frame_s`` a decoded
    frame, each with its seams inside words (the most context), sized from the buffer as
    ``window_size`` sizes them, and each decoded within ``cover_share`` of the buffer."""
    buffered, previous = opening * FRAME_S - silent_s, opening
    for index in range(1, windows + 1):
        frames = window_size(policy, index, previous, opening=True, budget=buffered / frame_s)
        cost = (frames + 2 * policy.seams.context_frames) * frame_s
        if cost > buffered * policy.opening.cover_share:
            return False
        buffered, previous = buffered - cost + frames * FRAME_S, frames
    return True


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


def _span(policy: WindowPolicy, chunk: Chunk, a: int, b: int, *, opens: bool, waiting: bool) -> Span:
    """Frames ``[a, b)`` with their context: the lead before a chunk's first window, the opening's
    own after it, else a seam's (less between words)."""
    seams, gaps = policy.seams, chunk.boundaries

    def reach(seam: int) -> int:
        return seams.gap_context_frames if seam in gaps else seams.context_frames

    left = seams.lead_context_frames if opens else reach(a)
    right = seams.context_frames if b == chunk.stop else reach(b)
    after = policy.opening.context_after_frames
    if waiting and after is not None:
        right = min(right, after)
    return Span(a, b, max(0, a - left), min(chunk.frames, b + right))
