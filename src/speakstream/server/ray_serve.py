"""speakstream as a Ray Serve deployment: replicas, autoscaling and health on an existing engine.

Each replica is the whole server (one engine, its scheduler, the routes) behind Serve's HTTP
proxy, which carries the streamed responses, SSE and the WebSockets. A replica starts taking
traffic only once its engine is warm, and is healthy only while the engine's workers run.

Serve removes a replica (scale-down, redeploy) by waiting for its ongoing requests to end; a
WebSocket session never ends by itself, so the replica watches for that drain and closes its
sessions at once with ``server_shutdown`` and 1001, which clients take as "reconnect".
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ray import serve
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from speakstream.config import ServerConfig
from speakstream.server.runtime import Runtime

log = logging.getLogger("speakstream.ray")
DRAIN_POLL_S = 0.2
PROXY_CALLBACK = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"
LOST_CLOSE = (1012, "replica lost; reconnect")


@dataclass(frozen=True, slots=True, kw_only=True)
class Scaling:
    """How many replicas: a fixed ``replicas``, or autoscaling between ``min_replicas`` and
    ``max_replicas`` to keep ``target_sessions`` ongoing requests (sessions) per replica."""

    replicas: int = 1
    min_replicas: int | None = None
    max_replicas: int | None = None
    target_sessions: float = 2.0
    cpus_per_replica: float = 1.0
    gpus_per_replica: float = 0.0
    upscale_delay_s: float = 10.0
    downscale_delay_s: float = 300.0

    @property
    def autoscaling(self) -> bool:
        return self.max_replicas is not None

    def deployment_options(self, config: ServerConfig) -> dict[str, Any]:
        options: dict[str, Any] = {
            "max_ongoing_requests": config.max_sessions,
            "health_check_period_s": 2.0,
            "health_check_timeout_s": 30.0,
            "graceful_shutdown_wait_loop_s": DRAIN_POLL_S,
            "graceful_shutdown_timeout_s": config.grace_s + 5.0,
            "ray_actor_options": {"num_cpus": self.cpus_per_replica, "num_gpus": self.gpus_per_replica},
        }
        if self.autoscaling:
            options["autoscaling_config"] = {
                "min_replicas": self.min_replicas or 1,
                "max_replicas": self.max_replicas,
                "target_ongoing_requests": self.target_sessions,
                "upscale_delay_s": self.upscale_delay_s,
                "downscale_delay_s": self.downscale_delay_s,  # sessions are long: shrink slowly
            }
        else:
            options["num_replicas"] = self.replicas
        return options


def _serve_replica() -> Any:
    """This process's Serve replica, to read whether Serve is draining it. Serve has no hook for
    that (only the destructor, after the drain), so this reads its ``_shutting_down`` flag; the
    ``ray`` extra pins the Ray release this is tested with."""
    from ray.serve._private.replica import Replica

    frozen = gc.get_freeze_count() > 0  # Serve freezes what it made at startup, the replica too
    if frozen:
        gc.unfreeze()
    try:
        return next((o for o in gc.get_objects() if isinstance(o, Replica)), None)
    finally:
        if frozen:
            gc.freeze()


def _draining_probe() -> Callable[[], bool]:
    replica = _serve_replica()
    if replica is None or not hasattr(replica, "_shutting_down"):
        log.warning("cannot see Serve's drain: sessions will close only when the replica stops")
        return lambda: False
    return lambda: bool(replica._shutting_down)


@serve.ingress(None)
class SpeechReplica:
    """One replica: the speakstream app, warm before it takes traffic."""

    async def __init__(  # type: ignore[misc]  # Serve awaits an async constructor
        self, config: ServerConfig, extra: Callable[[], list[Any]] | None = None
    ) -> None:
        from speakstream.server.app import create_app

        self._speech_app: Starlette = create_app(config, extra_routes=extra() if extra else (), wait_ready=True)
        self.runtime: Runtime = self._speech_app.state.runtime
        self.runtime.instance = serve.get_replica_context().replica_tag
        self._watch = asyncio.create_task(self._watch_drain(_draining_probe()), name="drain-watch")

    def __serve_build_asgi_app__(self) -> Starlette:
        return self._speech_app

    async def check_health(self) -> None:
        """Serve's health check: the engine loaded and its workers alive (else Serve replaces us)."""
        if not self.runtime.healthy:
            raise RuntimeError(f"engine not healthy (load error: {self.runtime.load_error})")

    async def _watch_drain(self, draining: Callable[[], bool]) -> None:
        while not draining():  # a flag Serve sets, no event to wait on  # noqa: ASYNC110
            await asyncio.sleep(DRAIN_POLL_S)
        log.info("replica draining: closing %d sessions", len(self.runtime.sessions))
        await self.runtime.drain("replica removed; reconnect")

    async def __del__(self) -> None:
        self._watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._watch


class ReplicaLossClose:
    """In Serve's proxy: when a replica dies under an open WebSocket, the proxy ends the
    connection with no close frame (the client sees 1006, "abnormal"). This sends a real close
    instead, 1012 (service restart) "replica lost; reconnect", which every client understands."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        open_ = False

        async def tracked_send(message: Message) -> None:
            nonlocal open_
            if message["type"] == "websocket.accept":
                open_ = True
            elif message["type"] == "websocket.close":
                open_ = False
            await send(message)

        async def tracked_receive() -> Message:
            nonlocal open_
            message = await receive()
            if message["type"] == "websocket.disconnect":
                open_ = False
            return message

        try:
            await self.app(scope, tracked_receive, tracked_send)
        finally:
            if open_:
                code, reason = LOST_CLOSE
                with contextlib.suppress(Exception):
                    await send({"type": "websocket.close", "code": code, "reason": reason})


def proxy_middlewares() -> list[Middleware]:
    """Serve's proxy calls this (``RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH``) for its middlewares."""
    return [Middleware(ReplicaLossClose)]


def application(config: ServerConfig, scaling: Scaling, extra: Callable[[], list[Any]] | None = None) -> Any:
    """The Serve application (``serve.run`` it, or ``serve build`` a config from it)."""
    deployment: Any = serve.deployment(SpeechReplica, name="speakstream", **scaling.deployment_options(config))
    return deployment.bind(config, extra)


def run(
    config: ServerConfig,
    scaling: Scaling,
    *,
    address: str | None = None,
    extra: Callable[[], list[Any]] | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Start (or join, with ``address``) a Ray cluster, deploy, serve until SIGINT/SIGTERM or
    ``stop``, then remove the application (its replicas drain their sessions)."""
    import ray

    os.environ.setdefault(PROXY_CALLBACK, f"{__name__}:proxy_middlewares")  # read by the proxy it starts
    ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING)
    try:
        serve.start(http_options={"host": config.host, "port": config.port})
        serve.run(application(config, scaling, extra), name="speakstream", route_prefix="/")
        log.warning("speakstream on Ray Serve at http://%s:%d", config.host, config.port)
        stop = stop or _stop_on_signals()
        stop.wait()
        serve.delete("speakstream")
        serve.shutdown()  # type: ignore[no-untyped-call]
    finally:
        ray.shutdown()


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop
