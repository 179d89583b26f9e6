"""In-process servers with a fake engine, for suites that need faults or small limits."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.routing import BaseRoute

from speakstream.config import ServerConfig
from speakstream.engine.base import Engine
from speakstream.engine.fake import FakeEngine
from speakstream.server.app import create_app
from speakstream.server.serve import ThreadedServer


def start_server(engine: Engine, *, routes: Sequence[BaseRoute] = (), port: int = 0, **config: Any) -> ThreadedServer:
    """A real server (uvicorn on 127.0.0.1:``port``, 0 for any free one, in its own thread) with
    this engine, extra routes (the agent's, the web page's) and ``ServerConfig`` fields; the
    suites' and the tests' one factory. Stop it with ``.stop()``."""
    app = create_app(ServerConfig(**config), engine_factory=lambda: engine, extra_routes=list(routes))
    return ThreadedServer(app, port=port).start()


def fake_server(engine: FakeEngine | None = None, **config: Any) -> ThreadedServer:
    """A server on a fake engine with the audio cache off unless asked: the suites repeat one
    text, and a cached repeat would never reach the engine whose limits they test."""
    config.setdefault("cache_mb", 0)
    return start_server(engine or FakeEngine(seconds_per_char=0.002), **config)


def own_rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024


def own_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def server_counts(server: ThreadedServer) -> dict[str, int]:
    """Tasks, sessions, queued chunks and reserved engine slots, read on the server's own loop."""
    runtime = server.runtime

    async def read() -> dict[str, int]:
        return {
            "tasks": len(asyncio.all_tasks()),
            "sessions": len(runtime.sessions),
            "queued": runtime.scheduler.queued if runtime.scheduler else 0,
            "reserved": runtime.scheduler.admission.reserved if runtime.scheduler else 0,
        }

    assert runtime.loop is not None
    return asyncio.run_coroutine_threadsafe(read(), runtime.loop).result(timeout=10)


async def settled(server: ThreadedServer, tasks: int, timeout: float = 15.0) -> dict[str, int]:
    """The server's counts once it is back to ``tasks`` tasks and no sessions (or at timeout)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        counts = await asyncio.to_thread(server_counts, server)
        if (counts["tasks"] <= tasks and counts["sessions"] == 0) or loop.time() > deadline:
            return counts
        await asyncio.sleep(0.05)
