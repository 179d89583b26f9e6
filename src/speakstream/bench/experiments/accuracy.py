"""Do the words come back? Word error rate (faster-whisper, the shipped offline model) for
several voices and sentences, for ``speakstream say``, and word-timestamp agreement."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from speakstream.audio.decode import decode
from speakstream.bench.asr import corpus_wer, recognizer, timestamp_agreement
from speakstream.bench.context import BenchContext
from speakstream.bench.tables import table

NAME = "accuracy"
TITLE = "Accuracy: word error rate and word timestamps against Whisper"
SENTENCES = [
    "Thanks for waiting, I found your booking.",
    "Your flight to Lisbon leaves tomorrow morning from gate twelve.",
    "I have moved your seat to an aisle near the front of the plane.",
    "Is there anything else you would like me to change for you?",
    "Please bring your insurance card and arrive ten minutes early.",
    "Most people in your situation pick the family plan.",
]
VOICES = ["af_heart", "am_michael", "bf_emma", "bm_george", "af_bella"]


async def run(ctx: BenchContext) -> dict[str, Any]:
    return await asyncio.to_thread(_run, ctx)


def _run(ctx: BenchContext) -> dict[str, Any]:
    engine, asr = ctx.engine_source(), recognizer()
    voices = VOICES[:3] if ctx.quick else VOICES
    sentences = SENTENCES[:2] if ctx.quick else SENTENCES
    per_voice, offsets = {}, []
    for voice in voices:
        pairs = []
        for text in sentences:
            chunk = engine.synthesize(text, voice=voice)
            heard = asr.transcribe(chunk.samples, chunk.sample_rate)
            pairs.append((text, heard.text))
            agreement = timestamp_agreement(chunk.words, heard)
            if agreement is not None:
                offsets.append(agreement)
        per_voice[voice] = {"wer": round(corpus_wer(pairs), 4), "clips": len(pairs)}
        ctx.say(f"accuracy {voice}: WER {per_voice[voice]['wer']:.1%}")
    overall = statistics.fmean(v["wer"] for v in per_voice.values())
    return {
        "voices": per_voice,
        "wer": round(overall, 4),
        "timestamp_mae_ms": round(1000 * statistics.fmean(offsets), 1) if offsets else None,
        "say_cli": _say_cli(" ".join(sentences[:2])),
    }


def _say_cli(text: str) -> dict[str, Any]:
    """``speakstream say`` end to end (a subprocess), transcribed back."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "say.wav"
        command = [sys.executable, "-m", "speakstream", "say", text, "-o", str(out), "--voice", "af_sarah"]
        subprocess.run(command, check=True, capture_output=True, timeout=300)
        samples, rate = decode(out.read_bytes(), "wav")
    heard = recognizer().transcribe(samples, rate).text
    return {
        "command": "speakstream say TEXT -o say.wav --voice af_sarah",
        "text": text,
        "heard": heard,
        "wer": round(corpus_wer([(text, heard)]), 4),
    }


def markdown(result: dict[str, Any]) -> str:
    rows = [[voice, r["clips"], f"{100 * r['wer']:.1f}%"] for voice, r in result["voices"].items()]
    rows.append(
        ["**all voices**", sum(r["clips"] for r in result["voices"].values()), f"**{100 * result['wer']:.1f}%**"]
    )
    say = result["say_cli"]
    return (
        table(["voice", "clips", "WER"], rows)
        + f'\n`{say["command"]}` transcribes back with WER {100 * say["wer"]:.1f}% (heard: "{say["heard"]}").\n'
        + f"\nWord timestamps from the model's durations vs Whisper's word timestamps: mean absolute difference "
        f"**{result['timestamp_mae_ms']} ms** (word starts).\n"
    )
