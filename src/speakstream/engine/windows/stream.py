"""One chunk spoken window by window: read its text once, then each step plans the next window for
the load it is handed (``planner``), runs it (``runner``) and makes it a piece of the chunk's audio.

A chunk longer than the model's 510 tokens is several utterances (phoneme windows), spoken one
after another with a short pause; its word timestamps come with the first piece, whose head is cut
to its speech (``trim_onset``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.cancel import CancelToken, WorkClock
from speakstream.engine.phonemes.phonemizer import Phonemized
from speakstream.engine.runtime.speed import Speed
from speakstream.engine.windows.edges import EdgePolicy, trim_onset
from speakstream.engine.windows.front import WINDOW_PAUSE_S, Utterance, timeline, word_boundaries
from speakstream.engine.windows.planner import Chunk, Situation, WindowPlan, held_once_made, plan_window
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.engine.windows.runner import Runner
from speakstream.types import SAMPLE_RATE, Attribute, AudioPiece, Load, Step, SynthesisTimings, WordTimestamp

PAUSE = int(WINDOW_PAUSE_S * SAMPLE_RATE)


class UtteranceWindows:
    """The windows of one utterance, each planned for the load it is handed and run in turn."""

    def __init__(
        self,
        runner: Runner,
        policy: WindowPolicy,
        u: Utterance,
        *,
        opens_reply: bool,
        edges: EdgePolicy,
        boundaries: tuple[int, ...] | None = None,
    ) -> None:
        """``boundaries``: the frames between words, where seams go (default: from ``u``'s words)."""
        self.runner, self.policy, self.utterance = runner, policy, u
        self.chunk = Chunk(
            u.first_frame,
            u.stop_frame,
            u.frames,
            word_boundaries(u) if boundaries is None else boundaries,
            opens_reply=opens_reply,
            silent_s=edges.onset_reach_s,
        )
        self._stitch = runner.stitcher(u, policy.seams.crossfade_samples, edges)
        self.index, self.start, self.previous = 0, self.chunk.first, 0

    @property
    def done(self) -> bool:
        return self.start >= self.chunk.stop

    def next(
        self, load: Load, cancel: CancelToken | None, *, speed: Speed | None = None
    ) -> tuple[NDArray[np.float32], WindowPlan]:
        """The next window's audio (stitched onto the ones before) and its plan."""
        now = self.situation(load, speed)
        plan = plan_window(self.policy, self.chunk, self.index, self.start, self.previous, now)
        samples = self.runner.run(self.utterance, plan, self._stitch, cancel, alone=now.alone, shared=load.sharing)
        self.index, self.start, self.previous = self.index + 1, plan.end, plan.planned
        return samples, plan

    def held_s(self, plan: WindowPlan, load: Load) -> float:
        """``planner.held_once_made`` for the window ``plan`` this made last."""
        return held_once_made(self.policy, self.chunk, plan, self.index, self.situation(load))

    def situation(self, load: Load, speed: Speed | None = None) -> Situation:
        """What the planner reads now: the measured speed (or ``speed``), ``load``, the engine's cores."""
        model, now = self.runner.model, time.perf_counter()
        return Situation(
            speed=speed or self.runner.speed.reading(),
            load=load,
            buffered_s=load.buffered_at(now),
            others_buffered_s=load.others_at(now),
            running=model.cores.running,
            pair_free=model.pairs_possible and len(model.decoder.free) >= 2,
            crowded_decoder=model.crowded is not None,
        )


class ChunkStream:
    """A ``Stream`` of one chunk on the windowed model."""

    def __init__(
        self,
        *,
        text: str,
        pace: float,
        opening: bool,
        cancel: CancelToken | None,
        read: Callable[[], list[Phonemized]],
        style: Callable[[int], NDArray[np.float32]],
        runner: Runner,
        policy: WindowPolicy,
        edges: EdgePolicy,
    ) -> None:
        """``read``: the chunk's phoneme windows (raises for text it cannot speak); ``style``: the
        voice's style for a phoneme window of so many tokens; ``pace``: the speech's speed."""
        self.text, self.pace, self.opening, self.cancel = text, pace, opening, cancel
        self._read, self._style, self.runner = read, style, runner
        self.policy, self.edges = policy, edges
        self.utterances: list[Utterance] = []
        self.plans: list[WindowPlan] = []
        """Every window planned so far, with its reason."""
        self._clock: WorkClock | None = None
        self._phonemize_s = 0.0
        self._at = 0
        """The utterance whose windows come next."""
        self._windows: UtteranceWindows | None = None
        self._index, self._position, self._total = 0, 0, 0
        self._words: tuple[WordTimestamp, ...] = ()
        self._steps: list[Step] = []
        """The stages since the last piece, for its ``steps``."""
        self._last: tuple[UtteranceWindows, WindowPlan] | None = None
        """The windows that made the piece made last, and its plan."""

    @property
    def prepared(self) -> bool:
        return self._clock is not None

    def held_s(self, load: Load) -> float:
        """How long to hold the piece made last (an opening's start-up buffer), for ``load`` now."""
        return 0.0 if self._last is None else self._last[0].held_s(self._last[1], load)

    def prepare(self, load: Load) -> None:
        """Phonemes, then the front of each phoneme window (on a narrow copy when ``load`` shares)."""
        if self.prepared:
            return
        started = time.perf_counter()
        parts = self._read()
        self._phonemize_s = time.perf_counter() - started
        tokens = sum(len(part.tokens) for part in parts)
        self._steps.append(Step("phonemes", started, started + self._phonemize_s, (("tokens", tokens),)))
        self._clock = WorkClock(self.cancel)
        last = len(parts) - 1
        for i, part in enumerate(parts):
            begun = time.perf_counter()
            u = self.runner.front(
                part,
                self._style(len(part.tokens)),
                self.pace,
                self.text if i == last else ".",
                self.cancel,
                edges=self.edges,
                shared=load.sharing,
            )
            self.utterances.append(u)
            attributes = (("tokens", len(part.tokens)), ("frames", u.frames), ("shared", load.sharing))
            self._steps.append(Step("front", begun, time.perf_counter(), attributes))
        self._windows = self._begin(0)

    def step(self, load: Load, *, speed: Speed | None = None) -> AudioPiece | None:
        """The next piece, its window planned for ``load`` at the measured speed (``speed``: this
        one instead, to pin what the planner reads); None once the chunk is done."""
        self.prepare(load)
        windows, clock = self._windows, self._clock
        if windows is None or clock is None:
            return None
        if self._index:
            clock.restart()  # a piece's time is its own, not the wait for its turn
        begun = time.perf_counter()
        samples, plan = windows.next(load, self.cancel, speed=speed)
        self.plans.append(plan)
        self._last = windows, plan
        self._steps.append(Step("window", begun, time.perf_counter(), window_attributes(plan)))
        piece = self._piece(samples, self._at, plan.last, clock)
        if windows.done:
            self._at += 1
            self._windows = self._begin(self._at)
        return piece

    def pieces(self, load: Load | None = None, *, speed: Speed | None = None) -> list[AudioPiece]:
        """Every piece, each planned for ``load`` taken anew (default: alone, no listener known)."""
        made = []
        while (piece := self.step(replace(load or Load(), taken_at=time.perf_counter()), speed=speed)) is not None:
            made.append(piece)
        return made

    def _begin(self, i: int) -> UtteranceWindows | None:
        """The windows of utterance ``i`` (None: there is none: the chunk is done)."""
        if i >= len(self.utterances):
            return None
        u = self.utterances[i]
        return UtteranceWindows(self.runner, self.policy, u, opens_reply=self.opening and i == 0, edges=self.edges)

    def _piece(self, samples: NDArray[np.float32], i: int, final: bool, clock: WorkClock) -> AudioPiece:
        """``samples`` as the chunk's next piece: the first cut to its speech, with the words."""
        if self._index == 0:
            u = self.utterances[0]
            samples, cut = trim_onset(samples, SAMPLE_RATE, self.edges, u.onset - u.head)
            self._words, self._total = timeline(self.utterances, PAUSE, cut)
        last_utterance = i == len(self.utterances) - 1
        if final and not last_utterance:
            samples = np.concatenate([samples, np.zeros(PAUSE, np.float32)])
        first = self._index == 0
        piece = AudioPiece(
            samples,
            self._index,
            self._position / SAMPLE_RATE,
            self._total / SAMPLE_RATE,
            self._words if first else (),
            final and last_utterance,
            SynthesisTimings(self._phonemize_s if first else 0.0, clock.seconds()),
            steps=tuple(self._steps),
        )
        self._steps.clear()
        self._index, self._position = self._index + 1, self._position + len(samples)
        return piece


def window_attributes(plan: WindowPlan) -> tuple[tuple[str, Attribute], ...]:
    """What a trace says of a window: its frames, size as planned, decoder, halves and reason."""
    return (
        ("frames", plan.frames),
        ("planned_frames", plan.planned),
        ("decoder", plan.decoder),
        ("halves", len(plan.decodes)),
        ("reason", plan.reason),
    )
