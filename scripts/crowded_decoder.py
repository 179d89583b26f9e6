"""A crowded reply's opening decoded by the ``int8`` decoder, or by the ``mixed`` one: sound and time.

    python scripts/crowded_decoder.py [--voices 5] [--runs 15] [--first-words]

Over the streaming experiment's 35 utterances (the accuracy sentences and the 40-word one, five
voices), on the same front output: whole decoding, then the windowed decoding a crowded reply gets
(a load that says ``crowded``: its opening of ``crowded_frames``), its opening window decoded by
each decoder (``OpeningPolicy.crowded_decoder``) and every other window by the ``mixed`` one.
Prints Whisper's WER, the log-mel distance to whole decoding over the first 0.5 s and over the
whole utterance, and the largest sample step
within 5 ms of the seam after the opening as a share of the utterance's 99.9th percentile step.
Then the time of one opening's decode (its lead context, ``crowded_frames`` and its context after
it) on one thread, as on a narrow lane: the median of ``--runs``, the decoders taken in turn.
``--first-words``: then the first word of short replies, each streamed crowded with an opening of
8, 10 and 14 frames on each decoder, heard by Whisper: the openings whose first word was lost.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
from numpy.typing import NDArray
from profile_decoder import window_feed

from speakstream.bench.asr import Recognizer, corpus_wer, recognizer
from speakstream.bench.experiments.accuracy import SENTENCES, VOICES
from speakstream.bench.experiments.streaming import FORTY_WORDS, decode_timed, utterance
from speakstream.bench.spectra import logmel_distance
from speakstream.engine.config import EngineConfig, session_options
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.windows.front import Utterance
from speakstream.engine.windows.policy import WindowPolicy
from speakstream.types import Load

DECODERS = ("mixed", "int8")
FIRST_S = 12_000
"""0.5 s at 24 kHz: the span the opening's log-mel distance is taken over."""
NEAR_SEAM = 120
"""5 ms at 24 kHz: how near the seam a step counts as the seam's."""
FIRST_WORDS = (
    "Sure, here is the next part.",
    "Sure thing, one moment.",
    "Five fish.",
    "Fine, thanks.",
    "So, what now?",
    "Hello there.",
    "Thanks for waiting, I found your booking.",
    "Yes, I can do that.",
    "Okay, let me check.",
    "She sells sea shells.",
    "Of course, here you go.",
    "Fair enough, shall we start?",
)
"""Short replies, many beginning with a sound that is hard to hear in a short window."""


def _on(engine: KokoroEngine, decoder: str) -> WindowPolicy:
    """The engine's policy with a crowded opening decoded by ``decoder`` (``int8``, or ``mixed``)."""
    opening = dataclasses.replace(engine.policy.opening, crowded_decoder=decoder == "int8")
    return dataclasses.replace(engine.policy, opening=opening)


def _crowded(engine: KokoroEngine, u: Utterance, decoder: str) -> list[NDArray[np.float32]]:
    """``u`` decoded as a crowded reply's opening chunk, its first window by ``decoder``."""
    return decode_timed(engine, u, _on(engine, decoder), load=Load(crowded=True))[0]


def _seam_step(pieces: list[NDArray[np.float32]]) -> float:
    audio = np.concatenate(pieces)
    seam, steps = len(pieces[0]), np.abs(np.diff(audio))
    return float(steps[max(0, seam - NEAR_SEAM) : seam + NEAR_SEAM].max() / np.percentile(steps, 99.9))


