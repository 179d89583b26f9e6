"""Kokoro as two graphs, front and decoder, with the decoder run window by window.

``WindowedModel.stream`` runs the front (durations, aligned features, F0 and energy) over each
phoneme window of a chunk, then the decoder over growing windows of frames (see ``decoding``), and
yields each window's audio as soon as it is made, with the chunk's word timestamps on the first.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.engine.base import Ahead, CancelToken, Crowded, WorkClock
from speakstream.engine.decoding import (
    FRAME_SAMPLES,
    WINDOW_PAUSE_S,
    ListenerBudget,
    Pairs,
    Span,
    WindowPolicy,
    decode_windows,
    speech_span,
    word_times,
)
from speakstream.engine.model.assets import Assets
from speakstream.engine.model.graph import decoder_feed, front_feed
from speakstream.engine.phonemes.phonemizer import Phonemized
from speakstream.engine.voices import VoiceBank
from speakstream.engine.windows import cores as inference
from speakstream.engine.windows.edges import EdgePolicy, trim_onset
from speakstream.types import SAMPLE_RATE, AudioPiece, SynthesisTimings, WordTimestamp

FRAME_COST_GUESS_S = 0.009
"""Decoder seconds per frame before any is measured (2 CPU cores: about a third of real time)."""
WARM_RUNS = 2
"""Runs of each session before serving: ONNX Runtime's first run of a session grows its memory
arena and the second plans its memory; until both, a 16-frame opening on a narrow copy of the
int8 decoder took 117-132 ms against 60 after, and a 16-frame window on a narrow ``mixed`` one
89-142 against 81-85 (warmed once: 83-91 and 91-123)."""
SPEED_WINDOW_FRAMES = 16
"""Windows this long or longer measure the device's speed (a shorter one is mostly overhead)."""
NARROW_SLOWDOWN = 1.5
"""A decoder frame on a narrow session against the wide one before any narrow window is measured:
a 36-frame window took 656 ms on one of 2 cores and 433 ms on both (``inference``)."""
ONSET_REACH_S = 0.13
"""How long before its first word's frames (by the durations) a chunk's speech may begin. Kokoro's
decoder starts a word's sound early: over 448 chunks (16 short texts, 28 English voices), the first
10 ms within 42 dB of the loudest came 85 ms early (median), 145 ms at the 99th percentile, 180 at
most; Kokoro's own timestamps take 3 frames (75 ms) off the first. A chunk is decoded from this
much (and the lead) before its first word, and its first piece is cut to its speech
(``trim_onset``). Cut at the durations instead, 83% of chunks lost the start of their first sound,
louder than 30 dB under the peak: Whisper heard "Sure, here is..." as "Here is..."."""


@dataclass(frozen=True, slots=True)
class Utterance:
    """The front's output for one phoneme window, and where its speech lies."""

    features: NDArray[np.float32]
    f0: NDArray[np.float32]
    energy: NDArray[np.float32]
    style: NDArray[np.float32]
    frames: int
    head: int
    """First sample kept (speech start minus the lead)."""
    end: int
    """One past the last sample kept (speech end plus the tail)."""
    words: tuple[WordTimestamp, ...]
    tail: int
    """Samples kept after the speech ends."""
    speech_end: int
    """Where the last word ends, by the durations."""
    onset: int
    """The latest first sample: where the first word starts by the durations, less the lead. The
    first piece is cut to its speech (``trim_onset``), never past this."""

    @property
    def samples(self) -> int:
        return self.end - self.head


