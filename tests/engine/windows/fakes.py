"""The windowed model without the model: the real planner, runner and stitcher on a fake decoder
whose audio depends only on the absolute sample position, so any window plan must give exactly the
audio of one whole window."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.model.feeds import F0, FEATURES, PHASE
from speakstream.engine.runtime.cores import Cores
from speakstream.engine.runtime.graphs import SplitModel
from speakstream.engine.runtime.speed import Speed, SpeedEstimator
from speakstream.engine.windows.edges import EdgePolicy
from speakstream.engine.windows.front import Utterance
from speakstream.engine.windows.planner import FRAME_SAMPLES, WindowPlan
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.engine.windows.runner import Runner
from speakstream.engine.windows.stitch import sine_phase
from speakstream.engine.windows.stream import UtteranceWindows
from speakstream.types import Load

HARMONICS = np.arange(1.0, 10.0)
EDGES = EdgePolicy(fade_s=0.004, onset_reach_s=0.0)
"""A 96-sample fade at each end, and no silence to cut before the speech."""
RATE = 24_000.0


def position_audio(start: int, stop: int) -> NDArray[np.float32]:
    """What the fake decoder says for frames ``[start, stop)``: a function of the sample's position."""
    positions = np.arange(start * FRAME_SAMPLES, stop * FRAME_SAMPLES, dtype=np.float64)
    return (0.5 * np.sin(positions / 37.0)).astype(np.float32)


@dataclass
class FakeDecoder:
    """Stands in for an ONNX Runtime decoder session: reads its first frame from the features (the
    fake front writes each frame's index there), checks the phase it is given, and records spans."""

    f0: NDArray[np.float32]
    spans: list[tuple[int, int]] = field(default_factory=list)
    on_run: Callable[[int, int], None] | None = None

    def run(self, outputs: Any, feed: dict[str, Any], options: Any = None) -> list[NDArray[np.float32]]:
        frames = feed[FEATURES]
        start, stop = int(frames[0, 0, 0]), int(frames[0, 0, 0]) + frames.shape[2]
        np.testing.assert_allclose(feed[PHASE], sine_phase(self.f0, 2 * start, HARMONICS, RATE))
        assert feed[F0].shape[1] == 2 * (stop - start)
        self.spans.append((start, stop))
        if self.on_run is not None:
            self.on_run(start, stop)
        return [position_audio(start, stop)]


def utterance(frames: int, head: int, end: int) -> Utterance:
    """An utterance of ``frames`` frames whose samples ``[head, end)`` are kept (no tail trim)."""
    features = np.arange(frames, dtype=np.float32).reshape(1, 1, frames)
    f0 = np.linspace(100.0, 220.0, 2 * frames, dtype=np.float32).reshape(1, -1)
    empty = np.zeros(0, np.float32)
    return Utterance(features, f0, f0, empty, frames, head, end, (), 0, 0, head)


@dataclass
class Harness:
    """A runner over fake decoder copies (``narrow`` of them beside the wide one)."""

    u: Utterance
    narrow: int = 0
    decoders: list[FakeDecoder] = field(default_factory=list)
    runner: Runner = field(init=False)

    def __post_init__(self) -> None:
        cores = Cores()
        self.decoders = [FakeDecoder(self.u.f0) for _ in range(1 + self.narrow)]
        copies = cores.copies(self.decoders[0], self.decoders[1:])
        model = SplitModel(
            cores, cores.copies(None), copies, harmonics=HARMONICS, rate=RATE, providers=["CPUExecutionProvider"]
        )
        self.runner = Runner(model, SpeedEstimator(0.01))

    @property
    def spans(self) -> list[tuple[int, int]]:
        """Every span decoded, on any copy, in order of ``span.start`` within a window."""
        return sorted((s for d in self.decoders for s in d.spans), key=lambda s: s[0])

    def decode(
        self,
        policy: WindowPolicy,
        *,
        opening: bool = True,
        loads: Callable[[], Load] = Load,
        boundaries: tuple[int, ...] = (),
        speed: Speed | None = None,
    ) -> list[tuple[NDArray[np.float32], WindowPlan]]:
        """Every window's audio and plan, each planned for ``loads()``."""
        windows = UtteranceWindows(self.runner, policy, self.u, opens_reply=opening, edges=EDGES, boundaries=boundaries)
        made = []
        while not windows.done:
            made.append(windows.next(loads(), None, speed=speed))
        return made


def budgets(frames: list[float]) -> Callable[[], Load]:
    """Loads whose listener's buffer gives these budgets, in frames at ``UNIT`` (none known after)."""
    given = iter(frames)
    return lambda: Load(buffered_s=next(given, None))


UNIT = Speed(1.0, 1.0)
"""A decoder at one second a frame: a buffer of n seconds is a budget of n frames."""


def without_sustain(policy: WindowPolicy) -> WindowPolicy:
    """``policy`` with budgets as given (the sustain rule, tested on its own, off)."""
    return replace(policy, budget=replace(policy.budget, sustain=0.0))
