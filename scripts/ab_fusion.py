"""The generator's fused norms (``engine/model/fusion.py``) against the same decoder made without them.

    python scripts/ab_fusion.py [--frames 41] [--runs 30] [--threads 1 2]

Makes the unfused float and mixed decoders in memory (as ``assets`` did before ``fusion``; the
mixed one is calibrated again, about a minute), then decodes one window of ``--frames`` frames
(a reply's opening window with its context, as ``profile_decoder.py`` does) with each pair,
alternating which runs first, and prints the median times, the median of the paired ratios
(fused / unfused: under 1 is faster) and the audio's SNR between the two.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import onnx
from profile_decoder import window_feed

from speakstream.engine.config import EngineConfig, session_options
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.model.graph import float_convolutions, split
from speakstream.engine.model.quantize import quantized


def _unfused(engine: KokoroEngine) -> dict[str, bytes]:
    front, decoder = split(float_convolutions(onnx.load(str(engine.assets.graph("timed")))))
    made = quantized(decoder, front, engine.assets.voices_dir)["mixed"]
    return {"float": decoder.SerializeToString(), "mixed": made.SerializeToString()}


def _pair(engine: KokoroEngine, unfused: bytes, precision: str, threads: int) -> tuple[Any, Any]:
    import onnxruntime as ort

    options, cpu = session_options(threads, 1, engine.config.spin_threads), engine.providers
    fused = ort.InferenceSession(str(engine.assets.decoder(precision)), options, providers=cpu)
    return ort.InferenceSession(unfused, options, providers=cpu), fused


def paired_times(sessions: tuple[Any, Any], feed: dict[str, Any], runs: int) -> tuple[list[float], list[float]]:
    seconds: tuple[list[float], list[float]] = ([], [])
    for session in sessions:
        session.run(None, feed)
    for run in range(runs):
        for i in (0, 1) if run % 2 == 0 else (1, 0):
            started = time.perf_counter()
            sessions[i].run(None, feed)
            seconds[i].append(time.perf_counter() - started)
    return seconds


def _snr_db(sessions: tuple[Any, Any], feed: dict[str, Any]) -> float:
    before, after = (np.asarray(s.run(None, feed)[0], dtype=np.float64) for s in sessions)
    return float(10 * np.log10(np.sum(before**2) / max(np.sum((after - before) ** 2), 1e-30)))


def window_arguments(doc: str) -> argparse.Namespace:
    """The options of a decoder-window A/B: ``--frames``, ``--runs``, ``--threads``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--frames", type=int, default=41)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    return parser.parse_args()


def main() -> None:
    args = window_arguments(__doc__)
    engine = KokoroEngine(EngineConfig(lanes=1))
    feed = window_feed(engine, args.frames)
    unfused = _unfused(engine)
    print(f"decoder window: {args.frames} frames, {args.runs} runs each, interleaved")
    print("decoder  threads  unfused ms  fused ms  fused/unfused (paired median)  SNR dB")
    for precision in ("mixed", "float"):
        for threads in args.threads:
            sessions = _pair(engine, unfused[precision], precision, threads)
            before, after = paired_times(sessions, feed, args.runs)
            ratio = float(np.median(np.array(after) / np.array(before)))
            print(
                f"{precision:7s}  {threads:7d}  {1000 * np.median(before):10.1f}  {1000 * np.median(after):8.1f}"
                f"  {ratio:29.3f}  {_snr_db(sessions, feed):6.1f}"
            )


if __name__ == "__main__":
    main()
