"""RSS of an English-only server: start it, speak English through /invocations, report VmRSS.

    python scripts/english_rss.py [--runs 3]

Each run is a fresh process (the median is printed), so a change that loads another language's
G2P on an English-only server shows up here. Run it against an older checkout with
``PYTHONPATH=that/src`` to compare.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

_CHILD = """
import httpx
from speakstream.config import ServerConfig
from speakstream.server.app import create_app
from speakstream.server.serve import ThreadedServer

server = ThreadedServer(create_app(ServerConfig())).start()
try:
    for text in ("Thanks for waiting, I found your booking.", "Is there anything else I can do?"):
        response = httpx.post(server.url + "/invocations", json={"text": text, "voice": "bf_emma"}, timeout=120)
        response.raise_for_status()
    status = open("/proc/self/status").read()
    print(int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) // 1024)
finally:
    server.stop()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    values = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True, timeout=600)
        values.append(int(out.stdout.strip().splitlines()[-1]))
    print(f"RSS after English requests, MB: runs {values}, median {statistics.median(values)}")


if __name__ == "__main__":
    main()
