"""The Kokoro-82M engine on ONNX Runtime (CPU here; CUDA automatically where present).

Text -> phonemes (``phonemes``) -> the model's front -> decoder windows -> audio (``windows``). The
``fast`` graph is decoded in windows, each planned for the load the scheduler hands over; the
``timed`` and ``original`` graphs are run whole, one inference per phoneme window.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.base import WARM_TEXT, Stream, VoiceBankEngine, WholeChunk, pieces
from speakstream.engine.cancel import CancelToken, WorkClock
from speakstream.engine.config import (
    EngineConfig,
    cores,
    engine_lanes,
    pick_crowded_decoder,
    pick_decoder,
    pick_providers,
    session_options,
    weights_caches,
)
from speakstream.engine.model.assets import Assets, locate
from speakstream.engine.model.feeds import front_feed
from speakstream.engine.model.weights import Placement
from speakstream.engine.phonemes.languages import Language, parse_language
from speakstream.engine.phonemes.normalize import normalize
from speakstream.engine.phonemes.phonemizer import Phonemized, Phonemizer, Word, vocab, windows
from speakstream.engine.runtime.batcher import Batcher
from speakstream.engine.runtime.cores import run as run_graph
from speakstream.engine.runtime.graphs import UNSHARED, SplitModel
from speakstream.engine.runtime.speed import CPU_GUESS_S, GPU_GUESS_S, SpeedEstimator
from speakstream.engine.voices import VoiceBank
from speakstream.engine.windows.edges import EdgePolicy, trim_edges
from speakstream.engine.windows.front import WINDOW_PAUSE_S, word_times
from speakstream.engine.windows.planner import throughput
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.engine.windows.runner import Runner
from speakstream.engine.windows.stream import ChunkStream
from speakstream.errors import InvalidInput
from speakstream.types import SAMPLE_RATE, AudioChunk, AudioPiece, Step, SynthesisTimings, WordTimestamp, join_pieces

WARM_PHONEMES = "ɹˈɛdi, æt jʊɹ sˈɜɹvəs."
"""What the copies are warmed on ("Ready, at your service."), as phonemes: the G2P may still be loading."""
WARM_TOKENS = tuple(vocab()[c] for c in WARM_PHONEMES)
WARM_SPOKEN = Phonemized("ɹˈɛdi.", tuple(vocab()[c] for c in "ɹˈɛdi."), (Word(WARM_TEXT, 0, 6),))
"""``WARM_TEXT`` as the G2P reads it, so the warm-up need not wait for the G2P."""
log = logging.getLogger("speakstream.engine")


class KokoroEngine(VoiceBankEngine):
    """Kokoro-82M: text -> 24 kHz mono speech with word timestamps from the model's durations."""

    sample_rate = SAMPLE_RATE

    def __init__(self, config: EngineConfig | None = None, *, assets: Assets | None = None) -> None:
        import onnxruntime as ort

        self.config = config or EngineConfig()
        self.assets = assets or locate(self.config.model_dir)
        self.voice_bank = VoiceBank.from_dir(self.assets.voices_dir)
        self.phonemizer = Phonemizer()
        self._languages = [parse_language(language) for language in self.config.languages]
        self._g2p = _in_background(self._load_languages)
        """The G2P, loading beside the model's sessions from the start (the longest part of a start)."""

        def options() -> Any:
            return session_options(cores(self.config), self.config.inter_op_threads, self.config.spin_threads)

        providers = pick_providers(self.config.providers)
        self.lanes = engine_lanes(self.config, providers)
        self.runner: Runner | None = None
        """Runs the ``fast`` graph's windows (None: a whole graph)."""
        self.decoder: str | None = None
        """The decoder part in use (``EngineConfig.decoder`` resolved), None for a whole graph."""
        if self.config.graph == "fast":
            split, batcher = self._split_model(options, providers)
            speed = SpeedEstimator(CPU_GUESS_S if split.on_cpu else GPU_GUESS_S)
            self.runner = Runner(split, speed, batcher)
            self.providers = split.providers
        else:
            graph = str(self.assets.graph(self.config.graph))
            self.session = ort.InferenceSession(graph, options(), providers=providers)
            self.providers = self.session.get_providers()
            self._has_durations = len(self.session.get_outputs()) > 1
        self.device = "cuda" if "CUDAExecutionProvider" in self.providers else "cpu"

    def _split_model(self, options: Callable[[], Any], providers: list[str]) -> tuple[SplitModel, Batcher | None]:
        """The front and the decoder, and the batcher when windows are batched (``EngineConfig.batch``):
        then the ``batched`` decoder (made now if missing), one copy, since the batch, not narrow
        copies, is what runs many windows at once, and its weights not shared."""
        if self.config.batch > 1:
            from speakstream.engine.model.batch import batched_decoder

            self.decoder = "batched"
            batched_decoder(self.assets)
            split = SplitModel.load(self.assets, options, providers, decoder="batched", share_weights=False)
            self.weights = split.placement.source
            return split, Batcher(partial(_decode, split), self.config.batch)
        self.decoder = pick_decoder(self.config.decoder, providers)
        split = SplitModel.load(
            self.assets,
            options,
            providers,
            narrow=self._narrow(providers),
            decoder=self.decoder,
            crowded_decoder=pick_crowded_decoder(self.config.crowded_decoder, self.decoder),
            share_weights=self.config.share_weights,
            caches=weights_caches(self.config),
        )
        self.weights = split.placement.source
        _log_placement(split.placement)
        return split, None

    def _narrow(self, providers: list[str]) -> tuple[Callable[[], Any], int] | None:
        """Options for a narrow copy (an equal share of the cores each: one thread on 2 cores),
        and how many (None: no copies)."""
        if self.lanes < 2 or providers[0] != "CPUExecutionProvider":
            return None
        threads = max(1, cores(self.config) // self.lanes)
        return (lambda: session_options(threads, 1, spin=False)), self.lanes

    @property
    def policy(self) -> WindowPolicy:
        """How its streams size their windows (``EngineConfig.windows``)."""
        return self.config.windows

    @property
    def edges(self) -> EdgePolicy:
        """Where its chunks start and end (``EngineConfig.edges``)."""
        return self.config.edges

    def configured(self, windows: WindowPolicy | None = None, edges: EdgePolicy | None = None) -> KokoroEngine:
        """This engine (its sessions, voices and G2P shared, nothing loaded again) under a config
        built with ``dataclasses.replace``: its windows sized by ``windows``, its chunks' edges cut
        by ``edges`` (None: as here). An experiment's arm; this engine is left as it is."""
        variant = copy.copy(self)
        variant.config = dataclasses.replace(
            self.config, windows=windows or self.config.windows, edges=edges or self.config.edges
        )
        return variant

    def synthesize(
        self, text: str, *, voice: str = "af_heart", speed: float = 1.0, cancel: CancelToken | None = None
    ) -> AudioChunk:
        """The whole chunk: the join of ``stream``, decoded in one window (no context recomputed)."""
        text, speed, _ = self.checked(text, voice, speed)
        if self.runner is None:
            return join_pieces(text, [self._whole_piece(text, voice, speed, cancel)])
        stream = self._windows(text, voice, speed, cancel, False, WindowPolicy.whole())
        return join_pieces(text, list(pieces(stream)))

    def warm(self, voice: str = "af_heart") -> None:
        """Ready to serve at full speed: every copy of every part run on an opening (the first
        burst of replies after start-up runs on the narrow copies and the crowded decoder), then a
        reply on the wide copies, which measures the decoder's speed (two without the copies'
        runs: the first allocates), all on fixed phonemes while the G2P loads beside them."""
        if self.runner is None:
            self._g2p.result()
            for _ in range(2):
                self.synthesize(WARM_TEXT, voice=voice)
            return
        shared = self.runner.model.weights is not None
        runs = self.config.warm_runs if self.config.warm_runs is not None else (0 if shared else 1)
        if runs:
            style = self.voice_bank.style(voice, len(WARM_TOKENS))
            self.runner.model.warm(WARM_TOKENS, style, runs)
        for _ in range(1 if shared or self.runner.model.warmed else 2):
            for _ in pieces(self._spoken(self.runner, WARM_SPOKEN, voice)):
                pass
        self._g2p.result()

    def _spoken(self, runner: Runner, phonemized: Phonemized, voice: str) -> ChunkStream:
        """A stream of given phonemes, decoded whole, as ``synthesize`` decodes (no G2P)."""
        return ChunkStream(
            text=WARM_TEXT,
            pace=1.0,
            opening=False,
            cancel=None,
            read=lambda: [phonemized],
            style=partial(self.voice_bank.style, voice),
            runner=runner,
            policy=WindowPolicy.whole(),
            edges=self.config.edges,
        )

    def _load_languages(self) -> None:
        """English's G2P (every language reads English words with it) and the configured ones."""
        self.phonemizer.load()
        for language in self._languages:
            self.phonemizer.load(language)

    def throughput(self) -> float:
        """From the decoder's measured speed where its lanes run (``planner.throughput``)."""
        if self.runner is None:
            return math.inf
        return throughput(self.config.windows, self.runner.speed.reading(), self.lanes)

    def sound_key(self, text: str, *, voice: str, speed: float, normalized: bool = True) -> Hashable:
        """The text the G2P reads (normalised in the voice's language unless ``normalized`` is
        false), the blend, the speed, and what the engine makes it with: its graph and decoders,
        window and edge policies."""
        info = self.check_voice(voice)
        base = self.sound_of(normalize(text, info.speaks) if normalized else text, info, voice, speed)
        model = (self.config.graph, self.decoder, self.config.crowded_decoder, self.config.windows, self.config.edges)
        return (base, model)

    def stream_of(
        self, text: str, voice: str, speed: float, cancel: CancelToken | None, opening: bool, normalized: bool = True
    ) -> Stream:
        """A windowed stream on the ``fast`` graph, else the chunk made whole by one inference per part."""
        if self.runner is None:
            return WholeChunk(lambda: iter([self._whole_piece(text, voice, speed, cancel, normalized)]))
        return self._windows(text, voice, speed, cancel, opening, self.config.windows, normalized)

    def windowed(
        self, text: str, voice: str = "af_heart", *, opening: bool = True, policy: WindowPolicy | None = None
    ) -> ChunkStream:
        """``stream`` on the ``fast`` graph, as the windowed stream it is (its plans can be read,
        its speed pinned); ``policy``: this stream's instead of the engine's."""
        return self._windows(text, voice, 1.0, None, opening, policy or self.config.windows)

    def _windows(
        self,
        text: str,
        voice: str,
        speed: float,
        cancel: CancelToken | None,
        opening: bool,
        policy: WindowPolicy,
        normalized: bool = True,
    ) -> ChunkStream:
        if self.runner is None:
            raise InvalidInput(f"the {self.config.graph} graph is decoded whole, not in windows", code="invalid_config")
        return ChunkStream(
            text=text,
            pace=speed,
            opening=opening,
            cancel=cancel,
            read=partial(self._read, text, voice, speed, normalized),
            style=partial(self.voice_bank.style, voice),
            runner=self.runner,
            policy=policy,
            edges=self.config.edges,
        )

    def _read(self, text: str, voice: str, speed: float, normalized: bool = True) -> list[Phonemized]:
        """The phoneme windows of a chunk, or the ``InvalidInput`` that says why it cannot be spoken."""
        text, speed, info = self.checked(text, voice, speed)
        parts = self.phoneme_windows(text, info.speaks, normalized=normalized)
        if not parts:
            raise InvalidInput(f"nothing speakable in {text[:40]!r}", code="empty_text")
        return parts

    def phoneme_windows(self, text: str, speaks: Language, *, normalized: bool = True) -> list[Phonemized]:
        """``text`` normalised (unless ``normalized`` is false: the client normalised it) and
        phonemised in ``speaks``, cut into the model's token windows."""
        return windows(self.phonemize(text, speaks, normalized=normalized))

    def _whole_piece(
        self, text: str, voice: str, speed: float, cancel: CancelToken | None, normalized: bool = True
    ) -> AudioPiece:
        """The chunk as one piece, on a whole graph (``timed``, ``original``): one inference per
        phoneme window."""
        started = time.perf_counter()
        parts = self._read(text, voice, speed, normalized)
        phonemize_s, clock = time.perf_counter() - started, WorkClock(cancel)
        audio, words, offset = [], [], 0
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            samples, part_words = self._window(part, voice, speed, text if last else ".", cancel)
            if not last:
                samples = np.concatenate([samples, np.zeros(int(WINDOW_PAUSE_S * SAMPLE_RATE), np.float32)])
            words += [w.shifted(offset / SAMPLE_RATE) for w in part_words]
            audio.append(samples)
            offset += len(samples)
        samples = np.concatenate(audio)
        timings = SynthesisTimings(phonemize_s, clock.seconds())
        steps = (
            Step("phonemes", started, started + phonemize_s, (("tokens", sum(len(p.tokens) for p in parts)),)),
            Step("inference", started + phonemize_s, time.perf_counter(), (("graph", self.config.graph),)),
        )
        return AudioPiece(samples, 0, 0.0, len(samples) / SAMPLE_RATE, tuple(words), True, timings, steps=steps)

    def _window(
        self, part: Phonemized, voice: str, speed: float, text: str, cancel: CancelToken | None
    ) -> tuple[NDArray[np.float32], list[WordTimestamp]]:
        feed = front_feed(part.tokens, self.voice_bank.style(voice, len(part.tokens)), speed)
        outputs, _ = run_graph(self.session, None, feed, cancel)
        audio = np.asarray(outputs[0], dtype=np.float32).ravel()
        samples, head = trim_edges(audio, SAMPLE_RATE, text, self.config.edges)
        if not self._has_durations:
            return samples, []
        return samples, word_times(part, np.asarray(outputs[1]).ravel(), head, len(samples))


def _decode(model: SplitModel, feed: dict[str, Any]) -> NDArray[np.float32]:
    """A batch of windows on ``model``'s decoder: [batch, samples]."""
    (audio,), _ = run_graph(model.decoder, ["audio"], feed, None)
    return np.asarray(audio, dtype=np.float32)


def _log_placement(placement: Placement) -> None:
    """Say where the shared weights came from: a warning when they were not made with the assets
    (a start slower by their making, or in about twice the memory)."""
    if placement.source in ("assets", "cache"):
        log.info("shared weights from %s (%s)", placement.source, placement.detail)
    elif placement.source == "built":
        log.warning("shared weights made at this start for this CPU in %s", placement.detail)
    elif placement is not UNSHARED:
        log.warning("weights not shared (each session its own, about twice the memory): %s", placement.detail)


def _in_background(work: Callable[[], None]) -> Future[None]:
    """``work`` on a thread of its own, its result (or error) in the future returned."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="speakstream-g2p")
    try:
        return pool.submit(work)
    finally:
        pool.shutdown(wait=False)  # the thread ends with the work
