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
from dataclasses import dataclass

from speakstream.engine.runtime.speed import Speed
from speakstream.engine.windows.ends import cut, snap, snap_opening, split
from speakstream.engine.windows.policy import WindowPolicy
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
    others_buffered_s: float | None = None
    """The least another playing listener has buffered now (``Load.others_at``); None: none."""
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
class Decode:
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
    decodes: tuple[Decode, ...]
    """One decode, or two halves decoded at once."""
    last: bool
    """The utterance's last window."""
    planned: int = 0
    """Its size as planned, before the chunk's end or a word gap moved its end: what the next
    window's size follows."""
    decoder: str = "main"
    """``main``, or ``crowded`` (the engine's crowded decoder)."""
    reason: str = ""
    hold_s: float = 0.0
    """How long the opening's audio is held before it is sent (``start_buffer``)."""

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
    hold = start_buffer(policy, now, first, chunk.silent_s, crowded=crowded) if waiting else 0.0
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
    decodes = tuple(_decode(policy, chunk, a, b, opens=index == 0 and a == start, waiting=waiting) for a, b in halves)
    on_crowded = crowded and len(decodes) == 1 and policy.opening.crowded_decoder and now.crowded_decoder
    reason = (opened if waiting else why) + (f"; end moved to a word gap from {cut_end}" if end != cut_end else "")
    hold = 0.0 if end == chunk.stop else hold
    reason += f"; held {1000 * hold:.0f} ms" if hold else ""
    decoder = "crowded" if on_crowded else "main"
    return WindowPlan(start, end, decodes, end == chunk.stop, size, decoder, reason, hold)


def pair_ready(now: Situation) -> bool:
    """A window sized now may be decoded as two halves at once: two narrow copies are free,
    nothing else runs, and no other reply waits for its next window."""
    return now.pair_free and now.alone and now.load.replies <= 1


def turn_s(now: Situation) -> float:
    """Decoder seconds a frame of this reply costs in wall time: its speed where it will run (alone,
    every core; beside others, a narrow copy), times the replies that take turns per lane."""
    return frame_s(now) * cycle(now)


def frame_s(now: Situation) -> float:
    """The decoder's seconds a frame where the next window will run."""
    if now.alone:
        return max(now.speed.lone_s, 1e-6)
    return max(now.speed.shared_s or now.speed.recent_s, 1e-6)


def cycle(now: Situation) -> float:
    """Windows that run per lane between two of this reply's: the replies with work, per lane."""
    return max(1.0, now.load.replies / max(1, now.load.lanes))


def throughput(policy: WindowPolicy, speed: Speed, lanes: int) -> float:
    """Audio seconds a second ``lanes`` make decoding the windows a reply starts with (the budget's
    least, its context between words) at the shared speed (the lone speed with one lane): an
    estimate, before the scheduler measures what the engine delivers, and a low one, so a fresh
    server does not admit its first burst into a stall."""
    frame = (speed.shared_s or speed.recent_s) if lanes > 1 else speed.lone_s
    window = policy.budget.least_frames
    decoded = window + 2 * policy.seams.gap_context_frames
    return lanes * window * FRAME_S / max(decoded * frame, 1e-9)


def frame_budget(policy: WindowPolicy, now: Situation) -> tuple[float | None, str]:
    """Frames the decoder can make before the listener's buffer runs dry (None: no listener), and
    why; raised, when a window that fits would cost more than it plays while the other replies
    take their turns, to one it can sustain (``sustained``): a smaller one would leave the next
    with less, and every one after the buffer runs dry is a gap."""
    buffered = now.buffered_s
    if buffered is None:
        return None, f"no listener: grows {policy.budget.growth}x"
    speed, turns = frame_s(now), cycle(now)
    frames = buffered / speed
    why = f"{buffered:.2f} s buffered at {1000 * speed:.1f} ms a frame"
    if policy.budget.sustain:
        kept = sustained(policy, frames, speed * turns)
        if kept != frames:
            frames, why = kept, why + f"; raised to a window that keeps up, {turns:.1f} replies a lane"
    others = now.others_buffered_s
    if others is not None and others * policy.budget.others_share / speed < frames:
        frames = others * policy.budget.others_share / speed
        why += f"; held to {policy.budget.others_share:g} of another listener's {others:.2f} s"
    return frames, why


def sustained(policy: WindowPolicy, budget: float, frame_s: float) -> float:
    """``budget``, unless the window it gives would cost more than it plays on a decoder taking
    ``frame_s`` a decoded frame in wall time (context included): then the budget of ``sustain``
    times the window whose audio lasts as long as its compute (no limit when the decoder is slower
    than real time: the largest window loses the least)."""
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
    """The opening's size, and why: the fewest frames whose audio covers the windows after it, at
    the speed where they will run (a narrow copy's while other replies have work, even when the
    opening itself runs alone), while the other replies take their turns and the openings queued
    behind it run first; crowded, from the crowded opening up. When none covers, the longest,
    which comes closest: a short one is followed by windows that each cost about as much as they
    play, a gap after each; crowded, the shortest (everyone waiting waits for each other's
    openings)."""
    speed, turns, behind = _after_opening(now, crowded=crowded)
    least = min(policy.opening.crowded_frames, policy.opening.least_frames) if crowded else policy.opening.least_frames
    what = "crowded opening" if crowded else "opening"
    if not speed:
        return least, f"{what} of {least} frames (speed not measured yet)"
    fits = (
        n
        for n in range(least, policy.opening.longest_frames + 1)
        if covers(policy, n, speed, turns, behind, silent_s=silent_s, wait_s=now.load.lane_wait_s)
    )
    frames = next(fits, None)
    where = f"{1000 * speed:.1f} ms a frame, {turns:.1f} replies a lane" + (
        f", {behind} rounds of openings behind" if behind else ""
    )
    if frames is not None:
        return frames, f"{what} of {frames} frames: covers the next windows at {where}"
    frames = least if crowded else policy.opening.longest_frames
    return frames, f"{what} of {frames} frames: no opening covers at {where}"