def _sound(engine: KokoroEngine, voices: int) -> Recognizer:
    asr = recognizer()
    assert engine.runner is not None and engine.runner.model.crowded is not None
    heard: dict[str, list[tuple[str, str]]] = {"whole": [], **{d: [] for d in DECODERS}}
    found: dict[str, list[tuple[float, float, float]]] = {d: [] for d in DECODERS}
    for voice in VOICES[:voices]:
        for text in [*SENTENCES, FORTY_WORDS]:
            u = utterance(engine, text, voice)
            whole = np.concatenate(decode_timed(engine, u, WindowPolicy.whole())[0])
            heard["whole"].append((text, asr.transcribe(whole, 24_000).text))
            for decoder in DECODERS:
                pieces = _crowded(engine, u, decoder)
                audio = np.concatenate(pieces)
                first = logmel_distance(whole[:FIRST_S], audio[:FIRST_S])
                found[decoder].append((first, logmel_distance(whole, audio), _seam_step(pieces)))
                heard[decoder].append((text, asr.transcribe(audio, 24_000).text))
        print(f"{voice} done", flush=True)
    print(f"whole decoding: WER {corpus_wer(heard['whole']):.2%}")
    print("opening decoder | WER | log-mel first 0.5 s dB | whole dB | seam step / p99.9 (mean, max)")
    for decoder in DECODERS:
        a = np.array(found[decoder])
        print(
            f"{decoder} | {corpus_wer(heard[decoder]):.2%} | {a[:, 0].mean():.2f} | {a[:, 1].mean():.2f} "
            f"| {a[:, 2].mean():.2f}, {a[:, 2].max():.2f}"
        )
    return asr


def _time(engine: KokoroEngine, runs: int) -> None:
    import onnxruntime as ort

    policy = engine.policy
    frames = (
        policy.seams.lead_context_frames + policy.opening.crowded_frames + (policy.opening.context_after_frames or 0)
    )
    feed = window_feed(engine, frames)
    options = session_options(1, 1, spin=False)
    sessions = {
        d: ort.InferenceSession(str(engine.assets.decoder(d)), options, providers=["CPUExecutionProvider"])
        for d in DECODERS
    }
    seconds: dict[str, list[float]] = {d: [] for d in DECODERS}
    for run in range(runs + 3):
        for decoder in DECODERS if run % 2 == 0 else DECODERS[::-1]:
            started = time.perf_counter()
            sessions[decoder].run(["audio"], feed)
            if run >= 3:  # the first runs allocate
                seconds[decoder].append(time.perf_counter() - started)
    mixed, int8 = (1000 * float(np.median(seconds[d])) for d in DECODERS)
    print(f"opening of {frames} frames, one thread: mixed {mixed:.1f} ms, int8 {int8:.1f} ms ({int8 / mixed:.2f}x)")


def _first_words(engine: KokoroEngine, asr: Recognizer, voices: int) -> None:
    lost: dict[str, list[tuple[str, int, str, str]]] = {d: [] for d in DECODERS}
    for voice in VOICES[:voices]:
        for text in FIRST_WORDS:
            for frames in (8, 10, 14):
                for decoder in DECODERS:
                    policy = _on(engine, decoder)
                    opening = dataclasses.replace(policy.opening, crowded_frames=frames, least_frames=min(frames, 16))
                    stream = engine.windowed(text, voice=voice, policy=dataclasses.replace(policy, opening=opening))
                    pieces = stream.pieces(Load(crowded=True))
                    heard = asr.transcribe(np.concatenate([p.samples for p in pieces]), 24_000).text
                    first = text.split()[0].strip(",.")
                    if corpus_wer([(first, heard.split()[0] if heard else "")]) > 0:
                        lost[decoder].append((voice, frames, text, heard))
    openings = voices * len(FIRST_WORDS) * 3
    for decoder, found in lost.items():
        print(f"{decoder}: first word lost in {len(found)} of {openings} crowded openings")
        for case in found:
            print("   ", case)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", type=int, default=len(VOICES), help="the first this many voices")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--first-words", action="store_true", help="then the first-word test (about 5 minutes)")
    args = parser.parse_args()
    engine = KokoroEngine(EngineConfig(crowded_decoder="int8"))
    _time(engine, args.runs)
    asr = _sound(engine, args.voices)
    if args.first_words:
        _first_words(engine, asr, args.voices)


if __name__ == "__main__":
    main()
