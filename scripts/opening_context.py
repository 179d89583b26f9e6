"""The context after a reply's opening window: what it costs in sound and in time.

    python scripts/opening_context.py [--contexts seam,6,4,2] [--opening 19] [--voices 5]

Over the streaming experiment's 35 utterances (the accuracy sentences and the 40-word one, five
voices), on the same front output: whole decoding, then the windowed decoding with each context
after the opening window (``seam``: the seam's own, 8 between words or 12 inside one), every other
window fixed (an opening of ``--opening`` frames: the least opening on a fast decoder pinned; then
the engine's growth without a budget) so that only that context differs. Prints Whisper's WER, the
log-mel distance to whole decoding within 0.25 s of the opening seam and over the whole utterance,
the largest sample step within 5 ms of that seam, and the opening window's decode time (median of
3, the settings taken in turn).
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
from numpy.typing import NDArray

from speakstream.bench.asr import corpus_wer, recognizer
from speakstream.bench.experiments.accuracy import SENTENCES, VOICES
from speakstream.bench.experiments.streaming import FORTY_WORDS, SEAM_REACH, decode_timed, utterance
from speakstream.bench.spectra import logmel_distance
from speakstream.engine.config import EngineConfig
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.runtime.speed import Speed
from speakstream.engine.windows.policy import WindowPolicy

FAST = Speed.fixed(0.001)
"""A decoder pinned this fast opens with the least opening (``--opening``)."""
NEAR = 6_000
"""0.25 s at 24 kHz: how near the opening seam the log-mel distance is taken."""
RUNS = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", default="seam,6,4,2")
    parser.add_argument("--opening", type=int, default=19)
    parser.add_argument("--voices", type=int, default=len(VOICES), help="the first this many voices")
    args = parser.parse_args()
    contexts = [None if c == "seam" else int(c) for c in args.contexts.split(",")]
    engine = KokoroEngine(EngineConfig())
    if engine.runner is None:
        raise SystemExit("needs the fast graph (windowed decoding)")
    base = engine.policy
    asr = recognizer()
    heard: dict[int | str | None, list[tuple[str, str]]] = {"whole": [], **{c: [] for c in contexts}}
    found: dict[int | None, list[tuple[float, float, float, float]]] = {c: [] for c in contexts}
    for voice in VOICES[: args.voices]:
        for text in [*SENTENCES, FORTY_WORDS]:
            u = utterance(engine, text, voice)
            whole = np.concatenate(decode_timed(engine, u, WindowPolicy.whole())[0])
            heard["whole"].append((text, asr.transcribe(whole, 24_000).text))
            times: dict[int | None, list[float]] = {c: [] for c in contexts}
            audio: dict[int | None, list[NDArray[np.float32]]] = {}
            for _ in range(RUNS):
                for context in contexts:
                    opening = dataclasses.replace(base.opening, context_after_frames=context, least_frames=args.opening)
                    split = dataclasses.replace(base.split, frames=0)
                    policy = dataclasses.replace(base, opening=opening, split=split)
                    audio[context], _, first = decode_timed(engine, u, policy, speed=FAST)
                    times[context].append(first)
            for context in contexts:
                pieces = audio[context]
                windowed, seam = np.concatenate(pieces), len(pieces[0])
                lo, hi = max(0, seam - NEAR), seam + NEAR
                step = float(np.abs(np.diff(windowed[max(0, seam - SEAM_REACH) : seam + SEAM_REACH])).max())
                near, every = logmel_distance(whole[lo:hi], windowed[lo:hi]), logmel_distance(whole, windowed)
                found[context].append((near, every, step, float(np.median(times[context]))))
                heard[context].append((text, asr.transcribe(windowed, 24_000).text))
        print(f"{voice}: {len(heard['whole'])} utterances", flush=True)
    print(f"\n{len(heard['whole'])} utterances; whole decoding WER {corpus_wer(heard['whole']):.2%}")
    print(
        "after the opening | WER | log-mel near its seam, dB (mean) | whole utterance | step at it (max) | opening ms"
    )
    for context in contexts:
        a = np.array(found[context])
        print(
            f"{'seam' if context is None else context:>17} | {corpus_wer(heard[context]):.2%} | {a[:, 0].mean():.3f} "
            f"| {a[:, 1].mean():.3f} | {a[:, 2].max():.3f} | {1000 * np.median(a[:, 3]):.1f}"
        )


if __name__ == "__main__":
    main()
