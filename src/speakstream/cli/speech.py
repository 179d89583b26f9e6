"""``speakstream say``."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from speakstream.audio import FORMATS, open_encoder
from speakstream.audio.formats import audio_format
from speakstream.engine.base import check_speed
from speakstream.engine.phonemes.inline import as_inline
from speakstream.errors import InvalidInput
from speakstream.text import chunk_text

EXTENSIONS = {f.extension: f.name for f in FORMATS.values()}


def register(commands: Any) -> None:
    say = commands.add_parser("say", help="speak text into an audio file")
    say.add_argument("text", help="the text, or - to read standard input")
    say.add_argument("-o", "--output", type=Path, default=Path("out.wav"), help="file to write (format from extension)")
    say.add_argument("--voice", default="af_heart", help="voice, blend (af_heart:0.7,af_bella:0.3) or saved voice")
    say.add_argument("--speed", type=float, help="0.5 to 2.0 (default: the saved voice's, else 1.0)")
    say.add_argument("--format", help=f"override the format the extension implies: {', '.join(sorted(FORMATS))}")
    say.add_argument("--phonemes", action="store_true", help="the text is phonemes (IPA or Kokoro's symbols)")
    say.add_argument("--server", help="speak through a running server (base URL) instead of locally")
    say.add_argument("--api-key", help="API key of the server")
    say.add_argument("--model-dir", type=Path, help="model directory for local synthesis")
    say.set_defaults(handler=say_command)


def say_command(args: argparse.Namespace) -> int:
    """Speak ``args.text`` into ``args.output``: the server's checks, codes and hints before any
    work, and the file written only whole (an error leaves none behind)."""
    text = sys.stdin.read() if args.text == "-" else args.text
    fmt = output_format(args.output, args.format)
    if args.speed is not None:
        check_speed(args.speed)
    if not text.strip():
        raise InvalidInput("the text has nothing speakable", code="empty_text")
    if args.phonemes:
        text = as_inline(text)
    partial = args.output.with_name(f".{args.output.name}.partial")
    try:
        if args.server:
            audio, report = asyncio.run(_say_remote(args, text, fmt))
            partial.write_bytes(audio)
        else:
            report = _say_local(args, text, fmt, partial)
        partial.replace(args.output)
    finally:
        partial.unlink(missing_ok=True)
    Console(stderr=True).print(report)
    return 0


def output_format(output: Path, requested: str | None) -> str:
    """The format ``--format`` names, else the one ``output``'s extension names: an extension no
    format has is the server's ``invalid_format``, not a WAV under another name."""
    if requested:
        return audio_format(requested).name
    suffix = output.suffix.lstrip(".").lower()
    if suffix not in EXTENSIONS:
        known = ", ".join(f".{e}" for e in sorted(EXTENSIONS))
        raise InvalidInput(
            f"cannot tell the format from {output.name!r}; name the file {known}, or pass --format",
            code="invalid_format",
        )
    return EXTENSIONS[suffix]


def _say_local(args: argparse.Namespace, text: str, fmt: str, path: Path) -> str:
    from speakstream.engine.config import EngineConfig
    from speakstream.engine.kokoro import KokoroEngine

    loaded = time.perf_counter()
    engine = KokoroEngine(EngineConfig(model_dir=args.model_dir))
    voice, speed = local_voice(args.voice, args.speed)
    engine.check_voice(voice)
    started = time.perf_counter()
    encoder = open_encoder(fmt)
    first, audio_s = None, 0.0
    with path.open("wb") as out:
        for piece in chunk_text(text):
            try:
                chunk = engine.synthesize(piece, voice=voice, speed=speed)  # inline phonemes stay as given
            except InvalidInput as exc:
                if exc.code == "empty_text":
                    continue  # nothing speakable in this chunk; the reply goes on, as on the server
                raise
            out.write(encoder.encode(chunk.samples))
            first = first or time.perf_counter()
            audio_s += chunk.duration_s
        out.write(encoder.close())
    if audio_s == 0:
        raise InvalidInput("the text has nothing speakable", code="empty_text")
    total = time.perf_counter() - started
    return (
        f"wrote {args.output} ({fmt}, {audio_s:.2f} s of audio): load {started - loaded:.2f} s, "
        f"first chunk {(first or started) - started:.2f} s, total {total:.2f} s, RTF {total / audio_s:.2f}"
    )


async def _say_remote(args: argparse.Namespace, text: str, fmt: str) -> tuple[bytes, str]:
    from speakstream.client import fetch_audio

    given: dict[str, Any] = {"normalize": False, "text_type": "text"} if args.phonemes else {}
    options = {"voice": args.voice, "speed": args.speed, "format": fmt, **given}
    result = await fetch_audio(args.server, text, api_key=args.api_key, **options)
    first = result.ttfb_s or 0.0
    report = f"wrote {args.output} ({fmt}, {len(result.audio)} bytes) from {args.server}: first byte {first:.2f} s"
    return bytes(result.audio), report


def local_voice(name: str, speed: float | None) -> tuple[str, float]:
    """The spec and speed ``name`` speaks with here: a voice saved in the local data directory
    brings its blend, language and speed (``speed`` wins); any other name is a voice or blend."""
    from speakstream.cli.voices import local_store

    saved = local_store().find(name)
    if saved is None:
        return name, speed or 1.0
    return saved.spec, speed or saved.speed or 1.0
