"""``speakstream phonemes``: what the G2P makes of a text in a language, word by word (what a
pronunciation rule would replace), locally (no model needed) or from a running server."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from speakstream.errors import SpeakstreamError


def register(commands: Any) -> None:
    phonemes = commands.add_parser("phonemes", help="show the phonemes the G2P makes of a text")
    phonemes.add_argument("text", help="the text, or - to read standard input")
    phonemes.add_argument("--language", default="en-us", help="a language tag (en-us, es, ja...) or Kokoro's letter")
    phonemes.add_argument("--no-normalize", action="store_true", help="read the text as it is (no number words)")
    phonemes.add_argument("--json", action="store_true", help="print JSON")
    phonemes.add_argument("--server", help="ask a running server (base URL) instead of the local G2P")
    phonemes.add_argument("--api-key", help="API key of the server")
    phonemes.set_defaults(handler=phonemes_command)


def phonemes_command(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    made = _remote(args, text) if args.server else _local(args, text)
    if args.json:
        print(json.dumps(made, ensure_ascii=False, indent=2))
        return 0
    print(made["phonemes"])
    count = len(made["words"])
    table = Table(title=f"{count} word{'' if count == 1 else 's'} in {made['language']}")
    table.add_column("word")
    table.add_column("phonemes")
    for word in made["words"]:
        table.add_row(word["text"], word["phonemes"])
    Console(stderr=True).print(table)
    return 0


def _local(args: argparse.Namespace, text: str) -> dict[str, Any]:
    from speakstream.engine.base import check_text
    from speakstream.engine.phonemes.languages import parse_language
    from speakstream.engine.phonemes.normalize import normalize
    from speakstream.engine.phonemes.phonemizer import Phonemizer

    language = parse_language(args.language)
    prepare = None if args.no_normalize else (lambda plain: normalize(plain, language))
    made = Phonemizer().phonemize(check_text(text), language, prepare=prepare)
    words = [{"text": w.text, "phonemes": made.phonemes[w.first : w.end]} for w in made.words]
    return {"language": language.tag, "phonemes": made.phonemes, "tokens": list(made.tokens), "words": words}


def _remote(args: argparse.Namespace, text: str) -> dict[str, Any]:
    body = {"text": text, "language": args.language, "normalize": not args.no_normalize}
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    response = httpx.post(f"{args.server.rstrip('/')}/v1/phonemize", json=body, headers=headers, timeout=60)
    answer: dict[str, Any] = response.json()
    if response.status_code >= 400:
        raise SpeakstreamError(answer["error"]["message"], code=answer["error"]["code"])
    return answer
