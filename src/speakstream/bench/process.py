"""A ``speakstream serve`` subprocess, as a deployment runs it: its memory and file descriptors
can be read from /proc, and it can be sent SIGTERM. The bench and the load tests both start one."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class ServerProcess:
    """``python -m speakstream serve`` on 127.0.0.1 in its own process."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, launcher: Sequence[str] = ()) -> None:
        """``launcher``: the command the server runs under (``taskset -c 0``; a mount namespace)."""
        self.port = free_port()
        command = [*launcher, sys.executable, "-m", "speakstream", "serve", "--port", str(self.port), *args]
        self.log = Path(os.environ.get("TMPDIR", "/tmp")) / f"speakstream-server-{self.port}.log"
        self._log = self.log.open("w")
        self.process = subprocess.Popen(
            command, stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/invocations-bidirectional-stream"

    def wait_ready(self, timeout: float = 120.0) -> ServerProcess:
        """Wait for ``/ping``; a server that exits or never answers is stopped, its log's tail raised."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if httpx.get(f"{self.url}/ping", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        code = self.process.poll()
        tail = self.log.read_text()[-2000:]
        self.stop()
        raise RuntimeError(f"server {'did not become ready' if code is None else f'exited with {code}'}: {tail}")

    def rss_mb(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def terminate(self, timeout: float = 30.0) -> tuple[int, float]:
        """SIGTERM; returns (exit code, seconds to exit)."""
        started = time.perf_counter()
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout)
        self._discard_log()
        return code, time.perf_counter() - started

    def stop(self) -> None:
        """Kill the server if it still runs, and delete its log (read it before)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._discard_log()

    def _discard_log(self) -> None:
        self._log.close()
        self.log.unlink(missing_ok=True)

    def __enter__(self) -> ServerProcess:
        return self.wait_ready()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def peak_rss_mb(self) -> float:
        """The process's peak resident memory so far (VmHWM), MB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024
