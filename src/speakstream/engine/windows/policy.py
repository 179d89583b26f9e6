"""How a chunk's decoder windows are sized, in frames of 25 ms: plain data in four groups.

Only the planner (``planner``) reads it. Each knob says what it decides; the evidence for each
default (figures, dates, the commands that measured them) is in ``docs/design.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class OpeningPolicy:
    """The window that opens a reply: what its listener is waiting for."""

    least_frames: int = 16
    """The shortest opening; no cut or moved seam leaves a window or rest shorter either."""
    crowded_frames: int = 8
    """The shortest opening while more replies wait for their first audio than the engine has lanes."""
    longest_frames: int = 32
    """The longest opening sized to cover the windows after it (past it, none is tried): the
    budget's least, so an opening is never longer than the shortest window after it."""
    cover_share: float = 0.8
    """An opening is long enough when each window after it, simulated at the decoder's speed, is
    decoded within this share of the audio buffered when it starts."""
    reach_frames: int = 8
    """How far the opening's end may move forward to fall between two words (never back)."""
    crowded_reach_frames: int = 4
    """How far a crowded opening's end may move forward to fall between two words."""
    context_after_frames: int | None = 4
    """Context decoded after the opening window (None: its seam's, as for any window)."""
    crowded_decoder: bool = True
    """Decode a crowded opening on the engine's crowded decoder, where it has one."""
    start_buffer_s: float = 0.2
    """The most an opening's audio may be held before it is sent, when no opening covers the
    windows after it: first audio that much later, instead of a gap after the first words."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SeamPolicy:
    """Where two windows meet: the context decoded on each side and thrown away, and the seam's place."""

    context_frames: int = 12
    """Context on each side of a seam inside a word (the convolutions' reach)."""
    gap_context_frames: int = 8
    """Context on each side of a seam between words, where the audio is near silence."""
    lead_context_frames: int = 4
    """Context before a chunk's first window, which lies in the silence before its speech."""
    back_frames: int = 16
    """How far back a seam after the opening may move to fall between two words."""
    ahead_frames: int = 4
    """How far forward a seam after the opening may move when no word gap lies behind it."""
    crossfade_samples: int = 96
    """Overlap of two windows' audio, crossfaded linearly."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetPolicy:
    """The windows after the opening, sized from what the listener has buffered."""

    share: float = 0.75
    """Share of the buffered audio a window's compute (context included) may take."""
    least_frames: int = 32
    """The least the budget sizes a window from the third on: the decoder's instance norms take
    their statistics over the window, so a short one sounds different."""
    most_frames: int = 160
    """The largest window, and the largest half of a window decoded as two halves."""
    sustain: float = 1.5
    """For a reply alone on a decoder near real time: a window that would cost more than it plays
    is made this many times the window that breaks even (0: sized to the buffer only)."""
    others_share: float = 0.5
    """Share of the least buffer another playing listener has that a window's compute may take
    (before ``share``): a lane held longer leaves that listener dry while it waits for one."""
    growth: float = 2.5
    """With no listener known: each window at most this many times the one before."""
    later_first_frames: int = 160
    """With no listener known: the first window of a chunk that does not open its reply."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitPolicy:
    """Long windows decoded as two halves at once, on two narrow copies, while nothing else runs."""

    frames: int = 96
    """A window this long or longer is split (0: never)."""
    reach_frames: int = 8
    """How far from the middle the seam between the halves may move to fall between two words."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowPolicy:
    """Every knob of windowed decoding; ``dataclasses.replace`` makes a variant."""

    opening: OpeningPolicy = field(default_factory=OpeningPolicy)
    seams: SeamPolicy = field(default_factory=SeamPolicy)
    budget: BudgetPolicy = field(default_factory=BudgetPolicy)
    split: SplitPolicy = field(default_factory=SplitPolicy)

    @classmethod
    def whole(cls) -> WindowPolicy:
        """One window over the whole chunk, no context: decoding as it was before streaming."""
        huge = 1 << 30
        return cls(
            opening=OpeningPolicy(least_frames=huge),
            seams=SeamPolicy(context_frames=0, gap_context_frames=0, lead_context_frames=0, crossfade_samples=0),
            budget=BudgetPolicy(most_frames=huge, later_first_frames=huge),
            split=SplitPolicy(frames=0),
        )

    @property
    def shortest(self) -> int:
        """No window or rest after a cut or a moved seam is shorter (a sliver would cost its
        context for almost no audio, and sound different)."""
        return max(2, self.opening.least_frames)
