"""Running the app under uvicorn: from the CLI (signals, graceful shutdown) or in a thread
(tests and benchmarks need a real server on 127.0.0.1: in-process clients buffer bodies)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn
from starlette.applications import Starlette

from speakstream.config import ServerConfig
from speakstream.errors import InvalidInput, SpeakstreamError
from speakstream.server.runtime import Runtime


class GracefulServer(uvicorn.Server):
    """Tells open sessions why they close (error frame + close 1001) before uvicorn drops them.
    ``exit_on_load_error``: stops when the engine fails to load (``failed`` says why), so a
    process that can never be ready exits and its orchestrator restarts it."""

    def __init__(self, config: uvicorn.Config, runtime: Runtime, *, exit_on_load_error: bool = False) -> None:
        super().__init__(config)
        self.runtime = runtime
        self.exit_on_load_error = exit_on_load_error
        self.failed: SpeakstreamError | None = None

    async def on_tick(self, counter: int) -> bool:
        if self.exit_on_load_error and self.runtime.load_error is not None:
            self.failed = self.runtime.load_error
            return True
        return await super().on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self.runtime.drain("server shutting down")
        await super().shutdown(sockets)


def uvicorn_config(app: Starlette, config: ServerConfig, **overrides: Any) -> uvicorn.Config:
    options: dict[str, Any] = {
        "host": config.host,
        "port": config.port,
        "ws": "websockets-sansio",
        "ws_max_size": max(1 << 20, config.max_frame_bytes * 4),
        "ws_ping_interval": 20.0,
        "ws_ping_timeout": 20.0,
        "timeout_graceful_shutdown": int(max(1, config.grace_s)),
        "log_level": "warning",
        "access_log": False,
        "lifespan": "on",
    }
    options.update(overrides)
    return uvicorn.Config(app, **options)


def serve(app: Starlette, config: ServerConfig) -> None:
    """Serve until stopped; raises what stopped the engine loading (after closing the server)."""
    problem = config.exposure_problem()
    if problem:
        raise InvalidInput(problem, code="insecure")
    server = GracefulServer(uvicorn_config(app, config, log_level="info"), app.state.runtime, exit_on_load_error=True)
    server.run()
    if server.failed is not None:
        raise server.failed


class ThreadedServer:
    """A real uvicorn server on 127.0.0.1 in a background thread; ``url`` once started."""

    def __init__(self, app: Starlette, config: ServerConfig | None = None, *, port: int = 0) -> None:
        config = config or app.state.runtime.config
        self.app = app
        self.server = GracefulServer(uvicorn_config(app, config, host="127.0.0.1", port=port), app.state.runtime)
        self.thread = threading.Thread(target=self.server.run, name="speakstream-server", daemon=True)

    @property
    def runtime(self) -> Runtime:
        runtime: Runtime = self.app.state.runtime
        return runtime

    @property
    def port(self) -> int:
        port: int = self.server.servers[0].sockets[0].getsockname()[1]
        return port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/invocations-bidirectional-stream"

    def start(self, *, ready_timeout: float = 120.0) -> ThreadedServer:
        self.thread.start()
        deadline = time.monotonic() + ready_timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        while not self.runtime.ready:
            if self.runtime.load_error is not None:
                raise self.runtime.load_error
            if time.monotonic() > deadline:
                raise RuntimeError("the engine did not become ready in time")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


@contextlib.contextmanager
def running(app: Starlette) -> Iterator[ThreadedServer]:
    with ThreadedServer(app) as server:
        yield server
