"""``speakstream agent demo`` and ``speakstream agent chat``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from speakstream.agent.demo import DEFAULT_PROMPT, DemoResult, run_demo, write_wav
from speakstream.agent.sources import LlamaCppServer, OpenAISource, ReplaySource, TextSource
from speakstream.agent.voice_agent import MODES


def register(commands: Any) -> None:
    parser = commands.add_parser("agent", help="voice agent: LLM text stream -> speech")
    actions = parser.add_subparsers(dest="action", required=True)
    demo = actions.add_parser("demo", help="bidi vs batch time to first audio, side by side")
    _common(demo)
    demo.add_argument("--trials", type=int, default=5)
    demo.add_argument("--json", action="store_true", help="print the result as JSON")
    demo.add_argument("--wav", type=Path, default=None, help="write the bidi reply's audio here")
    demo.set_defaults(handler=demo_command)
    chat = actions.add_parser("chat", help="interactive loop; plays audio or writes files")
    _common(chat)
    chat.add_argument("--out", type=Path, default=Path("chat-out"), help="where replies go without a sound device")
    chat.set_defaults(handler=chat_command)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--llm-url", help="OpenAI-compatible base URL (e.g. http://127.0.0.1:11434/v1)")
    parser.add_argument("--llm-model", help="model name at --llm-url, or a local .gguf file (embedded llama.cpp)")
    parser.add_argument("--llm-key", help="API key of the LLM (default: $OPENAI_API_KEY)")
    parser.add_argument("--reply", default="long", help="replay: id of the bundled reply to stream")
    parser.add_argument("--tokens-per-s", type=float, default=60.0, help="replay: token rate")
    parser.add_argument("--voice", default=None)
    parser.add_argument("--server", help="use a running speech server (ws:// URL) instead of starting one")
    parser.add_argument("--api-key", help="API key of the speech server")


@contextlib.contextmanager
def source_maker(args: argparse.Namespace) -> Iterator[Callable[[], TextSource]]:
    if args.llm_model and args.llm_model.endswith(".gguf"):
        with LlamaCppServer(args.llm_model) as server:
            yield lambda: server.source()
    elif args.llm_url or args.llm_model:
        yield lambda: OpenAISource(base_url=args.llm_url, model=args.llm_model, api_key=args.llm_key)
    else:
        yield lambda: ReplaySource(reply_id=args.reply, tokens_per_s=args.tokens_per_s)


@contextlib.contextmanager
def speech_server(args: argparse.Namespace, console: Console) -> Iterator[str]:
    if args.server:
        yield args.server
        return
    from speakstream.config import ServerConfig
    from speakstream.server.app import create_app
    from speakstream.server.serve import ThreadedServer

    with console.status("loading Kokoro-82M and starting the speech server on 127.0.0.1"):
        # the demo compares bidi and batch on the same replies: a cached chunk would favour the second
        server = ThreadedServer(create_app(ServerConfig.from_env(cache_mb=0))).start()
    try:
        yield server.ws_url
    finally:
        server.stop()


def demo_command(args: argparse.Namespace) -> int:
    from speakstream.client import SpeechSession

    console = Console(stderr=True)
    with source_maker(args) as make_source, speech_server(args, console) as url:
        if isinstance(make_source(), ReplaySource):
            console.print(
                "[bold]source: REPLAY[/] - a bundled reply streamed token by token at "
                f"{args.tokens_per_s:g} tokens/s (as a local LLM measured here), not a model"
            )

        async def main() -> DemoResult:
            async with SpeechSession(url, api_key=args.api_key) as session:
                return await run_demo(
                    make_source,
                    session,
                    prompt=args.prompt,
                    trials=args.trials,
                    voice=args.voice,
                    progress=lambda line: console.print(line, style="dim"),
                )

        result = asyncio.run(main())
    if args.wav:
        seconds = write_wav(result.runs["bidi"][0], args.wav)
        console.print(f"wrote the bidi reply ({seconds:.1f} s of audio) to {args.wav}")
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        _print_table(result, Console())
    return 0


def _print_table(result: DemoResult, console: Console) -> None:
    table = Table(title=f"time to first audio, agent_start -> first audio_chunk ({result.source})")
    for column in ("mode", "trials", "mean ms", "p50 ms", "min ms", "max ms"):
        table.add_column(column, justify="right" if column != "mode" else "left")
    for mode in MODES:
        s = result.summary(mode)
        table.add_row(mode, str(len(result.ttfa_ms(mode))), *(f"{s[k]:.0f}" for k in ("mean", "p50", "min", "max")))
    console.print(table)
    console.print(f"ratio batch/bidi (means): [bold]{result.ratio()}x[/]")


def chat_command(args: argparse.Namespace) -> int:
    from speakstream.agent.chat import chat_loop

    console = Console()
    with source_maker(args) as make_source, speech_server(args, Console(stderr=True)) as url:
        asyncio.run(
            chat_loop(
                make_source,
                url,
                api_key=args.api_key,
                voice=args.voice,
                out_dir=args.out,
                console=console,
                prompts=_prompts(),
            )
        )
    return 0


def _prompts() -> Iterator[str]:
    while True:
        try:
            line = input("you> ") if sys.stdin.isatty() else sys.stdin.readline()
        except EOFError:
            return
        if not line or line.strip() in ("/quit", "/exit"):
            return
        if line.strip():
            yield line.strip()
