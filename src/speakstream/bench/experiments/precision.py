"""The decoder's precision: ``mixed`` (first stage and noise branch int8, the default) and ``int8``
(every convolution of the generator int8: crowded openings only) against ``float``, on the same
front output; the model's own int8 export on the same tokens, for scale.

For the accuracy set's sentences and the 40-word sentence, in three of its voices: Whisper's word
error rate on each decoder's audio, the log-mel distance of each to the float decoder's, and the
compute of each decoder on a reply's opening window and on the whole utterance, the decoders
interleaved.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.bench.asr import corpus_wer, recognizer
from speakstream.bench.context import BenchContext
from speakstream.bench.experiments.accuracy import SENTENCES, VOICES
from speakstream.bench.experiments.streaming import FORTY_WORDS
from speakstream.bench.spectra import logmel_distance
from speakstream.bench.stats import ratio, summary
from speakstream.bench.tables import table
from speakstream.engine.config import session_options
from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.model.feeds import PHASE, decoder_feed, front_feed
from speakstream.engine.windows.policy import WindowPolicy

NAME = "precision"
TITLE = "Decoder precision: mixed (partly int8) and int8 against float"
_POLICY = WindowPolicy()
OPENING_FRAMES = (
    _POLICY.seams.lead_context_frames + _POLICY.opening.least_frames + (_POLICY.opening.context_after_frames or 0)
)
"""A reply's opening window as the engine decodes it (16 frames, 4 of lead and 4 of context after it)."""
DECODERS = ("float", "mixed", "int8")


async def run(ctx: BenchContext) -> dict[str, Any]:
    return await asyncio.to_thread(_run, ctx)


def _run(ctx: BenchContext) -> dict[str, Any]:
    engine, asr = ctx.engine_source(), recognizer()
    sessions = _sessions(engine)
    voices = VOICES[:1] if ctx.quick else VOICES[:3]
    texts = SENTENCES[:3] if ctx.quick else [*SENTENCES, FORTY_WORDS]
    heard: dict[str, list[tuple[str, str]]] = {name: [] for name in DECODERS}
    distance: dict[str, list[float]] = {name: [] for name in (*DECODERS[1:], "int8 export")}
    seconds: dict[str, dict[str, list[float]]] = {n: {"opening": [], "whole": []} for n in DECODERS}
    audio_s = 0.0
    for voice in voices:
        for i, text in enumerate(texts):
            feed, whole, opening = _inputs(engine, sessions, text, voice)
            audio = _timed_decodes(sessions, {"opening": opening, "whole": whole}, seconds, flip=i % 2 == 1)
            audio["int8 export"] = sessions["int8 export"].run(["audio"], feed)[0].ravel()
            audio_s += len(audio["float"]) / engine.sample_rate
            for name, samples in audio.items():
                if name in heard:
                    heard[name].append((text, asr.transcribe(samples, engine.sample_rate).text))
                if name != "float":
                    distance[name].append(logmel_distance(audio["float"], samples))
        ctx.say(f"precision {voice}: done")
    return _summarise(heard, distance, seconds, audio_s)


def _sessions(engine: KokoroEngine) -> dict[str, Any]:
    import onnxruntime as ort

    options = session_options(engine.config.intra_op_threads, 1, False)
    paths = {
        "front": engine.assets.split("front"),
        "float": engine.assets.decoder("float"),
        "mixed": engine.assets.decoder("mixed"),
        "int8": engine.assets.decoder("int8"),
        "int8 export": engine.assets.graph("timed"),
    }
    cpu = ["CPUExecutionProvider"] if engine.device == "cpu" else engine.providers
    return {name: ort.InferenceSession(str(path), options, providers=cpu) for name, path in paths.items()}


