"""The abuse suite's polite client under attack, a server from each of two checkouts in turn: this
release's harness, the server's ``src`` on ``PYTHONPATH``, so both arms meet the same attacks.

    git worktree add --detach /tmp/old <ref>
    python scripts/ab_abuse.py --old /tmp/old/src --rounds 2 --trials 6 \\
        --attack "hostile texts" --attack "responses never read" --attack "one client's parallel flood"

Rounds alternate the arms' order (old first, then new first). Prints, per round, arm and attack,
the polite client's first audio p50 / p95, its mean gaps a reply and the replies gapped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from speakstream.loadtest import abuse

HERE = Path(__file__).resolve().parent.parent / "src"


def arm(src: Path, trials: int, attacks: list[str]) -> dict[str, Any]:
    abuse.LIMITS["PYTHONPATH"] = str(src)
    run = asyncio.run(abuse.run_abuse(trials=trials, attacks=attacks))
    return {"quiet": run["quiet"], **run["attacks"]}


def line(round_: int, name: str, attack: str, result: dict[str, Any]) -> str:
    first, gaps = result["first_audio_ms"], result["gap_ms"]
    return (
        f"round {round_} {name:3} {attack:28} first audio p50 {first['p50']:7.1f} p95 {first['p95']:7.1f} ms, "
        f"gaps {gaps.get('mean', 0.0):6.1f} ms a reply (max {gaps.get('max', 0.0):6.1f}), gapped {result['gapped']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True, help="the other checkout's src folder")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--trials", type=int, default=6, help="polite replies under each attack")
    parser.add_argument("--attack", action="append", choices=list(abuse.ATTACKS), help="default: every attack")
    parser.add_argument("--json", type=Path, help="also write every round's results here")
    args = parser.parse_args()
    arms = [("old", args.old.resolve()), ("new", HERE)]
    rounds = []
    for i in range(args.rounds):
        results = {name: arm(src, args.trials, args.attack or list(abuse.ATTACKS)) for name, src in arms}
        rounds.append(results)
        for name, by_attack in results.items():
            for attack, result in by_attack.items():
                print(line(i, name, attack, result), flush=True)
        arms.reverse()
    if args.json:
        args.json.write_text(json.dumps(rounds, indent=1) + "\n")


if __name__ == "__main__":
    main()
