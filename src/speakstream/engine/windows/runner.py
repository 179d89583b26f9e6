"""Runs what the planner decided on the model's copies, and nothing else: the front of a phoneme
window, and a window plan (one decode, or two halves at once) with the sine phase carried into it,
stitched onto the windows before it. It reports each window's time to the speed estimator. With a
``Batcher``, each window is grown to one of a few lengths (``ends.sized``) and decoded in a batch
with other sessions' windows of that length.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.cancel import CancelToken
from speakstream.engine.model.feeds import decoder_feed, front_feed
from speakstream.engine.phonemes.phonemizer import Phonemized
from speakstream.engine.runtime import cores
from speakstream.engine.runtime.batcher import Batcher
from speakstream.engine.runtime.graphs import SplitModel
from speakstream.engine.runtime.speed import SpeedEstimator
from speakstream.engine.windows.edges import EdgePolicy
from speakstream.engine.windows.ends import sized
from speakstream.engine.windows.front import Utterance, utterance
from speakstream.engine.windows.planner import FRAME_SAMPLES, Decode, WindowPlan
from speakstream.engine.windows.stitch import Stitcher, sine_phase
from speakstream.types import SAMPLE_RATE


class Runner:
    """Executes fronts and window plans on a ``SplitModel``."""

    def __init__(self, model: SplitModel, speed: SpeedEstimator, batcher: Batcher | None = None) -> None:
        self.model, self.speed, self.batcher = model, speed, batcher
        self.paired_windows = 0
        """Windows whose two halves were decoded at once, counted."""

    def front(
        self,
        part: Phonemized,
        style: NDArray[np.float32],
        pace: float,
        text: str,
        cancel: CancelToken | None,
        *,
        edges: EdgePolicy,
        shared: bool = False,
    ) -> Utterance:
        """The front of ``part`` spoken at ``pace``, the end of ``text``'s speech, its audio to be
        kept within ``edges``."""
        feed = front_feed(part.tokens, style, pace)
        outputs, _ = cores.run(self.model.front, None, feed, cancel, shared=shared)
        return utterance(outputs, part, style, text, edges)

    @staticmethod
    def stitcher(u: Utterance, crossfade: int, edges: EdgePolicy) -> Stitcher:
        """What joins ``u``'s windows, ``crossfade`` samples overlapping at each seam."""
        fade = int(edges.fade_s * SAMPLE_RATE)
        return Stitcher(u.head, u.end, crossfade, fade, u.tail, edges.threshold_db, u.speech_end)

    def run(
        self,
        u: Utterance,
        plan: WindowPlan,
        stitch: Stitcher,
        cancel: CancelToken | None,
        *,
        alone: bool,
        shared: bool,
    ) -> NDArray[np.float32]:
        """The audio ``plan`` adds to ``u``'s stream. ``alone``: nothing else ran as it was planned;
        ``shared``: the scheduler runs other windows beside it. The utterance's last window gives
        the activation memory back when it ends (``weights.shrink_after``)."""
        audios: tuple[NDArray[np.float32], ...]
        if self.batcher is not None:
            plan = replace(plan, decodes=tuple(self._sized(u, run) for run in plan.decodes))
            audios = tuple(self._batched(u, run, cancel) for run in plan.decodes)
        elif len(plan.decodes) == 2:
            audios = self._pair(u, plan.decodes, cancel, shared=shared, shrink=plan.last)
        else:
            run, last = plan.decodes[0], plan.last
            audios = (self.decode(u, run, cancel, decoder=plan.decoder, alone=alone, shared=shared, shrink=last),)
        crossfade, stop = stitch.crossfade, u.stop_frame
        pieces = []
        for run, audio in zip(plan.decodes, audios, strict=True):
            lo = (run.keep_start - run.start) * FRAME_SAMPLES - (crossfade if run.keep_start > u.first_frame else 0)
            hi = (run.keep_end - run.start) * FRAME_SAMPLES + (0 if run.keep_end == stop else crossfade)
            pieces.append(stitch.add(audio[lo:hi], run.start * FRAME_SAMPLES + lo, run.keep_end == stop))
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)

    def decode(
        self,
        u: Utterance,
        run: Decode,
        cancel: CancelToken | None,
        *,
        decoder: str = "main",
        alone: bool = True,
        shared: bool = False,
        shrink: bool = False,
    ) -> NDArray[np.float32]:
        """Frames ``[run.start, run.end)`` of ``u`` on ``decoder``'s copies; a window of the main
        decoder is measured (another decoder's speed is not its own)."""
        expected_s = self.speed.reading().expected_s(run.frames)
        copies = self.model.decoders(decoder)
        feed = self.feed(u, run)
        (audio,), seconds = cores.run(copies, ["audio"], feed, cancel, expected_s, shared=shared, shrink=shrink)
        if copies is self.model.decoder:
            still = alone and self.model.cores.running == 0 and not shared
            self.speed.measured(seconds, run.frames, alone=alone, still_alone=still)
        return np.asarray(audio, dtype=np.float32).ravel()

    @staticmethod
    def _sized(u: Utterance, run: Decode) -> Decode:
        """``run`` grown to a batch length (``ends.sized``), keeping what it keeps."""
        start, end = sized(run.start, run.end, u.frames)
        return replace(run, start=start, end=end)

    def _batched(self, u: Utterance, run: Decode, cancel: CancelToken | None) -> NDArray[np.float32]:
        """``run`` decoded in a batch with other sessions' windows of its length; measured when it
        ran alone (a batch's time is not one window's)."""
        assert self.batcher is not None
        audio, seconds, batch = self.batcher.decode(self.feed(u, run), run.frames, cancel)
        if batch == 1:
            self.speed.measured(seconds, run.frames, alone=True, still_alone=self.model.cores.running == 0)
        return audio

    def _pair(
        self, u: Utterance, decodes: tuple[Decode, ...], cancel: CancelToken | None, *, shared: bool, shrink: bool
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Two decodes run at once on two narrow copies when nothing else runs, else one after the
        other. Neither is measured: the speeds size windows by one inference's, which a pair beats."""
        first, second = decodes
        expected_s = self.speed.reading().expected_s(max(first.frames, second.frames), narrow=True)
        feeds = (self.feed(u, first), self.feed(u, second))
        ((one,), (two,)), seconds = cores.run_pair(
            self.model.decoder, ["audio"], feeds, cancel, expected_s, shared=shared, shrink=shrink
        )
        self.paired_windows += seconds is not None
        return np.asarray(one, dtype=np.float32).ravel(), np.asarray(two, dtype=np.float32).ravel()

    def feed(self, u: Utterance, run: Decode) -> dict[str, Any]:
        """The decoder's inputs for ``run`` of ``u``, its sine source at the phase it has there."""
        phase = sine_phase(u.f0, 2 * run.start, self.model.harmonics, self.model.rate)
        return decoder_feed((u.features, u.f0, u.energy), u.style, phase, run.start, run.end)
