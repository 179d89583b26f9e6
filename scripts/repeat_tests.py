"""Run a set of tests many times in a row, optionally with the CPU kept busy beside them.

    python scripts/repeat_tests.py --runs 20 --load 2 tests/server tests/agent

``--load N`` starts N busy processes (the machine's cores shared with something else, as in CI
beside a bench or an LLM). Prints one line per run and a summary; exits 1 if any run failed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import time


def _spin() -> None:
    while True:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--load", type=int, default=0, help="busy processes beside the tests")
    parser.add_argument("paths", nargs="*", default=["tests/server", "tests/agent"])
    args, extra = parser.parse_known_args()
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.load)]
    for process in spinners:
        process.start()
    failed = 0
    try:
        for run in range(1, args.runs + 1):
            started = time.perf_counter()
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, *args.paths]
            result = subprocess.run(cmd, capture_output=True, text=True, check=False)
            summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
            print(f"run {run}/{args.runs} ({time.perf_counter() - started:.0f} s): {summary}", flush=True)
            if result.returncode != 0:
                failed += 1
                print(result.stdout[-6000:], flush=True)
    finally:
        for process in spinners:
            process.terminate()
            process.join()
    print(f"{args.runs - failed} passed, {failed} failed (runs, load {args.load})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
