"""Audio formats: the size table on real Kokoro clips (raw and base64 bytes, bitrate, WER) and the
time to the first encoded byte for a real sentence fed in 100 ms pieces."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

from speakstream.audio import FORMATS, open_encoder
from speakstream.audio.decode import decode
from speakstream.bench.asr import corpus_wer, recognizer
from speakstream.bench.context import BenchContext
from speakstream.bench.tables import table
from speakstream.types import AudioChunk

NAME = "formats"
TITLE = "Audio formats: sizes, bitrates, WER and first-byte latency"
TABLE_FORMATS = {
    "PCM": ("pcm", None),
    "MP3 48k": ("mp3", 48_000),
    "AAC 32k fMP4": ("aac", 32_000),
    "Opus 32k": ("opus", 32_000),
}
VOICES = ["af_heart", "am_michael", "bf_emma", "bm_george"]
SENTENCES = [
    "Your table is booked for eight.",
    "The package arrives on Friday.",
    "Please hold while I check that.",
    "Your balance is forty two dollars.",
    "I have sent the link to your email.",
    "The store opens at nine tomorrow.",
]


def clips(quick: bool) -> list[tuple[str, str]]:
    pairs = [(v, s) for v in VOICES for s in SENTENCES]
    return pairs[::4] if quick else pairs


def encode_pieces(name: str, samples: Any, bitrate: int | None = None) -> list[bytes]:
    encoder = open_encoder(name, bitrate=bitrate)
    piece = 2400
    return [encoder.encode(samples[i : i + piece]) for i in range(0, len(samples), piece)] + [encoder.close()]


async def run(ctx: BenchContext) -> dict[str, Any]:
    return await asyncio.to_thread(_run, ctx)


def _run(ctx: BenchContext) -> dict[str, Any]:
    engine, asr = ctx.engine_source(), recognizer()
    chunks: list[tuple[str, AudioChunk]] = []
    for voice, sentence in clips(ctx.quick):
        chunks.append((sentence, engine.synthesize(sentence, voice=voice)))
    ctx.say(f"formats: {len(chunks)} clips synthesised")
    sizes = {label: _size_row(name, bitrate, chunks, asr) for label, (name, bitrate) in TABLE_FORMATS.items()}
    return {
        "clips": len(chunks),
        "audio_s": round(sum(c.duration_s for _, c in chunks), 2),
        "sizes": sizes,
        "first_byte": {name: _first_byte(name, chunks[0][1].samples) for name in FORMATS},
    }


def _size_row(name: str, bitrate: int | None, chunks: list[tuple[str, AudioChunk]], asr: Any) -> dict[str, Any]:
    raw = b64 = 0
    pairs = []
    for sentence, chunk in chunks:
        data = b"".join(encode_pieces(name, chunk.samples, bitrate))
        raw += len(data)
        b64 += len(base64.b64encode(data))
        samples, rate = decode(data, name)
        pairs.append((sentence, asr.transcribe(samples, rate).text))
    seconds = sum(c.duration_s for _, c in chunks)
    return {
        "raw_bytes": raw,
        "base64_bytes": b64,
        "kbps": round(raw * 8 / seconds / 1000, 1),
        "base64_overhead": round(b64 / raw - 1, 3),
        "wer": round(corpus_wer(pairs), 4),
    }


def _first_byte(name: str, samples: Any) -> dict[str, Any]:
    encoder = open_encoder(name)
    started = time.perf_counter()
    for index, i in enumerate(range(0, len(samples), 2400)):
        if encoder.encode(samples[i : i + 2400]):
            return {
                "pieces_fed": index + 1,
                "audio_fed_ms": (index + 1) * 100,
                "encode_ms": round(1000 * (time.perf_counter() - started), 2),
            }
    return {"pieces_fed": None, "audio_fed_ms": None, "encode_ms": None}


def markdown(result: dict[str, Any]) -> str:
    rows = [
        [
            label,
            r["raw_bytes"],
            r["base64_bytes"],
            f"+{100 * r['base64_overhead']:.1f}%",
            r["kbps"],
            f"{100 * r['wer']:.1f}%",
        ]
        for label, r in result["sizes"].items()
    ]
    sizes = table(["format", "raw bytes", "base64 bytes", "base64 cost", "measured kbps", "WER"], rows)
    first = table(
        ["format", "100 ms pieces fed before the first byte", "encode time to first byte ms"],
        [[n, r["pieces_fed"], r["encode_ms"]] for n, r in result["first_byte"].items()],
    )
    return (
        f"{result['clips']} Kokoro clips ({result['audio_s']} s), 4 voices. Published (24 clips): PCM 2,396,400 B; "
        f"MP3 308,304 / 411,072 B base64, 49.5 kbps; AAC 258,039 / 344,084 B, 41.6 kbps.\n\n{sizes}\n"
        f"A real Kokoro sentence fed to each encoder in 100 ms pieces:\n\n{first}"
    )
