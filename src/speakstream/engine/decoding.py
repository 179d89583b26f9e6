"""Windowed decoding: Kokoro's decoder run on windows of frames, joined into one seamless stream.

The decoder (``graph.split``) is convolutional, so a window of frames plus ``context_frames`` on
each side gives that window's audio; we keep the centre. Two things in it see the whole sequence:

- the sine source's phase, a running sum over the F0 curve: ``sine_phase`` computes the sum over
  the frames before the window and the decoder adds it (its ``phase`` input), so each window's
  excitation continues the previous one's exactly;
- the AdaIN instance norms, whose statistics are taken over the window (with its context) instead
  of the whole utterance; the bench's fidelity experiment measures what that costs.

Neighbouring windows overlap by ``crossfade_samples`` and are crossfaded linearly across the seam.
Windows start small, for the first audio, and grow (``growth``) up to ``max_frames``, for
throughput. Edges are trimmed from the model's durations (the padding tokens' frames), so the
first window starts where speech starts and no frame of leading silence is decoded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.phonemes.phonemizer import Phonemized
from speakstream.types import SAMPLE_RATE, WordTimestamp

FRAME_SAMPLES = 600
"""One frame of the duration predictor: 600 samples (25 ms at 24 kHz)."""
WINDOW_PAUSE_S = 0.12
"""Silence between two phoneme windows of one chunk (a text longer than the model's 510 tokens)."""

Decode = Callable[[int, int, NDArray[np.float32]], NDArray[np.float32]]
"""decode(first frame, end frame, phase) -> the audio of frames [first, end)."""
Span = tuple[int, int, NDArray[np.float32]]
"""(first frame, end frame, phase): what ``Decode`` takes."""
DecodePair = Callable[[Span, Span], tuple[NDArray[np.float32], NDArray[np.float32]]]
"""decode_pair(span, span) -> both spans' audio, decoded at once when it can (``Pairs``)."""


Budget = Callable[[], float | None]
"""Frames the decoder can make before the listener's buffer runs dry (None: not known)."""


@dataclass(frozen=True, slots=True)
class Pairs:
    """How a long window's two halves are decoded at once (``WindowPolicy.split_frames``):
    ``decode`` both spans (one after the other when it cannot run them at once), and whether it
    can now (``ready``: two narrow lanes, nothing else running)."""

    decode: DecodePair
    ready: Callable[[], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowPolicy:
    """Window sizes, in frames of 25 ms.

    The first window of a reply is small: the listener is waiting for it. After it, a window's
    compute must fit in the audio the listener has buffered, and every window costs its context on
    both sides, so the next window is as large as the listener's buffer allows (``size`` with a
    budget, from the decoder's measured speed and the reply's playback clock). Without a budget
    (the engine used directly) the windows grow by a fixed ``growth``."""

    first_frames: int = 16
    """The first window of a chunk that opens a reply (0.4 s): the listener is waiting for it. Its
    audio must last while the windows after it are decoded, or the listener hears a gap: 16 frames
    do up to 7.3 ms a decoded frame (``covers``; the bench machine's mixed decoder takes 5.3-7),
    and a slower decoder gets more (``opening``)."""
    crowded_frames: int = 8
    """The window that opens a reply while more listeners wait for their first audio than the
    engine has lanes (``crowded``, the scheduler's call): each opening's compute delays every
    listener behind it, and none can cover what comes after it (its next window waits for the
    other openings), so it is the shortest that sounds like the others. Over the bench's 35
    utterances, 8- and 10-frame openings gave a WER of 0.98% (16 frames: 1.76%; whole decoding:
    0.98%) and a log-mel distance to whole decoding over the first 0.5 s of 5.79 and 5.78 dB (16
    frames: 5.18), in 0.78x and 0.79x the time of 16 (the end moves forward to a word gap, so 8
    frames often decode as 10 do); Whisper heard "Sure, here is the next part." at every opening
    from 8 to 32 frames. Served, 8 against 10 frames: p95 first audio 257 / 286 ms at 4 at once,
    548 / 574 ms at 8 at once (``scripts/ab_served.py --switch crowded-frames``, 6 trials)."""
    shared_opening: bool = True
    """Size a reply's opening at the speed the decoder has while other replies share it, the
    shortest when that covers nothing (``opening``); False: at the lone speed, as when alone."""
    opening_safety: float = 0.8
    """Share of the buffered audio each window after the opening one may take (``covers``): a
    window's compute varies by about 15% from one to the next on a quiet machine. With 0.9, and the
    fastest speed ever measured instead of the recent one, 16 frames left 3 gaps (183 ms) in 15
    replies of the 40-word sentence."""
    min_frames: int = 32
    """The smallest window a budget sizes after the second (a seam moved to a gap between words may
    leave one as short as ``first_frames``). The decoder's instance norms take their statistics
    over the window and its context, so a short one sounds different: with every window at 24
    frames Whisper misheard 4% of words, at 32 and above under 1% (whole decoding: 0%). The window
    after a shorter one (a reply's opening) follows a short buffer down to ``first_frames``: it is
    what the opening's audio must cover while it plays, and one short window is not every window."""
    later_first_frames: int = 160
    """Without a budget: the first window of a later chunk, made while the chunk before it plays."""
    growth: float = 2.5
    """Without a budget: each window is at most this many times the one before ..."""
    max_frames: int = 160
    """... and at most 4 s (about 1.3 s of compute here): first windows jump the queue, and a
    window of another session is what they may have to wait for. A window decoded as two halves
    at once (``split_frames``) may be twice as long: each half is at most this."""
    context_frames: int = 12
    """Frames decoded on each side of a window and thrown away (the convolutions' reach), at a seam
    inside a word, where a seam can break the word: a seam forced at each of 290 frames of four
    sentences made Whisper mishear a word at 3 positions with 8 frames and at 2 with 12."""
    gap_context_frames: int = 8
    """... and at a seam between words, where the audio is near silence. With 8 everywhere, the
    bench's 35 utterances gave the same WER, log-mel distance and seam steps as with 12, so seams
    between words (most of them, see ``snap``) cost a third less decoded twice."""
    lead_context_frames: int = 4
    """Context before the first window of a chunk, whose left side is the silence before speech.
    Not 1, though the head lies ``windowed.ONSET_REACH_S`` into that silence: with 1, Whisper
    heard "Sure, here is the next part." (af_heart) as "So, here..." at openings of 14, 16 and 20
    frames, and with 4 as "Sure" at every opening from 8 to 32."""
    opening_context_frames: int | None = 4
    """Context after the window that opens a reply, in place of its seam's (None: the seam's). The
    listener waits for this window, and its context is a quarter of its compute. Over the bench's
    35 utterances (the opening 19 frames, later windows fixed), 4 frames instead of 8 or 12 gave
    the same WER, the same log-mel distance to whole decoding within 0.25 s of the seam (4.68 dB)
    and no larger step at it, in 0.84x the time; 2 frames: 0.05 dB further."""
    opening_snap_frames: int = 8
    """How far the opening window's end may move forward to fall between two words (``snap_opening``,
    0.2 s). Its context after it is short (``opening_context_frames``), and a seam inside a word
    with that little can break the word: over the bench's 35 utterances (the opening 16 frames),
    with 4 frames 18 openings ended inside a word and Whisper heard "Your flight to Lisbon" as
    "Your flaktor Lisbon" (WER 1.76%, whole decoding 0.98%); with 8, 6 did and the WER was
    0.98%, the log-mel distance to whole decoding over the first 0.5 s 4.72 dB instead of 5.18,
    for 1.07x the opening's time (median). The seam's own context instead (12 frames inside a
    word, 4 reach): 1.18%, in 1.09x the time. Served, 8 against 4, p95 first audio: 147.5 / 148.3
    ms alone, 240.4 / 225.0 at 2 at once, 303.7 / 279.8 at 4 at once (``scripts/ab_served.py
    --switch opening-reach``, 6 trials): on a narrow lane the frames it gains cost more."""
    crowded_snap_frames: int = 4
    """... and a crowded opening's (``crowded_frames``): each of its frames delays every listener
    behind it, and at 8 frames it was heard as well as whole decoding with 4."""
    crossfade_samples: int = 96
    """Overlap of two windows, crossfaded (4 ms)."""
    snap_frames: int = 16
    """How far back a seam after the first may move to fall between two words (0.4 s: a
    sentence's last word, drawn out, can last a second)."""
    snap_ahead_frames: int = 4
    """... or forward by this much when there is no word boundary behind (0.1 s: within ``safety``)."""
    safety: float = 0.75
    """Share of the budget a window may use (the rest absorbs jitter and other work)."""
    split_frames: int = 96
    """A window this long or longer is decoded as two halves at once, on two narrow lanes, when the
    engine has them and nothing else runs (``Pairs``, ``halves``; 0: never). Each half costs its
    own context, but two cores running one thread each do 1.3x the work of both on one inference:
    halves of a 160-frame window took 0.84-0.89x its time on the wide session, of 80 frames
    0.94x, of 40 frames 1.03-1.12x. Such a window may be ``2 * max_frames`` long: two windows
    of the longest size decoded at once."""
    split_reach_frames: int = 8
    """How far from a window's middle the seam between its halves may move to fall between words
    (0.2 s: the halves stay near equal, and the pair takes as long as its longer half)."""
    sustain: float = 1.5
    """For a lone reply (``ListenerBudget``), a window its listener's buffer sizes that would cost
    more than it plays is made this many times the window whose audio lasts as long as its
    compute (``sustained``): on a slowed decoder such windows shrink the buffer and every one
    after it runs dry is a gap; a larger one may make one gap now, and the buffer grows after it
    (0: windows sized to the buffer only)."""

    @classmethod
    def whole(cls) -> WindowPolicy:
        """One window over the whole utterance: what decoding was before streaming (for comparison)."""
        return cls(
            first_frames=1 << 30,
            later_first_frames=1 << 30,
            max_frames=1 << 30,
            context_frames=0,
            gap_context_frames=0,
            lead_context_frames=0,
            crossfade_samples=0,
            split_frames=0,
        )

    def size(
        self,
        index: int,
        previous: int,
        *,
        opening: bool,
        budget: float | None,
        first: int | None = None,
        longest: int | None = None,
    ) -> int:
        """Frames of window ``index`` (``previous``: the size of the one before; ``budget``: the
        frames the decoder can make before the listener's buffer runs dry, None if not known;
        ``first``: the opening window's size, default ``first_frames``; ``longest``: the largest,
        default ``max_frames``)."""
        longest = longest or self.max_frames
        if budget is None:
            size = None
        else:
            size = longest if math.isinf(budget) else int(budget * self.safety) - 2 * self.context_frames
        if index == 0 and (opening or (size is not None and size < self.min_frames)):
            return max(1, first or self.first_frames)  # the listener is waiting (or soon will be) for this one
        least = self.min_frames
        if size is None:
            size = int(self.later_first_frames if index == 0 else previous * self.growth)
        elif index == 1 and previous < self.min_frames:
            least = self.first_frames  # what the short window before it covers (``min_frames``)
        return max(1, min(longest, max(self.first_frames, least, size)))

    def opening(self, frame_s: float | None, *, shared: bool = False, silent_s: float = 0.0) -> int:
        """Frames of the window that opens a reply on a decoder taking ``frame_s`` seconds a frame
        (None: not measured yet): the fewest from ``first_frames`` up to ``min_frames`` for which
        each of the windows after it, sized by this policy from the listener's buffer, is decoded
        within ``opening_safety`` of what is buffered when it starts (``covers``). When none does,
        a gap comes whatever the opening: alone, ``min_frames`` keeps first audio bounded; on a
        decoder ``shared`` with other replies (``frame_s``: its speed then), the shortest, since
        the listeners waiting for first audio wait for each other's openings too. ``silent_s``: how
        much of the opening's audio may be silence cut before it plays (``windowed.ONSET_REACH_S``)."""
        if not frame_s:
            return self.first_frames
        frames = range(self.first_frames, self.min_frames)
        fits = (n for n in frames if self.covers(n, frame_s, silent_s=silent_s))
        return next(fits, self.first_frames if shared else max(self.first_frames, self.min_frames))

    def covers(self, opening: int, frame_s: float, windows: int = 3, *, silent_s: float = 0.0) -> bool:
        """Whether a reply opened by ``opening`` frames, ``silent_s`` of them cut as silence before
        they play, plays without a gap through its next ``windows`` windows on a decoder taking
        ``frame_s`` seconds a decoded frame (each with its seams inside words, the most context),
        sized as ``size`` sizes them from the buffer (what the listener has left when each starts)."""
        frame_audio_s = FRAME_SAMPLES / SAMPLE_RATE
        buffered, previous = opening * frame_audio_s - silent_s, opening
        for index in range(1, windows + 1):
            frames = self.size(index, previous, opening=True, budget=buffered / frame_s)
            cost = (frames + 2 * self.context_frames) * frame_s
            if cost > buffered * self.opening_safety:
                return False
            buffered, previous = buffered - cost + frames * frame_audio_s, frames
        return True

    def sustained(self, budget: float, frame_s: float) -> float:
        """``budget``, unless the window it gives would cost more than it plays on a decoder taking
        ``frame_s`` seconds a decoded frame (context included): then the budget of ``sustain``
        times the window whose audio lasts as long as its compute (no limit when the decoder is
        slower than real time: the largest window loses the least)."""
        rtf = frame_s * SAMPLE_RATE / FRAME_SAMPLES
        if rtf >= 1.0:
            return math.inf
        context = 2 * self.context_frames
        even = context * rtf / (1.0 - rtf)
        if self.size(2, 0, opening=True, budget=budget) > even:  # a later window: at least min_frames
            return budget
        return max(budget, (even * self.sustain + context) / self.safety)

    @property
    def shortest(self) -> int:
        """No window or rest after a cut or a moved seam is shorter (a sliver would cost its
        context for almost no audio, and sound different)."""
        return max(2, self.first_frames)

    def cut(self, start: int, size: int, end: int) -> int:
        """Where a window of ``size`` from ``start`` ends: never leaving a sliver before ``end``."""
        stop = min(end, start + size)
        return end if end - stop < self.shortest else stop

    def snap(self, start: int, stop: int, end: int, boundaries: Sequence[int]) -> int:
        """``stop`` moved to a word boundary: the last within ``snap_frames`` before it, else the
        first within ``snap_ahead_frames`` after it, when the window and what is left stay at least
        ``first_frames`` long. A seam between words is inaudible; one inside a word can break it (a
        seam 3 frames into "booking" made Whisper hear "book, hang on", and one 12 frames in, "book
        in"). Later only by a little: a window's compute stays within its budget's safety share."""
        fits = [b for b in boundaries if b - start >= self.shortest and end - b >= self.shortest]
        before = [b for b in fits if stop - self.snap_frames <= b <= stop]
        after = [b for b in fits if stop < b <= stop + self.snap_ahead_frames]
        return before[-1] if before else after[0] if after else stop

    def halves(self, start: int, end: int, boundaries: Sequence[int]) -> tuple[tuple[int, int], ...]:
        """Window ``[start, end)`` as two halves decoded at once (``split_frames``), their seam at the
        word boundary nearest the middle within ``split_reach_frames`` (neither half shorter than
        ``shortest``), else at the middle; or as itself when shorter than ``split_frames``."""
        if not self.split_frames or end - start < max(self.split_frames, 2 * self.shortest):
            return ((start, end),)
        middle = (start + end) // 2
        near = [
            b
            for b in boundaries
            if abs(b - middle) <= self.split_reach_frames and start + self.shortest <= b <= end - self.shortest
        ]
        seam = min(near, key=lambda b: abs(b - middle)) if near else middle
        return (start, seam), (seam, end)

    def after_opening(self, seam_context: int) -> int:
        """The context after the window that opens a reply, whose seam would take ``seam_context``."""
        own = self.opening_context_frames
        return seam_context if own is None else min(seam_context, own)

    def crowding(self) -> WindowPolicy:
        """This policy for a reply that opens crowded (``crowded_frames``): its opening window's end
        moves forward by at most ``crowded_snap_frames``."""
        return replace(self, opening_snap_frames=self.crowded_snap_frames)

    def snap_opening(self, stop: int, end: int, boundaries: Sequence[int]) -> int:
        """The opening window's end ``stop`` moved forward to the first word boundary within
        ``opening_snap_frames`` of it: a seam inside a word, with only ``opening_context_frames``
        after it, can break the word, and the window after a seam between words starts with the
        smaller context. Never back: the opening window's audio is what covers the next one's
        compute."""
        reach = stop + self.opening_snap_frames
        fits = [b for b in boundaries if stop <= b <= reach and end - b >= self.shortest]
        return fits[0] if fits else stop

    def windows(
        self,
        start: int,
        end: int,
        *,
        opening: bool = True,
        budget: Budget | None = None,
        boundaries: Sequence[int] = (),
        opening_frames: int | None = None,
        paired: Callable[[], bool] | None = None,
    ) -> Iterator[tuple[int, int]]:
        """Windows ``[a, b)`` of frames that tile ``[start, end)``; ``budget`` is read just before
        each window is sized (never for the first window of an opening chunk: the listener waits).
        ``boundaries``: frames between words (ascending), where seams go (an opening chunk's first
        window only moves forward, see ``snap_opening``). ``opening_frames``: the first window's
        size (see ``opening``). ``paired()``, read with the budget: whether a window sized now
        would be decoded as two halves at once (then it may be ``2 * max_frames``)."""
        a, size, index = start, 0, 0
        while a < end:
            waiting = index == 0 and opening
            sized = budget() if budget and not waiting else None
            longest = 2 * self.max_frames if paired and self.split_frames and paired() else self.max_frames
            size = self.size(index, size, opening=opening, budget=sized, first=opening_frames, longest=longest)
            b = self.cut(a, size, end)
            if b < end:  # the opening window is sized for the waiting listener: it only moves forward
                b = self.snap_opening(b, end, boundaries) if waiting else self.snap(a, b, end, boundaries)
            yield a, b
            a, index = b, index + 1

    def plan(self, start: int, end: int, *, opening: bool = True) -> list[tuple[int, int]]:
        """The windows without a budget."""
        return list(self.windows(start, end, opening=opening))


@dataclass(frozen=True, slots=True)
class ListenerBudget:
    """The ``Budget`` of one chunk's windows: the frames the decoder can make before its
    listener's buffer (``ahead()`` seconds, None: no listener) runs dry, at the decoder's measured
    seconds a decoded frame (``frame_s()``: over every window, and over those that ran alone).
    While this reply is the decoder's only work (``alone()``), a budget whose window would cost
    more than it plays at the lone speed is raised (``policy.sustained``): on a slowed machine
    such windows shrink the buffer, each one further, and every one after it runs dry is a gap.
    The Stalls experiment's slowed machine (two busy loops a core, 2 cores): 8.5 gaps a long
    reply (15.8 s) against 52 (33.3 s). On a quiet machine every window is sustainable and
    nothing changes. With other sessions taking turns the scheduler has its own rule for a
    buffer run dry."""

    policy: WindowPolicy
    ahead: Callable[[], float | None]
    frame_s: Callable[[], tuple[float, float]]
    alone: Callable[[], bool]

    def __call__(self) -> float | None:
        seconds = self.ahead()
        if seconds is None:
            return None
        every, lone = (max(cost, 1e-6) for cost in self.frame_s())
        if self.policy.sustain and self.alone():
            return self.policy.sustained(seconds / every, lone)
        return seconds / every


def sine_phase(f0: NDArray[np.float32], upto: int, harmonics: NDArray[np.float64], rate: float) -> NDArray[np.float32]:
    """The sine source's phase in cycles, per harmonic, after F0 steps ``[0, upto)``: what the
    decoder's running sum would hold there had it run from the start ([1, 1, harmonics])."""
    steps = f0.reshape(-1)[:upto].astype(np.float64)
    cycles = np.mod(np.mod(steps[:, None] * harmonics[None, :] / rate, 1.0).sum(axis=0), 1.0)
    phase: NDArray[np.float32] = cycles.reshape(1, 1, -1).astype(np.float32)
    return phase


@dataclass(slots=True)
class _Stitcher:
    """Joins window audio: crossfades seams, trims to ``[head, end)`` samples, fades both ends.

    The end is the durations' (the last word's end plus the tail) unless the speech fades out
    before it: in the last window the tail is measured from the last 10 ms frame within
    ``tail_threshold_db`` of the loudest one so far, as the whole-chunk trim does, but never cut
    before ``speech_end`` (the last word's end), so word timestamps stay inside the audio."""

    head: int
    end: int
    crossfade: int
    fade: int
    tail: int = 0
    tail_threshold_db: float = -42.0
    speech_end: int = 0
    held: NDArray[np.float32] | None = None
    peak: float = 0.0

    def add(self, segment: NDArray[np.float32], start: int, last: bool) -> NDArray[np.float32]:
        """``segment`` starts at sample ``start`` (and overlaps the held tail by 2 x crossfade)."""
        segment = segment.astype(np.float32, copy=True)
        if self.held is not None:
            n = len(self.held)
            ramp = np.linspace(0.0, 1.0, n + 2, dtype=np.float32)[1:-1]
            segment[:n] = self.held * (1.0 - ramp) + segment[:n] * ramp
        keep = len(segment) if last else len(segment) - 2 * self.crossfade
        self.held = None if last else segment[keep:]
        out = segment[:keep]
        loudness = _frame_rms(out)
        self.peak = max(self.peak, float(loudness.max(initial=0.0)))
        if last and self.tail and self.peak > 0:
            loud = np.flatnonzero(20 * np.log10(loudness / self.peak + 1e-12) > self.tail_threshold_db)
            if loud.size:
                faded = start + int((loud[-1] + 1) * _RMS_FRAME) + self.tail
                self.end = max(self.head + 1, min(self.end, max(faded, self.speech_end)))
        return self._trim(out, start)

    def _trim(self, out: NDArray[np.float32], start: int) -> NDArray[np.float32]:
        lo, hi = max(start, self.head), max(min(start + len(out), self.end), max(start, self.head))
        piece = out[lo - start : hi - start]
        if self.fade and len(piece):
            positions = np.arange(lo, hi, dtype=np.float64)
            gain = np.minimum((positions - self.head + 1) / self.fade, (self.end - positions) / self.fade)
            piece *= np.clip(gain, 0.0, 1.0).astype(np.float32)
        return piece


_RMS_FRAME = 240
"""10 ms at 24 kHz."""


def _frame_rms(samples: NDArray[np.float32]) -> NDArray[np.float64]:
    count = len(samples) // _RMS_FRAME
    frames = samples[: count * _RMS_FRAME].reshape(count, _RMS_FRAME).astype(np.float64)
    rms: NDArray[np.float64] = np.sqrt(np.mean(frames * frames, axis=1))
    return rms


def decode_windows(
    decode: Decode,
    f0: NDArray[np.float32],
    frames: int,
    *,
    head: int,
    end: int,
    harmonics: NDArray[np.float64],
    rate: float,
    policy: WindowPolicy,
    fade: int = 96,
    opening: bool = True,
    budget: Budget | None = None,
    tail: int = 0,
    tail_threshold_db: float = -42.0,
    speech_end: int = 0,
    boundaries: Sequence[int] = (),
    opening_frames: int | None = None,
    pairs: Pairs | None = None,
) -> Iterator[tuple[NDArray[np.float32], bool]]:
    """The audio of samples ``[head, end)`` of an utterance of ``frames`` frames, window by window
    (with whether it is the last). ``budget`` sizes each window after the first (see ``WindowPolicy``);
    ``boundaries`` are the frames between words, where seams go when they can; ``opening_frames``:
    the first window's size (``WindowPolicy.opening``); ``pairs``: decodes a long window's two
    halves at once when it can (``WindowPolicy.halves``; None: every window in one piece)."""
    first, last = head // FRAME_SAMPLES, min(frames, math.ceil(end / FRAME_SAMPLES))
    stop = max(first + 1, last)
    crossfade = policy.crossfade_samples
    stitch = _Stitcher(head, end, crossfade, fade, tail, tail_threshold_db, speech_end)
    sized_paired = [False]

    def paired() -> bool:  # asked as each window is sized: the answer splits that window
        sized_paired[0] = pairs is not None and pairs.ready()
        return sized_paired[0]

    windows = policy.windows(
        first,
        stop,
        opening=opening,
        budget=budget,
        boundaries=boundaries,
        opening_frames=opening_frames,
        paired=None if pairs is None else paired,
    )
    gaps = frozenset(boundaries)

    def reach(seam: int) -> int:
        return policy.gap_context_frames if seam in gaps else policy.context_frames

    def span(a: int, b: int, opens: bool, waiting: bool) -> Span:
        left = policy.lead_context_frames if opens else reach(a)
        right = policy.context_frames if b == stop else reach(b)
        s, e = max(0, a - left), min(frames, b + (policy.after_opening(right) if waiting else right))
        return s, e, sine_phase(f0, 2 * s, harmonics, rate)

    for index, (a, b) in enumerate(windows):
        parts = policy.halves(a, b, boundaries) if sized_paired[0] else ((a, b),)
        spans = [span(pa, pb, index == 0 and pa == a, index == 0 and opening) for pa, pb in parts]
        audios = pairs.decode(*spans) if pairs is not None and len(spans) == 2 else (decode(*spans[0]),)
        pieces = []
        for (pa, pb), (s, _, _), audio in zip(parts, spans, audios, strict=True):
            lo = (pa - s) * FRAME_SAMPLES - (crossfade if index or pa > a else 0)
            hi = (pb - s) * FRAME_SAMPLES + (0 if pb == stop else crossfade)
            pieces.append(stitch.add(audio[lo:hi], s * FRAME_SAMPLES + lo, pb == stop))
        yield (pieces[0] if len(pieces) == 1 else np.concatenate(pieces)), b == stop


def word_times(part: Phonemized, durations: Any, head: int, length: int) -> list[WordTimestamp]:
    """Word start/end in seconds from per-token frame counts (pads included), after trimming."""
    edges = np.concatenate([[0], np.cumsum(durations)]) * FRAME_SAMPLES
    times = []
    for word in part.words:
        start = (edges[word.first + 1] - head) / SAMPLE_RATE
        end = (edges[word.end + 1] - head) / SAMPLE_RATE
        limit = length / SAMPLE_RATE
        times.append(WordTimestamp(word.text, float(np.clip(start, 0, limit)), float(np.clip(end, 0, limit))))
    return times


def speech_span(part: Phonemized, durations: Any) -> tuple[int, int]:
    """First and one-past-last sample of the words (the padding and silence around them excluded)."""
    edges = np.concatenate([[0], np.cumsum(durations)]) * FRAME_SAMPLES
    if not part.words:
        return int(edges[1]), int(edges[-2])
    return int(edges[part.words[0].first + 1]), int(edges[part.words[-1].end + 1])
