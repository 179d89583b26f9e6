"""The ``speakstream`` command. Subcommands live in small modules; errors print one line."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from speakstream import __version__
from speakstream.errors import SpeakstreamError

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    from speakstream.cli import agent, assets, bench, loadtest, phonemes, serve, sim, speech, voices

    parser = argparse.ArgumentParser(prog="speakstream", description="Low-latency streaming speech for voice agents.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument("--version", action="version", version=f"speakstream {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for module in (assets, speech, voices, phonemes, serve, agent, bench, loadtest, sim):
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    handler: Handler = args.handler
    try:
        return handler(args)
    except SpeakstreamError as exc:
        print(f"error [{exc.code}]: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
