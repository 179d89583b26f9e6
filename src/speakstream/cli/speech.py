"""``speakstream say`` and ``speakstream voices``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from speakstream.audio import FORMATS, open_encoder
from speakstream.text import chunk_text

EXTENSIONS = {f.extension: f.name for f in FORMATS.values()}


def register(commands: Any) -> None:
    say = commands.add_parser("say", help="speak text into an audio file")
    say.add_argument("text", help="the text, or - to read standard input")
    say.add_argument("-o", "--output", type=Path, default=Path("out.wav"), help="file to write (format from extension)")
    say.add_argument("--voice", default="af_heart", help="voice or blend, e.g. af_heart:0.7,af_bella:0.3")
    say.add_argument("--speed", type=float, default=1.0, help="0.5 to 2.0")
    say.add_argument("--format", choices=sorted(FORMATS), help="override the format the extension implies")
    say.add_argument("--server", help="speak through a running server (base URL) instead of locally")
    say.add_argument("--api-key", help="API key of the server")
    say.add_argument("--model-dir", type=Path, help="model directory for local synthesis")
    say.set_defaults(handler=say_command)
    voices = commands.add_parser("voices", help="list the voices")
    voices.add_argument("--json", action="store_true", help="print JSON")
    voices.add_argument("--model-dir", type=Path)
    voices.set_defaults(handler=voices_command)


def say_command(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    fmt = args.format or EXTENSIONS.get(args.output.suffix.lstrip(".").lower(), "wav")
    report = asyncio.run(_say_remote(args, text, fmt)) if args.server else _say_local(args, text, fmt)
    Console(stderr=True).print(report)
    return 0


def _say_local(args: argparse.Namespace, text: str, fmt: str) -> str:
    from speakstream.engine.config import EngineConfig
    from speakstream.engine.kokoro import KokoroEngine

    loaded = time.perf_counter()
    engine = KokoroEngine(EngineConfig(model_dir=args.model_dir))
    started = time.perf_counter()
    encoder = open_encoder(fmt)
    first = None
    audio_s = 0.0
    with args.output.open("wb") as out:
        for chunk_text_ in chunk_text(text):
            chunk = engine.synthesize(chunk_text_, voice=args.voice, speed=args.speed)
            out.write(encoder.encode(chunk.samples))
            first = first or time.perf_counter()
            audio_s += chunk.duration_s
        out.write(encoder.close())
    total = time.perf_counter() - started
    return (
        f"wrote {args.output} ({fmt}, {audio_s:.2f} s of audio): load {started - loaded:.2f} s, "
        f"first chunk {(first or started) - started:.2f} s, total {total:.2f} s, RTF {total / max(audio_s, 1e-9):.2f}"
    )


async def _say_remote(args: argparse.Namespace, text: str, fmt: str) -> str:
    from speakstream.client import fetch_audio

    result = await fetch_audio(args.server, text, api_key=args.api_key, voice=args.voice, speed=args.speed, format=fmt)
    args.output.write_bytes(bytes(result.audio))
    first = result.ttfb_s or 0.0
    return f"wrote {args.output} ({fmt}, {len(result.audio)} bytes) from {args.server}: first byte {first:.2f} s"


def voices_command(args: argparse.Namespace) -> int:
    from speakstream.engine.model.assets import locate
    from speakstream.engine.voices import by_language, voice_info

    names = sorted(locate(args.model_dir).voice_files())
    catalogue = [voice_info(n) for n in names]
    groups = by_language(catalogue)
    if args.json:
        print(json.dumps({"voices": [v.to_dict() for v in catalogue], "languages": groups}, indent=2))
        return 0
    table = Table(title=f"{len(catalogue)} Kokoro voices in {len(groups)} languages")
    for column in ("language", "G2P", "voices"):
        table.add_column(column)
    for group in groups:
        speaks = voice_info(group["voices"][0]).speaks
        table.add_row(f"{group['name']} ({group['language']})", G2P_NAMES[speaks.g2p], ", ".join(group["voices"]))
    Console().print(table)
    return 0


G2P_NAMES = {"english": "misaki", "espeak": "espeak-ng", "chinese": "misaki zh", "japanese": "misaki ja (cutlet)"}
