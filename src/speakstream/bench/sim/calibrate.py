"""The cost model measured on this machine's real engine: each kind of inference timed alone (the
decoder's copies over several window sizes, fitted to a fixed cost plus a cost a frame), two narrow
inferences at once, the crowded decoder, the front per character, and frames per character."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from speakstream.bench.experiments.streaming import FORTY_WORDS, utterance
from speakstream.bench.sim.cost import CostModel
from speakstream.data import bench_text
from speakstream.engine.config import cores
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.windows.front import Utterance
from speakstream.engine.windows.planner import Decode
from speakstream.engine.windows.stream import ChunkStream
from speakstream.types import Load

SIZES = (20, 60, 120, 200)
"""Decoded frames of the windows timed (context included)."""
RUNS = 5
VOICE = "af_heart"


def calibrate(engine: KokoroEngine | None = None, runs: int = RUNS) -> CostModel:
    """Time the engine's inferences (median of ``runs`` each) and fit the cost model."""
    engine = engine or _loaded()
    if engine.runner is None:
        raise RuntimeError("the engine runs a whole graph (graph != fast): nothing to calibrate")
    model = engine.runner.model
    u = utterance(engine, FORTY_WORDS, VOICE)
    wide = _fit([(f, _median(runs, _decode(engine, model.decoder.wide, u, f))) for f in SIZES])
    narrow_copy = model.decoder.every[1] if len(model.decoder.every) > 1 else model.decoder.wide
    narrow = _fit([(f, _median(runs, _decode(engine, narrow_copy, u, f))) for f in SIZES])
    alone = _median(runs, _decode(engine, narrow_copy, u, 120))
    both = _median(runs, _together(engine, model.decoder.every[1:3], u, 120)) if len(model.decoder.every) > 2 else alone
    crowded = model.crowded.wide if model.crowded is not None else model.decoder.wide
    ratio = _median(runs, _decode(engine, crowded, u, 120)) / _median(runs, _decode(engine, model.decoder.wide, u, 120))
    front = _front(engine, runs)
    fitted = CostModel(
        frame_wide_s=wide[1],
        frame_narrow_s=narrow[1],
        crowded_ratio=ratio,
        window_s=max(0.0, wide[0]),
        front_s=max(0.0, front[0]),
        front_char_s=front[1],
        frames_per_char=_frames_per_char(engine),
        contention=max(0.0, both / alone - 1.0),
        cores=cores(engine.config),
    )
    return _with_opening(engine, _with_overheads(engine, fitted))


def _with_overheads(engine: KokoroEngine, cost: CostModel) -> CostModel:
    """``cost`` with what a chunk's preparation and each window take around their inferences
    (feeds, the sine source, stitching, trimming: Python, not the runtime) added: the median of
    what the engine's own streams took over what the fitted model says, over the bench sentences."""
    fronts, windows = [], []
    load = Load(replies=2)  # a window alone on the wide copy, never two halves at once
    for text in [*bench_text().split(". "), FORTY_WORDS] * 2:
        stream = engine.stream(text, voice=VOICE)
        assert isinstance(stream, ChunkStream)
        started = time.perf_counter()
        stream.prepare(load)
        fronts.append(time.perf_counter() - started - cost.front_cost_s(len(text), narrow=False))
        while True:
            started = time.perf_counter()
            if stream.step(replace(load, taken_at=started)) is None:
                break
            frames = sum(span.frames for span in stream.plans[-1].decodes)
            windows.append(time.perf_counter() - started - cost.decode_s(frames, narrow=False))
    front_s = max(0.0, cost.front_s + statistics.median(fronts))
    return replace(cost, front_s=front_s, window_s=max(0.0, cost.window_s + statistics.median(windows)))


def _with_opening(engine: KokoroEngine, cost: CostModel, runs: int = 3) -> CostModel:
    """``cost`` with ``opening_s``: one reply alone through the real scheduler, its first audio
    less the simulated one's (the median of ``runs``)."""
    from speakstream.bench.sim.burst import Burst, run_burst, simulate_burst

    bare = replace(cost, opening_s=0.0)
    simulated = simulate_burst(bare, Burst(1)).first_audio_s()[0]
    real = statistics.median(asyncio.run(run_burst(engine, Burst(1))).first_audio_s()[0] for _ in range(runs))
    return replace(cost, opening_s=max(0.0, real - simulated))


def _loaded() -> KokoroEngine:
    engine = KokoroEngine()
    engine.warm(VOICE)
    return engine


def _decode(engine: KokoroEngine, copy: Any, u: Utterance, frames: int) -> Callable[[], None]:
    assert engine.runner is not None
    feed = engine.runner.feed(u, Decode(0, frames, 0, frames))
    return lambda: copy.run(["audio"], feed)


def _together(engine: KokoroEngine, copies: Any, u: Utterance, frames: int) -> Callable[[], None]:
    """Both copies decoding ``frames`` at once; the time is the slower's."""
    runs = [_decode(engine, copy, u, frames) for copy in copies]

    def both() -> None:
        threads = [threading.Thread(target=run) for run in runs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return both


def _median(runs: int, work: Callable[[], None]) -> float:
    work()  # the first run of a size allocates
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(intercept, slope) of seconds against frames, least squares."""
    slope, intercept = np.polyfit([p[0] for p in points], [p[1] for p in points], 1)
    return float(intercept), float(slope)


def _front(engine: KokoroEngine, runs: int) -> tuple[float, float]:
    """Phonemes and front, seconds against characters, over the bench reply's sentences."""
    assert engine.runner is not None
    runner, speaks = engine.runner, engine.check_voice(VOICE).speaks
    points = []
    for text in [*bench_text().split(". "), FORTY_WORDS]:

        def read(text: str = text) -> None:
            part = engine.phoneme_windows(text, speaks)[0]
            runner.front(part, engine.voice_bank.style(VOICE, len(part.tokens)), 1.0, text, None, edges=engine.edges)

        points.append((len(text), _median(runs, read)))
    return _fit([(int(c), s) for c, s in points])


def _frames_per_char(engine: KokoroEngine) -> float:
    texts = [*bench_text().split(". "), FORTY_WORDS]
    frames = sum(utterance(engine, text, VOICE).frames for text in texts)
    return frames / sum(len(text) for text in texts)