def _inputs(engine: KokoroEngine, sessions: dict[str, Any], text: str, voice: str) -> tuple[dict[str, Any], ...]:
    """The whole graph's feed, and the decoders' inputs from the front on it: whole, and the
    opening window."""
    tokens = engine.phoneme_windows(text, engine.check_voice(voice).speaks)[0].tokens
    style = engine.voice_bank.style(voice, len(tokens))
    feed = front_feed(tokens, style, 1.0)
    _, *outputs = sessions["front"].run(None, feed)
    width = next(i.shape[-1] for i in sessions["float"].get_inputs() if i.name == PHASE)
    phase = np.zeros((1, 1, width), np.float32)
    return feed, decoder_feed(outputs, style, phase), decoder_feed(outputs, style, phase, 0, OPENING_FRAMES)


def _timed_decodes(
    sessions: dict[str, Any],
    feeds: dict[str, dict[str, Any]],
    seconds: dict[str, dict[str, list[float]]],
    *,
    flip: bool,
) -> dict[str, NDArray[np.float32]]:
    """Each decoder on the opening window, then on the whole (``flip``: in the reverse order); the
    whole audio of each."""
    audio = {}
    for name in reversed(DECODERS) if flip else DECODERS:
        for kind, feed in feeds.items():
            started = time.perf_counter()
            out = sessions[name].run(None, feed)[0].ravel()
            seconds[name][kind].append(time.perf_counter() - started)
            if kind == "whole":
                audio[name] = out
    return audio


def _summarise(
    heard: dict[str, list[tuple[str, str]]],
    distance: dict[str, list[float]],
    seconds: dict[str, dict[str, list[float]]],
    audio_s: float,
) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys([*heard, *distance]):
        pairs = heard.get(name)
        row: dict[str, Any] = {"utterances": len(pairs or distance[name])}
        if pairs is not None:
            row["wer"] = round(corpus_wer(pairs), 4)
        if name in distance:
            row["logmel_db"] = round(float(np.mean(distance[name])), 2)
        if name in seconds:
            row["opening_ms"] = summary(seconds[name]["opening"], scale=1000)
            row["audio_per_s"] = round(audio_s / sum(seconds[name]["whole"]), 2)
        rows[name] = row
    reference = rows["float"]
    compute = {
        name: {
            "opening": ratio(rows[name]["opening_ms"]["p50"], reference["opening_ms"]["p50"]),
            "whole": ratio(rows[name]["audio_per_s"], reference["audio_per_s"]),
        }
        for name in seconds
        if name != "float"
    }
    return {"rows": rows, "audio_s": round(audio_s, 1), "mixed_vs_float": compute["mixed"], "vs_float": compute}


def markdown(result: dict[str, Any]) -> str:
    rows = []
    for name, r in result["rows"].items():
        opening = r.get("opening_ms")
        rows.append(
            [
                name,
                r["utterances"],
                f"{100 * r['wer']:.1f}%" if "wer" in r else "",
                r.get("logmel_db", "0 (reference)" if name == "float" else ""),
                f"{opening['p50']} / {opening['mean']}" if opening else "",
                r.get("audio_per_s", ""),
            ]
        )
    headers = [
        "decoder",
        "utterances",
        "WER (Whisper)",
        "log-mel distance to float, dB",
        f"opening window ({OPENING_FRAMES} frames) p50 / mean ms",
        "whole decode, audio s per s",
    ]
    m = result["mixed_vs_float"]
    note = (
        f"\nMixed against float: the opening window in **{m['opening']}x** the time, whole utterances "
        f"at **{m['whole']}x** the audio per second ({result['audio_s']} s of audio; the decoders "
        "interleaved, on the same front output)."
    )
    if (int8 := result.get("vs_float", {}).get("int8")) is not None:  # runs before it: not said
        note += (
            f" Int8 against float: the opening window in **{int8['opening']}x** the time, whole "
            f"utterances at **{int8['whole']}x**; it decodes only a crowded reply's opening window "
            "(more replies waiting for their first audio than the lanes)."
        )
    note += (
        " The int8 export is the model file as published (the whole graph, every convolution on "
        "8-bit activations): its distance is what the model's own quantisation costs.\n"
    )
    return table(headers, rows) + note
