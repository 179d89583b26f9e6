"""The generator's STFT as a convolution (``stft_conv.stft_as_convolution``) against the export's.

    python scripts/ab_stft.py [--frames 41] [--runs 30] [--threads 1 2]

Not applied to the derived graphs (see ``stft_as_convolution``): this measures both sides of
that choice. Speed: the assets' decoders against the same decoders with their STFT rewritten, one
window of ``--frames`` frames, the pair alternated, median times and the median of the paired
ratios (rewritten / export: under 1 is faster). Sound: the whole ``fast`` graph with and without
the rewrite on a few sentences and voices, each one's log-mel distance to the model's own export
and its energy at 4-12 kHz against the export's (dB, all audio pooled).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from ab_fusion import paired_times, window_arguments
from profile_decoder import window_feed
from stft_conv import stft_as_convolution

from speakstream.bench.spectra import logmel_distance
from speakstream.engine.config import EngineConfig, session_options
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.model.feeds import front_feed

TEXTS = (
    "Thanks for waiting, I found your booking.",
    "Please bring your insurance card and arrive ten minutes early.",
    "She sells sea shells by the sea shore.",
)
VOICES = ("af_heart", "am_michael", "bf_emma")


def _rewritten(path: Any) -> bytes:
    model = onnx.load(str(path))
    if stft_as_convolution(model) != 1:
        raise SystemExit(f"{path}: no STFT to rewrite")
    return model.SerializeToString()


def _sessions(engine: KokoroEngine, path: Any, threads: int) -> tuple[Any, Any]:
    import onnxruntime as ort

    options, cpu = session_options(threads, 1, engine.config.spin_threads), engine.providers
    export = ort.InferenceSession(str(path), options, providers=cpu)
    return export, ort.InferenceSession(_rewritten(path), options, providers=cpu)


def _speed(engine: KokoroEngine, frames: int, runs: int, threads: list[int]) -> None:
    feed = window_feed(engine, frames)
    print(f"decoder window: {frames} frames, {runs} runs each, interleaved")
    print("decoder  threads  export ms  convolution ms  convolution/export (paired median)")
    for precision in ("mixed", "float"):
        for count in threads:
            before, after = paired_times(_sessions(engine, engine.assets.decoder(precision), count), feed, runs)
            ratio = float(np.median(np.array(after) / np.array(before)))
            times = f"{1000 * np.median(before):9.1f}  {1000 * np.median(after):14.1f}"
            print(f"{precision:7s}  {count:7d}  {times}  {ratio:.3f}")


def _high_band(audio: np.ndarray[Any, Any]) -> float:
    power = np.abs(np.fft.rfft(audio.astype(np.float64))) ** 2
    return float(power[np.fft.rfftfreq(len(audio), 1 / 24000) >= 4000].sum())


def _sound(engine: KokoroEngine) -> None:
    import onnxruntime as ort

    export = ort.InferenceSession(str(engine.assets.graph("timed")), providers=engine.providers)
    fast, rewritten = _sessions(engine, engine.assets.graph("fast"), 2)
    distances: dict[str, list[float]] = {"fast": [], "fast, STFT a convolution": []}
    high = dict.fromkeys(["export", *distances], 0.0)
    for text in TEXTS:
        tokens = engine.phonemizer.phonemize(text).tokens
        for voice in VOICES:
            feed = front_feed(tokens, engine.voice_bank.style(voice, len(tokens)), 1.0)
            audio = {
                name: np.asarray(session.run(None, feed)[0], dtype=np.float32).ravel()
                for name, session in (("export", export), ("fast", fast), ("fast, STFT a convolution", rewritten))
            }
            for name, values in distances.items():
                values.append(logmel_distance(audio["export"], audio[name]))
            for name in high:
                high[name] += _high_band(audio[name])
    print(f"\n{len(TEXTS) * len(VOICES)} utterances, whole graph: log-mel to the export dB (mean, max); 4-12 kHz")
    for name, values in distances.items():
        louder = 10 * np.log10(high[name] / high["export"])
        print(f"{name:27s}  {np.mean(values):.2f}, {np.max(values):.2f}  {louder:+.1f} dB against the export")


def main() -> None:
    args = window_arguments(__doc__)
    engine = KokoroEngine(EngineConfig(parallel=1))
    _speed(engine, args.frames, args.runs, args.threads)
    _sound(engine)


if __name__ == "__main__":
    main()
