"""The Kokoro-82M engine on ONNX Runtime (CPU here; CUDA automatically where present)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.base import WARM_TEXT, Ahead, CancelToken, Crowded, VoiceBankEngine, WorkClock
from speakstream.engine.decoding import WINDOW_PAUSE_S, WindowPolicy, word_times
from speakstream.engine.model.assets import Assets, locate
from speakstream.engine.model.graph import front_feed
from speakstream.engine.phonemes.languages import Language, parse_language
from speakstream.engine.phonemes.normalize import normalize
from speakstream.engine.phonemes.phonemizer import Phonemized, Phonemizer, windows
from speakstream.engine.voices import VoiceBank
from speakstream.engine.windowed import WindowedModel
from speakstream.engine.windows import cores as inference
from speakstream.engine.windows.edges import EdgePolicy, trim_edges
from speakstream.errors import EngineError, InvalidInput
from speakstream.types import SAMPLE_RATE, AudioChunk, AudioPiece, SynthesisTimings, WordTimestamp, join_pieces


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    """How the engine loads and runs the model."""

    model_dir: Path | None = None
    """Model directory; default ``SPEAKSTREAM_MODEL_DIR`` or the cache."""
    graph: str = "fast"
    """``fast`` (float convolutions, durations), ``timed`` (int8, durations) or ``original``."""
    decoder: str = "auto"
    """The ``fast`` graph's decoder: ``mixed`` (the generator's first stage and noise branch in
    int8 ``QLinearConv``, about 0.8x the compute on a CPU, and closer to the float decoder than the
    model's own int8 export is; see ``quantize``), ``float``, or ``auto``: ``mixed`` on the CPU
    provider, ``float`` on any other (a GPU's provider may lack ``QLinearConv`` and fall back to
    the CPU for it)."""
    crowded_decoder: str = "auto"
    """The decoder part for the window that opens a reply while more listeners wait for their first
    audio than the engine has lanes (``WindowPolicy.crowded_frames``): ``int8`` (every convolution
    of the generator in int8: 0.74x the time of ``mixed`` on one thread, for a few hundred ms of
    audio a little further from the float decoder's; see ``WindowedModel.crowded_sessions``),
    ``same`` (``decoder``), or ``auto``: ``int8`` where ``decoder`` resolves to ``mixed``, else
    ``same``. ``int8`` loads the decoder once more for each session of ``decoder`` (the wide one
    and the narrow copies: resident after one reply each way, 936 MB against 719 on 2 cores)."""
    intra_op_threads: int = 0
    """Threads inside one inference (0: ONNX Runtime's default, the physical cores)."""
    inter_op_threads: int = 1
    parallel: int = 0
    """Inferences that may run at once (the server's ``workers``; 0: 2 on a CPU with 2 cores or
    more, else 1). Above 1 on a CPU, the engine also loads that many narrow copies of the windowed
    model's two parts (each with an equal share of the cores: one thread on 2 cores): an inference
    that starts while another runs takes one (``inference.Lanes``), so two sessions' windows share
    the cores without each asking for all of them; one alone still gets every core. Each copy
    costs about 120 MB of memory with the ``mixed`` decoder, 180 MB with ``float`` (resident
    after one synthesis: 496 MB at 1, 731 at 2 with ``mixed``; 549 and 908 with ``float``)."""
    spin_threads: bool = False
    """Let ONNX Runtime's threads spin between kernels: a little faster on an idle machine, much
    slower when the cores are shared (an LLM on the same CPU), so off by default."""
    providers: tuple[str, ...] | None = None
    """Execution providers; None picks CUDA when this onnxruntime has it, else CPU."""
    edges: EdgePolicy = field(default_factory=EdgePolicy)
    windows: WindowPolicy = field(default_factory=WindowPolicy)
    """How the ``fast`` graph's decoder is run in windows (streaming inside a chunk)."""
    languages: tuple[str, ...] = ()
    """Languages whose G2P loads with the engine (the others load on first use)."""


def pick_providers(requested: tuple[str, ...] | None = None) -> list[str]:
    import onnxruntime as ort

    available = ort.get_available_providers()
    wanted = requested or tuple(p for p in os.environ.get("SPEAKSTREAM_PROVIDERS", "").split(",") if p)
    if wanted:
        missing = [p for p in wanted if p not in available]
        if missing:
            raise EngineError(f"execution providers {missing} not in this onnxruntime ({available})", retryable=False)
        return list(wanted)
    if "CUDAExecutionProvider" in available:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


def pick_decoder(requested: str, providers: list[str]) -> str:
    """``EngineConfig.decoder`` for these providers: ``auto`` is ``mixed`` on the CPU only."""
    if requested != "auto":
        return requested
    return "mixed" if providers[0] == "CPUExecutionProvider" else "float"


def pick_crowded_decoder(requested: str, decoder: str) -> str | None:
    """``EngineConfig.crowded_decoder`` beside ``decoder`` (resolved): None for the same one."""
    if requested == "auto":
        return "int8" if decoder == "mixed" else None
    return None if requested in ("same", decoder) else requested


def lanes(config: EngineConfig, providers: list[str]) -> int:
    """Inferences that may run at once: ``config.parallel``, or what 0 chooses: two on a CPU with 2
    cores or more (under load, 1.3x the audio per second of one inference on every core; one alone
    still gets every core), else one (a GPU, or a whole graph, which has no narrow copies)."""
    if config.parallel:
        return config.parallel
    on_cpu = providers[0] == "CPUExecutionProvider" and config.graph == "fast"
    return 2 if on_cpu and _cores(config) >= 2 else 1


def _cores(config: EngineConfig) -> int:
    return config.intra_op_threads or os.cpu_count() or 1


def session_options(intra_op_threads: int, inter_op_threads: int, spin: bool) -> Any:
    """ONNX Runtime options for one of the engine's sessions (0 threads: ONNX Runtime's default)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = intra_op_threads
    options.inter_op_num_threads = inter_op_threads
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    return options


class KokoroEngine(VoiceBankEngine):
    """Kokoro-82M: text -> 24 kHz mono speech with word timestamps from the model's durations."""

    sample_rate = SAMPLE_RATE

    def __init__(self, config: EngineConfig | None = None, *, assets: Assets | None = None) -> None:
        import onnxruntime as ort

        self.config = config or EngineConfig()
        self.assets = assets or locate(self.config.model_dir)
        self.voice_bank = VoiceBank.from_dir(self.assets.voices_dir)
        self.phonemizer = Phonemizer()
        self.phonemizer.load()
        for language in self.config.languages:
            self.phonemizer.load(parse_language(language))
        options = session_options(self.config.intra_op_threads, self.config.inter_op_threads, self.config.spin_threads)
        providers = pick_providers(self.config.providers)
        self.windowed: WindowedModel | None = None
        self.decoder: str | None = None
        """The decoder part in use (``EngineConfig.decoder`` resolved), None for a whole graph."""
        self.parallel = lanes(self.config, providers)
        """Inferences that may run at once: the server's engine workers when it sets none."""
        if self.config.graph == "fast":  # the fast graph, cut in two for windowed decoding
            narrow = self._narrow(providers)
            self.decoder = pick_decoder(self.config.decoder, providers)
            self.windowed = WindowedModel(
                self.assets,
                options,
                providers,
                self.config.windows,
                narrow=narrow,
                decoder=self.decoder,
                crowded_decoder=pick_crowded_decoder(self.config.crowded_decoder, self.decoder),
            )
            self.providers = self.windowed.providers
        else:
            self.session = ort.InferenceSession(str(self.assets.graph(self.config.graph)), options, providers=providers)
            self.providers = self.session.get_providers()
            self._has_durations = len(self.session.get_outputs()) > 1
        self.device = "cuda" if "CUDAExecutionProvider" in self.providers else "cpu"

    def _narrow(self, providers: list[str]) -> tuple[Any, int] | None:
        """Options for the narrow copies (an equal share of the cores each: one thread on 2
        cores), and how many (None: no copies)."""
        if self.parallel < 2 or providers[0] != "CPUExecutionProvider":
            return None
        threads = max(1, _cores(self.config) // self.parallel)
        return session_options(threads, 1, spin=False), self.parallel

    def set_in_flight(self, count: Callable[[], int]) -> None:
        """``count``: the inferences the caller runs or is about to start (the scheduler's windows
        in flight), which decides between the wide session and a narrow one (``inference.Lanes``)."""
        if self.windowed is not None:
            self.windowed.lanes.in_flight = count

    def set_replies(self, count: Callable[[], int]) -> None:
        """``count``: the replies the caller has work queued or running for (the scheduler's
        sessions): a lone reply's long windows take both narrow lanes (``WindowedModel.pairs``)."""
        if self.windowed is not None:
            self.windowed.replies = count

    def synthesize(
        self, text: str, *, voice: str = "af_heart", speed: float = 1.0, cancel: CancelToken | None = None
    ) -> AudioChunk:
        """The whole chunk: the join of ``stream``, decoded in one window (no context recomputed)."""
        text, speed, _ = self.checked(text, voice, speed)
        pieces = self._stream(
            text, voice, speed, cancel, opening=False, ahead=None, policy=WindowPolicy.whole(), crowded=None
        )
        return join_pieces(text, list(pieces))

    def warm(self, voice: str = "af_heart") -> None:
        """Ready to serve at full speed: ``synthesize`` twice on the wide sessions (the second
        measures the decoder's speed), then every session of every part run on the same reply
        (``WindowedModel.warm``): the first burst of replies after start-up uses the narrow copies
        and the crowded decoder, whose first runs take up to twice as long."""
        super().warm(voice)
        if self.windowed is not None:
            parts = self.parts(WARM_TEXT, self.check_voice(voice).speaks)
            self.windowed.warm(parts[0], self.voice_bank, voice)

    def stream(
        self,
        text: str,
        *,
        voice: str = "af_heart",
        speed: float = 1.0,
        cancel: CancelToken | None = None,
        opening: bool = True,
        ahead: Ahead | None = None,
        crowded: Crowded | None = None,
    ) -> Iterator[AudioPiece]:
        """The chunk's audio piece by piece. ``opening``: the chunk opens a reply, so its first piece
        comes from one small window of the decoder. ``ahead``: seconds of the reply's audio its
        listener has buffered, read before each window; each window is as large as that allows.
        ``crowded()``, asked as the opening window is sized: more listeners wait for first audio than
        the engine has lanes, so that window is the shortest that sounds right
        (``WindowPolicy.crowded_frames``)."""
        return self._stream(text, voice, speed, cancel, opening=opening, ahead=ahead, policy=None, crowded=crowded)

    def _stream(
        self,
        text: str,
        voice: str,
        speed: float,
        cancel: CancelToken | None,
        *,
        opening: bool,
        ahead: Ahead | None,
        policy: WindowPolicy | None,
        crowded: Crowded | None,
    ) -> Iterator[AudioPiece]:
        text, speed, info = self.checked(text, voice, speed)
        started = time.perf_counter()
        parts = self.parts(text, info.speaks)
        if not parts:
            raise InvalidInput(f"nothing speakable in {text[:40]!r}", code="empty_text")
        phonemize_s = time.perf_counter() - started
        if self.windowed is None:
            chunk = self._whole(parts, voice, speed, text, cancel, phonemize_s)
            yield AudioPiece(chunk.samples, 0, 0.0, chunk.duration_s, chunk.words, True, chunk.timings)
            return
        yield from self.windowed.stream(
            parts,
            self.voice_bank,
            voice,
            speed,
            text,
            cancel,
            phonemize_s,
            self.config.edges,
            opening,
            ahead,
            policy,
            crowded,
        )

    def parts(self, text: str, speaks: Language) -> list[Phonemized]:
        """``text`` normalised and phonemised in ``speaks``, cut into the model's token windows."""
        return windows(self.phonemizer.phonemize(normalize(text, speaks), speaks))

    def _whole(
        self,
        parts: list[Phonemized],
        voice: str,
        speed: float,
        text: str,
        cancel: CancelToken | None,
        phonemize_s: float,
    ) -> AudioChunk:
        """One inference per phoneme window on a whole graph (``timed``, ``original``)."""
        clock = WorkClock(cancel)
        pieces, words, offset = [], [], 0
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            samples, part_words = self._window(part, voice, speed, text if last else ".", cancel)
            if not last:
                samples = np.concatenate([samples, np.zeros(int(WINDOW_PAUSE_S * SAMPLE_RATE), np.float32)])
            words += [w.shifted(offset / SAMPLE_RATE) for w in part_words]
            pieces.append(samples)
            offset += len(samples)
        timings = SynthesisTimings(phonemize_s, clock.seconds())
        return AudioChunk(np.concatenate(pieces), SAMPLE_RATE, text, tuple(words), timings)

    def _window(
        self, part: Phonemized, voice: str, speed: float, text: str, cancel: CancelToken | None
    ) -> tuple[NDArray[np.float32], list[WordTimestamp]]:
        audio, durations = self._infer(part.tokens, voice, speed, cancel)
        samples, head = trim_edges(audio, SAMPLE_RATE, text, self.config.edges)
        if durations is None:
            return samples, []
        return samples, word_times(part, durations, head, len(samples))

    def _infer(
        self, tokens: tuple[int, ...], voice: str, speed: float, cancel: CancelToken | None = None
    ) -> tuple[NDArray[np.float32], Any]:
        feed = front_feed(tokens, self.voice_bank.style(voice, len(tokens)), speed)
        outputs, _ = inference.run(self.session, None, feed, cancel)
        audio = np.asarray(outputs[0], dtype=np.float32).ravel()
        durations = np.asarray(outputs[1]).ravel() if self._has_durations else None
        return audio, durations
