"""Every language: error rate of every voice reading sentences written for its language
(multilingual Whisper base; CER for Chinese, Japanese and Hindi), and first audio of the
four-sentence reply, translated, over the WebSocket."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from speakstream.bench.asr import CHARACTER_RATE_LANGUAGES, error_rate, multilingual_recognizer
from speakstream.bench.context import BenchContext
from speakstream.bench.experiments.engine import peer
from speakstream.bench.speech import speak_timed
from speakstream.bench.stats import summary
from speakstream.bench.tables import table
from speakstream.client import SpeechSession
from speakstream.data import language_samples
from speakstream.engine.base import pieces
from speakstream.engine.phonemes.languages import all_languages
from speakstream.types import join_pieces

NAME = "languages"
PEER_LANGUAGES = {"zh": "cmn"}
"""kokoro-onnx's espeak-ng language where its name differs from our tag."""
TITLE = "Languages: every voice in its own language (error rate) and first audio per language"


def whisper_code(tag: str) -> str:
    """The language Whisper transcribes a tag's speech in: ``pt-br`` -> ``pt``; Hindi -> Urdu
    (see ``scored``)."""
    asr = language_samples()[tag].get("asr")
    return str(asr["language"]) if asr else tag.split("-")[0]


def scored(tag: str) -> list[tuple[str, str]]:
    """(text to speak, reference to score the transcript against) for a language's sentences.
    Whisper writes Hindi speech in Urdu script, so Hindi's references are the same sentences
    written in Urdu script."""
    sample = language_samples()[tag]
    references = sample.get("asr", {}).get("references") or sample["sentences"]
    return list(zip(sample["sentences"], references, strict=True))


async def run(ctx: BenchContext) -> dict[str, Any]:
    accuracy = await asyncio.to_thread(_accuracy, ctx)
    return {"accuracy": accuracy, "first_audio": await _first_audio(ctx)}


def _accuracy(ctx: BenchContext) -> dict[str, Any]:
    if ctx.quick:  # a quick run scores no peer, so it loads none
        return _accuracy_with(ctx, None)
    with tempfile.TemporaryDirectory() as tmp:
        return _accuracy_with(ctx, peer(ctx.engine_source().assets, Path(tmp)))


def _accuracy_with(ctx: BenchContext, kokoro_onnx: Any | None) -> dict[str, Any]:
    engine, asr = ctx.engine_source(), multilingual_recognizer()
    rows: dict[str, Any] = {}
    for language in all_languages():
        voices = [v.name for v in engine.voices() if v.speaks == language]
        voices = voices[:1] if ctx.quick else voices
        sentences = scored(language.tag)[: 1 if ctx.quick else None]
        code = whisper_code(language.tag)
        per_voice: dict[str, float] = {}
        pairs_all = []
        for voice in voices:
            pairs = _heard(asr, sentences, code, partial(_whole, engine, voice))
            per_voice[voice] = round(error_rate(pairs, code), 4)
            pairs_all += pairs
        peer_pairs = (
            []
            if kokoro_onnx is None
            else _heard(asr, sentences, code, partial(_peer, kokoro_onnx, voices[0], language.tag))
        )
        windowed_pairs = _heard(asr, sentences, code, partial(_windowed, engine, voices[0]))
        rows[language.tag] = {
            "name": language.name,
            "peer_rate": round(error_rate(peer_pairs, code), 4) if peer_pairs else None,
            "peer_voice": voices[0],  # the language's first voice: also the one decoded in windows
            "windowed_rate": round(error_rate(windowed_pairs, code), 4),
            "metric": "CER" if code in CHARACTER_RATE_LANGUAGES else "WER",
            "voices": per_voice,
            "clips": len(pairs_all),
            "rate": round(error_rate(pairs_all, code), 4),
            "example": pairs_all[0] if pairs_all else None,
        }
        ctx.say(f"languages {language.tag}: {rows[language.tag]['metric']} {rows[language.tag]['rate']:.1%}")
    return rows


Speak = Callable[[str], tuple[NDArray[np.float32], int]]
"""A text's audio and its sample rate."""


def _heard(asr: Any, sentences: list[tuple[str, str]], code: str, speak: Speak) -> list[tuple[str, str]]:
    """(reference, transcript) of each of a language's sentences as ``speak`` reads it."""
    return [(reference, asr.transcribe(*speak(text), language=code).text) for text, reference in sentences]


