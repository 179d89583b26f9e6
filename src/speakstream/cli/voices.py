"""``speakstream voices [list|save|delete]``: the built-in voices and the saved ones, kept in the
local data directory (what a server started here loads) or, with ``--server``, a running server's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from speakstream.config import data_home
from speakstream.errors import SpeakstreamError
from speakstream.server.saved_voices import VoiceStore, saved_voice

SAVED_COLUMNS = ("name", "blend", "speed", "language", "description")
G2P_NAMES = {"english": "misaki", "espeak": "espeak-ng", "chinese": "misaki zh", "japanese": "misaki ja (cutlet)"}


def register(commands: Any) -> None:
    voices = commands.add_parser("voices", help="list the voices; save, list and delete saved voices")
    _common(voices)
    voices.add_argument("--model-dir", type=Path)
    voices.set_defaults(handler=voices_command, action="list")
    actions = voices.add_subparsers(dest="action")
    listing = actions.add_parser("list", help="the built-in voices and the saved ones")
    _common(listing)
    listing.add_argument("--model-dir", type=Path)
    save = actions.add_parser("save", help="save a blend under a name (replaces one of that name)")
    save.add_argument("name")
    save.add_argument("--blend", required=True, help="a voice or voices with weights: af_heart:0.6,af_bella:0.4")
    save.add_argument("--speed", type=float, help="its default speed (0.5 to 2.0)")
    save.add_argument("--language", help="the language it reads by default (es, pt-br, ja...)")
    save.add_argument("--dictionary", action="append", default=[], help="a pronunciation dictionary id (repeatable)")
    save.add_argument("--description")
    _common(save)
    delete = actions.add_parser("delete", help="delete a saved voice")
    delete.add_argument("name")
    _common(delete)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--server", help="a running server's base URL (default: the local data directory)")
    parser.add_argument("--api-key", help="API key of the server")
    parser.add_argument(
        "--data-dir", type=Path, help="the data directory (default: SPEAKSTREAM_DATA_DIR or ~/.local/share/speakstream)"
    )


def voices_command(args: argparse.Namespace) -> int:
    if args.action == "save":
        body = {
            "name": args.name,
            "blend": args.blend,
            "speed": args.speed,
            "language": args.language,
            "pronunciation_dictionaries": args.dictionary or None,
            "description": args.description,
        }
        _print(args, _save(args, {k: v for k, v in body.items() if v is not None}))
        return 0
    if args.action == "delete":
        if args.server:
            _call(args, "DELETE", f"/v1/saved-voices/{args.name}")
        else:
            _store(args).delete(args.name)
        print(f"deleted {args.name}")
        return 0
    return _list(args)


def _save(args: argparse.Namespace, body: dict[str, Any]) -> dict[str, Any]:
    """Save ``body`` (replacing a voice of its name), on the server or in the local store."""
    if args.server:
        found = httpx.get(f"{args.server.rstrip('/')}/v1/saved-voices/{args.name}", headers=_headers(args))
        if found.status_code == 200:
            return _call(args, "PATCH", f"/v1/saved-voices/{args.name}", body)
        return _call(args, "POST", "/v1/saved-voices", body)
    store = _store(args)
    if store.find(args.name) is not None:
        return store.update(args.name, body).to_dict()
    return store.create(saved_voice(body)).to_dict()


def _list(args: argparse.Namespace) -> int:
    from speakstream.engine.voices import by_language, voice_info

    if args.server:
        saved = _call(args, "GET", "/v1/saved-voices")["voices"]
        built_in = [voice_info(v["id"]) for v in _call(args, "GET", "/v1/audio/voices")["voices"] if not v["saved"]]
    else:
        from speakstream.engine.model.assets import locate

        saved = [v.to_dict() for v in _store(args).all()]
        built_in = [voice_info(n) for n in sorted(locate(getattr(args, "model_dir", None)).voice_files())]
    groups = by_language(built_in)
    if args.json:
        print(json.dumps({"voices": [v.to_dict() for v in built_in], "languages": groups, "saved": saved}, indent=2))
        return 0
    table = Table(title=f"{len(built_in)} Kokoro voices in {len(groups)} languages")
    for column in ("language", "G2P", "voices"):
        table.add_column(column)
    for group in groups:
        speaks = voice_info(group["voices"][0]).speaks
        table.add_row(f"{group['name']} ({group['language']})", G2P_NAMES[speaks.g2p], ", ".join(group["voices"]))
    console = Console()
    console.print(table)
    if saved:
        mine = Table(title=f"{len(saved)} saved voice{'' if len(saved) == 1 else 's'}")
        for column in SAVED_COLUMNS:
            mine.add_column(column)
        for voice in saved:
            mine.add_row(*(str(voice.get(c) if voice.get(c) is not None else "") for c in SAVED_COLUMNS))
        console.print(mine)
    return 0


def _store(args: argparse.Namespace) -> VoiceStore:
    return local_store(args.data_dir)


def local_store(data_dir: Path | None = None) -> VoiceStore:
    """The saved voices of ``data_dir`` (default: ``SPEAKSTREAM_DATA_DIR``, else the user's data
    directory): those a server started here loads."""
    from speakstream.config import ServerConfig

    return VoiceStore.open((data_dir or ServerConfig.from_env().data_dir or data_home()) / "voices")


def _headers(args: argparse.Namespace) -> dict[str, str]:
    return {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}


def _call(args: argparse.Namespace, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """The server's JSON answer; its error as a ``SpeakstreamError`` with the server's code."""
    response = httpx.request(method, args.server.rstrip("/") + path, json=body, headers=_headers(args), timeout=30)
    if response.status_code >= 400:
        try:
            error = response.json()["error"]
        except (ValueError, KeyError, TypeError):
            error = {"code": "server_error", "message": f"HTTP {response.status_code}"}
        raise SpeakstreamError(error["message"], code=error["code"])
    answer: dict[str, Any] = response.json() if response.content else {}
    return answer


def _print(args: argparse.Namespace, voice: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(voice, indent=2))
    else:
        print(f"saved {voice['name']}: {voice['blend']}" + (f" at {voice['speed']}x" if voice.get("speed") else ""))
