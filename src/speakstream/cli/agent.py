"""``speakstream agent demo`` and ``speakstream agent chat``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from speakstream.agent.demo import DEFAULT_PROMPT, DemoResult, run_demo, write_wav
from speakstream.agent.models import SMOLLM2, chat_model_path
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
    parser.add_argument("--replay", action="store_true", help="speak a bundled reply streamed at a set pace, no model")
    parser.add_argument("--reply", default="long", help="replay: id of the bundled reply to stream")
    parser.add_argument("--tokens-per-s", type=float, default=60.0, help="replay: token rate")
    parser.add_argument("--voice", default=None)
    parser.add_argument("--server", help="use a running speech server (ws:// URL) instead of starting one")
    parser.add_argument("--api-key", help="API key of the speech server")


@dataclass(frozen=True, slots=True)
class Source:
    """A text source for the agent and the label the demo prints beside its figures."""

    label: str
    make: Callable[[], TextSource]


@contextlib.contextmanager
def sources(args: argparse.Namespace, console: Console) -> Iterator[list[Source]]:
    """What the agent speaks: the LLM named on the command line; or by default the local demo model
    (SmolLM2, fetched once) and, for the demo, the replay at a hosted LLM's pace beside it."""
    replay = Source(
        f"replay at a hosted LLM's pace ({args.tokens_per_s:g} tokens/s)",
        lambda: ReplaySource(reply_id=args.reply, tokens_per_s=args.tokens_per_s),
    )
    if args.replay:
        yield [replay]
    elif args.llm_model and args.llm_model.endswith(".gguf"):
        with LlamaCppServer(args.llm_model) as server:
            yield [Source(f"{Path(args.llm_model).name}, local (llama.cpp)", lambda: server.source())]
    elif args.llm_url or args.llm_model:
        yield [
            Source(
                args.llm_model or args.llm_url,
                lambda: OpenAISource(base_url=args.llm_url, model=args.llm_model, api_key=args.llm_key),
            )
        ]
    elif importlib.util.find_spec("xllamacpp") is None:
        console.print("[yellow]no embedded llama.cpp (pip install 'speakstream[llm]'): the replay only[/]")
        yield [replay]
    else:
        with console.status(f"fetching {SMOLLM2.label} (once) and starting llama.cpp"):
            server = LlamaCppServer(chat_model_path()).start()
        try:
            local = Source(
                f"{SMOLLM2.label}, local (llama.cpp beside the voice)", lambda: server.source(temperature=0.0)
            )
            yield [local, replay]
        finally:
            server.stop()


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
    console = Console(stderr=True)
    with sources(args, console) as chosen, speech_server(args, console) as url:
        results = {source.label: _demo(source, url, args, console) for source in chosen}
    if args.wav:
        label, first = next(iter(results.items()))
        seconds = write_wav(first.runs["bidi"][0], args.wav)
        console.print(f"wrote the bidi reply of {label} ({seconds:.1f} s of audio) to {args.wav}")
    if args.json:
        print(json.dumps({label: result.to_json() for label, result in results.items()}, indent=2))
        return 0
    out = Console()
    for label, result in results.items():
        _print_table(label, result, out)
    if len(results) > 1:
        out.print(_why_they_differ(results))
    return 0


def _demo(source: Source, url: str, args: argparse.Namespace, console: Console) -> DemoResult:
    from speakstream.client import SpeechSession

    console.print(f"[bold]source: {source.label}[/]")

    async def main() -> DemoResult:
        async with SpeechSession(url, api_key=args.api_key) as session:
            return await run_demo(
                source.make,
                session,
                prompt=args.prompt,
                trials=args.trials,
                voice=args.voice,
                progress=lambda line: console.print(line, style="dim"),
            )

    return asyncio.run(main())


def _print_table(label: str, result: DemoResult, console: Console) -> None:
    table = Table(title=f"{label}: time to first audio, agent_start -> first audio_chunk")
    for column in ("mode", "trials", "mean ms", "p50 ms", "min ms", "max ms"):
        table.add_column(column, justify="right" if column != "mode" else "left")
    for mode in MODES:
        s = result.summary(mode)
        table.add_row(mode, str(len(result.ttfa_ms(mode))), *(f"{s[k]:.0f}" for k in ("mean", "p50", "min", "max")))
    console.print(table)
    llm = result.llm()
    console.print(
        f"ratio batch/bidi (means): [bold]{result.ratio()}x[/]; the text source: first token "
        f"{llm['ttft_ms']} ms, {llm['tokens_per_s_alone']} tokens/s alone, "
        f"{llm['tokens_per_s_beside_speech']} beside the speech, whole reply in {llm['reply_s']} s"
    )
    reply = result.reply()
    console.print(f"reply: [italic]{reply[:160]}{'...' if len(reply) > 160 else ''}[/]\n")


def _why_they_differ(results: dict[str, DemoResult]) -> str:
    """One sentence on what bidi buys at each source's pace (batch waits for the whole reply)."""
    paces = "; ".join(
        f"{label}: whole reply in {r.llm()['reply_s']} s, bidi {r.ratio()}x sooner" for label, r in results.items()
    )
    return (
        "Batch speaks once the whole reply is written, bidi as soon as its first clause is: the longer "
        f"the text source takes to write a reply, the more bidi buys ({paces})."
    )


def chat_command(args: argparse.Namespace) -> int:
    from speakstream.agent.chat import chat_loop

    console = Console()
    with sources(args, Console(stderr=True)) as chosen, speech_server(args, Console(stderr=True)) as url:
        asyncio.run(
            chat_loop(
                chosen[0].make,
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