def _whole(engine: Any, voice: str, text: str) -> tuple[NDArray[np.float32], int]:
    chunk = engine.synthesize(text, voice=voice)
    return chunk.samples, chunk.sample_rate


def _windowed(engine: Any, voice: str, text: str) -> tuple[NDArray[np.float32], int]:
    """Decoded in windows, as a chunk that opens a reply (``Engine.stream``: what the server sends)."""
    chunk = join_pieces(text, list(pieces(engine.stream(text, voice=voice))))
    return chunk.samples, chunk.sample_rate


def _peer(kokoro_onnx: Any, voice: str, tag: str, text: str) -> tuple[NDArray[np.float32], int]:
    """kokoro-onnx (espeak-ng) reading ``text``."""
    audio, rate = kokoro_onnx.create(text, voice=voice, lang=PEER_LANGUAGES.get(tag, tag))
    return audio, rate


async def _first_audio(ctx: BenchContext) -> dict[str, Any]:
    """The translated reply per language, languages interleaved trial by trial."""
    trials = ctx.trials(5, 1)
    times: dict[str, list[float]] = {language.tag: [] for language in all_languages()}
    voices = {language.tag: _first_voice(ctx, language.tag) for language in all_languages()}
    async with SpeechSession(ctx.ws_url) as session:
        for tag, voice in [] if ctx.quick else voices.items():  # warm every G2P (quick: no claims)
            await speak_timed(session, language_samples()[tag]["sentences"][0], voice=voice)
        for trial in range(trials):
            order = list(times) if trial % 2 == 0 else list(reversed(times))
            for tag in order:
                reply = ctx.sized(language_samples()[tag]["reply"])
                _, playback = await speak_timed(session, reply, voice=voices[tag])
                times[tag].append(round(playback.ttfa_s * 1000, 1))
            ctx.say(f"languages first audio trial {trial + 1}/{trials}")
    return {tag: {"voice": voices[tag], "ttfa_ms": summary(values)} for tag, values in times.items()}


def _first_voice(ctx: BenchContext, tag: str) -> str:
    return next(v.name for v in ctx.engine_source().voices() if v.speaks.tag == tag)


def markdown(result: dict[str, Any]) -> str:
    accuracy, first = result["accuracy"], result["first_audio"]
    rows = [
        [
            f"{r['name']} ({tag})",
            len(r["voices"]),
            r["clips"],
            r["metric"],
            f"{100 * r['rate']:.1f}%",
            f"{100 * max(r['voices'].values()):.1f}% ({max(r['voices'], key=r['voices'].get)})",
            f"{100 * r['voices'][r['peer_voice']]:.1f}% / {100 * r['windowed_rate']:.1f}%",
            "-" if r["peer_rate"] is None else f"{100 * r['peer_rate']:.1f}% ({r['peer_voice']})",
            first[tag]["ttfa_ms"]["p50"],
            first[tag]["voice"],
        ]
        for tag, r in accuracy.items()
    ]
    headers = [
        "language",
        "voices",
        "clips",
        "metric",
        "error rate",
        "worst voice",
        "first voice: whole / windowed",
        "kokoro-onnx (espeak-ng)",
        "first audio p50 ms",
        "voice",
    ]
    worst = statistics.fmean(r["rate"] for r in accuracy.values())
    whole = statistics.fmean(r["voices"][r["peer_voice"]] for r in accuracy.values())
    windowed = statistics.fmean(r["windowed_rate"] for r in accuracy.values())
    return (
        "Every voice reads 3 sentences written for its language (numbers and punctuation included, "
        "`speakstream/data/languages.json`); the multilingual Whisper base transcribes them (WER, or CER "
        "for zh, ja and hi; this small model's own errors are part of each figure). Whisper writes Hindi "
        "speech in Urdu script, so Hindi is scored against the same sentences written in Urdu script. "
        "Beside it, kokoro-onnx 0.6.1 (espeak-ng for every language) on the same sentences with the "
        "language's first voice, and that voice's sentences decoded in windows as the chunk that opens "
        "a reply (`KokoroEngine.stream`, what the server sends; the other error rates decode each sentence whole). "
        "First audio: the "
        "four-sentence reply translated, sent whole over the WebSocket, chunker on.\n\n"
        + table(headers, rows)
        + f"\nMean error rate over the languages: {100 * worst:.1f}%; first voice, whole {100 * whole:.1f}% "
        f"against windowed {100 * windowed:.1f}%.\n"
    )