class WindowedModel:
    def __init__(
        self,
        assets: Assets,
        options: Any,
        providers: list[str],
        policy: WindowPolicy,
        *,
        narrow: tuple[Any, int] | None = None,
        decoder: str = "mixed",
        crowded_decoder: str | None = None,
    ) -> None:
        """``narrow``: (session options with a share of the cores, how many) copies of both parts,
        for inferences that start while another runs (``inference.Lanes``); ``decoder``: which
        decoder part (``Assets.decoder``); ``crowded_decoder``: the one for a crowded reply's
        opening window (None: ``decoder``)."""
        import onnxruntime as ort

        def sessions(path: Path) -> inference.Sessions:
            """The wide session of one part, and its narrow copies."""

            def load(part_options: Any) -> Any:
                return ort.InferenceSession(str(path), part_options, providers=providers)

            return self.lanes.part(load(options), [load(narrow_options) for _ in range(count)])

        narrow_options, count = narrow or (None, 0)
        self.narrow_count = count
        self.lanes = inference.Lanes()
        self.front_sessions = sessions(assets.split("front"))
        self.decoder_sessions = sessions(assets.decoder(decoder))
        self.crowded_decoder = crowded_decoder
        self.crowded_sessions = None if crowded_decoder is None else sessions(assets.decoder(crowded_decoder))
        """The decoder that opens a reply while more listeners wait for their first audio than
        there are lanes (``_windows``; None: ``decoder_sessions``). Each such opening delays every
        listener behind it, and the ``int8`` decoder takes 0.74x the time of ``mixed`` (16 frames,
        one thread): the last of 8 listeners arriving together waits for four rounds of them."""
        self.providers = self.decoder_sessions.wide.get_providers()
        meta = self.decoder_sessions.wide.get_modelmeta().custom_metadata_map
        self.harmonics = np.array([float(h) for h in meta["sine_harmonics"].split(",")])
        self.rate = float(meta["sine_rate"])
        self.policy = policy
        self.frame_cost_s = FRAME_COST_GUESS_S if self.providers[0] == "CPUExecutionProvider" else 0.0005
        """Decoder seconds per frame decoded, measured (a moving average over windows)."""
        self.lone_frame_cost_s = self.frame_cost_s
        """... over the windows that ran alone (no other inference beside them: the wide session).
        Other sessions' windows run narrow, slower a frame: this is what a lone reply can expect."""
        self.shared_frame_cost_s: float | None = None
        """... over the windows that ran beside another (a narrow session): the speed a reply
        gets while other replies share the decoder (None: none measured yet)."""
        self.device_frame_s: float | None = None
        """The fewest decoder seconds per frame measured on a window of ``SPEED_WINDOW_FRAMES`` or
        more: the device's own speed (``frame_cost_s`` also carries other sessions' load), which
        sizes the window that opens a reply (``WindowPolicy.opening``)."""
        self.warmed = False
        """Every session has run ``WARM_RUNS`` times (``warm``)."""
        self.paired_windows = 0
        """Windows whose two halves were decoded at once (``decode_pair``), counted."""
        self.replies: Callable[[], int] | None = None
        """The caller's count of replies with work queued or running (the scheduler's sessions):
        pairs only while it is one, so a reply between two windows keeps its turn's lane."""

    def stream(
        self,
        parts: list[Phonemized],
        voices: VoiceBank,
        voice: str,
        speed: float,
        text: str,
        cancel: CancelToken | None,
        phonemize_s: float,
        edges: EdgePolicy,
        opening: bool = True,
        ahead: Ahead | None = None,
        policy: WindowPolicy | None = None,
        crowded: Crowded | None = None,
    ) -> Iterator[AudioPiece]:
        """``ahead``: seconds of this reply's audio the listener has buffered now (sizes windows);
        ``policy``: this call's windows (default: the model's); ``crowded()``: other listeners wait
        for their first audio beside this one's, more than the lanes (``opening_frames``), asked
        once the chunk's front is made, as its opening window is sized."""
        clock = WorkClock(cancel)
        utterances = [
            self.front(part, voices, voice, speed, text if i == len(parts) - 1 else ".", cancel, edges)
            for i, part in enumerate(parts)
        ]
        pause = int(WINDOW_PAUSE_S * SAMPLE_RATE)
        index, position, total = 0, 0, 0
        words: tuple[WordTimestamp, ...] = ()
        for i, u in enumerate(utterances):
            for samples, final in self._windows(
                u, cancel, edges, opening=opening and i == 0, ahead=ahead, policy=policy or self.policy, crowded=crowded
            ):
                if index == 0:
                    samples, cut = trim_onset(samples, SAMPLE_RATE, edges, u.onset - u.head)
                    words, total = timeline(utterances, pause, cut)
                if final and i < len(utterances) - 1:
                    samples = np.concatenate([samples, np.zeros(pause, np.float32)])
                timings = SynthesisTimings(phonemize_s if index == 0 else 0.0, clock.seconds())
                yield AudioPiece(
                    samples,
                    index,
                    position / SAMPLE_RATE,
                    total / SAMPLE_RATE,
                    words if index == 0 else (),
                    final and i == len(utterances) - 1,
                    timings,
                )
                # the piece's time is its own: not the time this generator waited, suspended, for
                # its reply's next turn (other sessions' windows ran then)
                clock.restart()
                index, position = index + 1, position + len(samples)

    def _windows(
        self,
        u: Utterance,
        cancel: CancelToken | None,
        edges: EdgePolicy,
        *,
        opening: bool,
        ahead: Ahead | None,
        policy: WindowPolicy,
        crowded: Crowded | None,
    ) -> Iterator[tuple[NDArray[np.float32], bool]]:
        crowd = opening and crowded is not None and crowded()
        policy = policy.crowding() if crowd else policy
        opening_decoder = [self.crowded_sessions] if crowd else []  # for the first window only

        def decode(start: int, end: int, phase: NDArray[np.float32]) -> NDArray[np.float32]:
            sessions = opening_decoder.pop() if opening_decoder else None
            return self.decode(u, start, end, phase, cancel, sessions=sessions)

        budget = None if ahead is None else self.budget(ahead, policy)
        return decode_windows(
            decode,
            u.f0,
            u.frames,
            head=u.head,
            end=u.end,
            harmonics=self.harmonics,
            rate=self.rate,
            policy=policy,
            fade=int(edges.fade_s * SAMPLE_RATE),
            opening=opening,
            budget=budget,
            tail=u.tail,
            tail_threshold_db=edges.threshold_db,
            speech_end=u.speech_end,
            boundaries=word_boundaries(u),
            opening_frames=self.opening_frames(policy, crowded=crowd),
            pairs=self.pairs(u, cancel),
        )

    def opening_frames(self, policy: WindowPolicy, *, shared: bool | None = None, crowded: bool = False) -> int:
        """The size of the window opening a reply, sized now (``WindowPolicy.opening``, its first
        ``ONSET_REACH_S`` maybe silence cut before it plays): at the lone speed while nothing else
        runs on the decoder, else at the speed it has when shared (``shared``: say which instead);
        ``crowded`` (more listeners wait for first audio than there are lanes): the shortest that
        sounds right (``WindowPolicy.crowded_frames``), when that is shorter."""
        if crowded:
            return min(policy.crowded_frames, self.opening_frames(policy, shared=shared))
        if shared is None:
            shared = policy.shared_opening and not self._alone()
        if shared:
            return policy.opening(self.shared_frame_s, shared=True, silent_s=ONSET_REACH_S)
        return policy.opening(self.opening_frame_s, silent_s=ONSET_REACH_S)

    @property
    def opening_frame_s(self) -> float | None:
        """The decoder seconds a frame that size the window opening a reply (``WindowPolicy.opening``):
        the recent speed of windows that ran alone, never under the fastest measured (None: not
        measured yet). A machine's speed drifts: sized from the fastest, a 16-frame opening left
        gaps when the decoder ran slower than it."""
        if self.device_frame_s is None:
            return None
        return max(self.device_frame_s, self.lone_frame_cost_s)

    @property
    def shared_frame_s(self) -> float | None:
        """The decoder seconds a frame while other replies share it: measured, else guessed from
        the lone speed (``NARROW_SLOWDOWN``; None when that is not measured either)."""
        if self.shared_frame_cost_s is not None:
            return self.shared_frame_cost_s
        lone = self.opening_frame_s
        return None if lone is None else lone * NARROW_SLOWDOWN

    def budget(self, ahead: Ahead, policy: WindowPolicy) -> ListenerBudget:
        """How the windows of a chunk whose listener has ``ahead()`` seconds buffered are sized."""
        return ListenerBudget(policy, ahead, self._frame_costs, self._alone)

    def _frame_costs(self) -> tuple[float, float]:
        return self.frame_cost_s, self.lone_frame_cost_s

    def _alone(self) -> bool:
        """Nothing else runs on the decoder or is about to (no other session is taking turns)."""
        in_flight = self.lanes.in_flight
        return not self.lanes.running and (in_flight is None or in_flight() <= 1)

    @property
    def pairs_possible(self) -> bool:
        """This model has two narrow decoder sessions or more (not on a GPU, nor with one lane)."""
        return self.narrow_count >= 2

    def pairs(self, u: Utterance, cancel: CancelToken | None) -> Pairs | None:
        """How ``u``'s long windows are decoded as two halves at once (None: not ``pairs_possible``)."""
        if not self.pairs_possible:
            return None

        def decode(first: Span, second: Span) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
            return self.decode_pair(u, first, second, cancel)

        return Pairs(decode, self._pair_ready)

    def _pair_ready(self) -> bool:
        """Two narrow decoder sessions are free, nothing else runs or is about to, and no other
        reply waits for its next window."""
        lone = self.replies is None or self.replies() <= 1
        return lone and len(self.decoder_sessions.narrow) >= 2 and self._alone()  # both free: none lent out

    def warm(self, part: Phonemized, voices: VoiceBank, voice: str) -> None:
        """Run every session of every part (narrow copies and the crowded decoder included)
        ``WARM_RUNS`` times on ``part`` whole, so no listener's window pays a session's first runs.
        Its frames are the largest window each session is warmed for (a longer one grows the
        arena again, once): a short reply warms every opening and the windows after it. Once per
        model: a server started again on the same engine (the tests) finds it warm."""
        if self.warmed:
            return
        self.warmed = True
        style = voices.style(voice, len(part.tokens))
        phase = np.zeros((1, 1, len(self.harmonics)), np.float32)
        decoders = [self.decoder_sessions, *([self.crowded_sessions] if self.crowded_sessions else [])]
        with ThreadPoolExecutor(max(1, self.narrow_count), thread_name_prefix="speakstream-warm") as pool:
            for _ in range(WARM_RUNS):
                front = front_feed(part.tokens, style, 1.0)
                _, features, f0, energy = _each(pool, self.front_sessions, None, front)
                feed = decoder_feed((features, f0, energy), style, phase)
                for sessions in decoders:
                    _each(pool, sessions, ["audio"], feed)

    def front(
        self,
        part: Phonemized,
        voices: VoiceBank,
        voice: str,
        speed: float,
        text: str,
        cancel: CancelToken | None,
        edges: EdgePolicy,
    ) -> Utterance:
        style = voices.style(voice, len(part.tokens))
        feed = front_feed(part.tokens, style, speed)
        (durations, features, f0, energy), _ = inference.run(self.front_sessions, None, feed, cancel)
        durations = np.asarray(durations).ravel()
        frames = int(durations.sum())
        first, last = speech_span(part, durations)
        onset = max(0, first - int(edges.lead_s * SAMPLE_RATE))
        head = max(0, onset - int(ONSET_REACH_S * SAMPLE_RATE))
        tail = int(edges.tail_for(text) * SAMPLE_RATE)
        end = max(head + 1, min(frames * FRAME_SAMPLES, last + tail))
        words = tuple(word_times(part, durations, head, end - head))
        return Utterance(features, f0, energy, style, frames, head, end, words, tail, min(last, end), onset)

    def decode(
        self,
        u: Utterance,
        start: int,
        end: int,
        phase: NDArray[np.float32],
        cancel: CancelToken | None,
        *,
        sessions: inference.Sessions | None = None,
    ) -> NDArray[np.float32]:
        """Frames ``[start, end)`` of ``u`` on ``sessions`` (None: ``decoder_sessions``; another
        decoder's speed is not this one's, so only theirs is measured)."""
        expected_s = self.frame_cost_s * (end - start)
        feed = self.feed(u, start, end, phase)
        alone, on = self._alone(), self.decoder_sessions if sessions is None else sessions
        (audio,), seconds = inference.run(on, ["audio"], feed, cancel, expected_s)
        if sessions is None:
            self._measured(seconds / max(1, end - start), end - start, alone=alone)
        return np.asarray(audio, dtype=np.float32).ravel()

    def _measured(self, cost: float, frames: int, *, alone: bool) -> None:
        """Take ``cost`` (decoder seconds a frame, over a window of ``frames`` that started
        ``alone`` or not) into the measured speeds."""
        self.frame_cost_s += 0.3 * (cost - self.frame_cost_s)
        if alone and self._alone():
            self.lone_frame_cost_s += 0.3 * (cost - self.lone_frame_cost_s)
        elif not alone:  # it started on a narrow session
            shared = self.shared_frame_cost_s
            self.shared_frame_cost_s = cost if shared is None else shared + 0.3 * (cost - shared)
        if frames >= SPEED_WINDOW_FRAMES:
            self.device_frame_s = min(cost, self.device_frame_s or cost)

    def decode_pair(
        self, u: Utterance, first: Span, second: Span, cancel: CancelToken | None
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Two spans of ``u`` decoded at once on two narrow sessions when nothing else runs, else
        one after the other (``inference.run_pair``). Neither updates the measured speeds: those
        size windows by the speed of one inference, which a pair beats."""
        longest = max(first[1] - first[0], second[1] - second[0])
        expected_s = self.frame_cost_s * longest * NARROW_SLOWDOWN
        feeds = (self.feed(u, *first), self.feed(u, *second))
        ((one,), (two,)), seconds = inference.run_pair(self.decoder_sessions, ["audio"], feeds, cancel, expected_s)
        self.paired_windows += seconds is not None
        return np.asarray(one, dtype=np.float32).ravel(), np.asarray(two, dtype=np.float32).ravel()

    @staticmethod
    def feed(u: Utterance, start: int, end: int, phase: NDArray[np.float32]) -> dict[str, Any]:
        """The decoder's inputs for frames ``[start, end)`` of ``u``, the sine source at ``phase``."""
        return decoder_feed((u.features, u.f0, u.energy), u.style, phase, start, end)


def _each(pool: ThreadPoolExecutor, sessions: inference.Sessions, outputs: list[str] | None, feed: Any) -> Any:
    """Every session of a part run on ``feed``: the wide one, then the narrow copies at once (a
    share of the cores each, as they serve); the wide one's outputs."""
    wide, *narrow = sessions.every
    outputs_of = wide.run(outputs, feed)
    for _ in pool.map(lambda session: session.run(outputs, feed), narrow):
        pass
    return outputs_of


def timeline(utterances: list[Utterance], pause: int, cut: int) -> tuple[tuple[WordTimestamp, ...], int]:
    """A chunk's word timestamps and its length in samples: its utterances one after another,
    ``pause`` samples between them, the first cut ``cut`` samples at its head (``trim_onset``)."""
    words: list[WordTimestamp] = []
    offset = -cut
    for u in utterances:
        words += [WordTimestamp(w.word, _moved(w.start_s, offset), _moved(w.end_s, offset)) for w in u.words]
        offset += u.samples + pause
    return tuple(words), offset - pause


def _moved(seconds: float, samples: int) -> float:
    """``seconds`` (a whole number of samples) moved by ``samples``, counted in samples so that a
    word ending with the chunk ends exactly at its length."""
    return (round(seconds * SAMPLE_RATE) + samples) / SAMPLE_RATE


def word_boundaries(u: Utterance) -> list[int]:
    """The frames between consecutive words (the middle of any pause), where seams go."""
    frames = []
    for before, after in itertools.pairwise(u.words):
        middle = u.head + (before.end_s + after.start_s) / 2 * SAMPLE_RATE
        frames.append(round(middle / FRAME_SAMPLES))
    return sorted(set(frames))