def _after_opening(now: Situation, *, crowded: bool) -> tuple[float | None, float, int]:
    """What the windows after an opening meet: the decoder's seconds a frame where they run, the
    replies taking turns per lane, and the rounds of openings queued before them."""
    speed = now.speed.shared_s if not now.alone or now.load.replies > 1 else now.speed.opening_s
    behind = math.ceil(max(0, now.load.waiting_first - now.load.lanes) / max(1, now.load.lanes)) if crowded else 0
    return speed, cycle(now), behind


def start_buffer(policy: WindowPolicy, now: Situation, frames: int, silent_s: float, *, crowded: bool) -> float:
    """Seconds to hold an opening of ``frames`` before it is sent so that its audio just covers
    the windows after it (``covers`` with all of it: the share left is for the opening's size), in
    steps of 10 ms up to ``start_buffer_s``; 0 when it covers already, the most when nothing within
    it does (a shorter gap after the first words all the same). The scheduler sends it sooner when
    the next piece comes first."""
    speed, turns, behind = _after_opening(now, crowded=crowded)
    most = policy.opening.start_buffer_s
    if not speed or most <= 0:
        return 0.0
    held = (i / 100 for i in range(round(100 * most) + 1))
    wait = now.load.lane_wait_s
    fits = (
        h
        for h in held
        if covers(policy, frames, speed, turns, behind, silent_s=silent_s, held_s=h, wait_s=wait, share=1.0)
    )
    return next(fits, most)


def held_once_made(policy: WindowPolicy, chunk: Chunk, plan: WindowPlan, made: int, now: Situation) -> float:
    """How long to hold the piece of ``plan``, the ``made``-th of ``chunk``, weighed again for
    ``now`` once it is made: a reply that came while an opening ran slows the windows after it,
    so its start-up buffer is the larger of the one planned and one planned now."""
    if plan.last or made != 1 or not chunk.opens_reply:
        return plan.hold_s
    return max(plan.hold_s, start_buffer(policy, now, plan.frames, chunk.silent_s, crowded=now.load.crowded))


def opening_size(policy: WindowPolicy, frame_s: float | None, *, shared: bool = False, silent_s: float = 0.0) -> int:
    """The opening a reply alone (or ``shared`` with one other) gets on a decoder taking ``frame_s``
    a frame (None: not measured yet): ``opening_frames`` without a load."""
    load = Load(in_flight=2 if shared else 1, replies=2 if shared else 1, lanes=2 if shared else 1)
    speed = Speed(frame_s or 0.0, frame_s or 0.0, frame_s, frame_s) if frame_s else Speed(0.0, 0.0)
    return opening_frames(policy, Situation(speed, load), silent_s, crowded=False)[0]


def covers(
    policy: WindowPolicy,
    opening: int,
    frame_s: float,
    turns: float = 1.0,
    behind: int = 0,
    windows: int = COVER_WINDOWS,
    *,
    silent_s: float = 0.0,
    held_s: float = 0.0,
    wait_s: float = 0.0,
    share: float | None = None,
) -> bool:
    """Whether a reply opened by ``opening`` frames (``silent_s`` of them cut as silence) plays
    without a gap through its next ``windows`` windows on a decoder taking ``frame_s`` a decoded
    frame, each window sized from the buffer as ``window_size`` sizes it and done within
    ``cover_share`` of it (or ``share``); ``held_s``: the opening held that long before it is sent
    (``start_buffer``); ``wait_s``: how long, from the opening's start, its second window waits for
    a lane (``Load.lane_wait_s``). ``turns``: replies taking turns per lane, whose windows run between this
    reply's; ``behind``: rounds of other openings that run before its second window (which then
    runs first of the second windows). Each window has its seams inside words (the most context)."""
    context = 2 * policy.seams.context_frames
    opening_context = policy.seams.lead_context_frames + (policy.opening.context_after_frames or 0)
    buffered, previous = opening * FRAME_S - silent_s + held_s, opening
    lane_s = max(0.0, wait_s - (opening + opening_context) * frame_s)  # past the opening's own time
    for index in range(1, windows + 1):
        frames = window_size(policy, index, previous, opening=True, budget=buffered / (frame_s * turns))
        own = (frames + context) * frame_s
        if index > 1:
            due = own * turns
        elif behind:
            due = behind * (opening + opening_context) * frame_s + own
        else:
            due = own * turns
        if index == 1:
            due += lane_s
        if due > buffered * (policy.opening.cover_share if share is None else share):
            return False
        buffered, previous = buffered - due + frames * FRAME_S, frames
    return True


def _decode(policy: WindowPolicy, chunk: Chunk, a: int, b: int, *, opens: bool, waiting: bool) -> Decode:
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
    return Decode(a, b, max(0, a - left), min(chunk.frames, b + right))
