"""Servers to torture: a ``speakstream serve`` subprocess (its memory and file descriptors can
be read from /proc, and it can be sent SIGTERM) or an in-process one with a chosen engine."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def raw_http(
    port: int, head: str, body: bytes, *, receive_buffer: int | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A hand-written HTTP request to 127.0.0.1 on its own socket (a client that misbehaves on
    purpose: a body that never ends, a response never read with a small receive buffer)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()
    return reader, writer


class ServerProcess:
    """``python -m speakstream serve`` on 127.0.0.1 in its own process."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        command = [sys.executable, "-m", "speakstream", "serve", "--port", str(self.port), *args]
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
