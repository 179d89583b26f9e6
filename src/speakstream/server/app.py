"""The ASGI application: routes, middleware and the runtime's lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from speakstream.config import ServerConfig
from speakstream.engine.base import Engine
from speakstream.errors import internal_error
from speakstream.server import http, openai, phoneme_routes, voice_routes
from speakstream.server.bidi import BidiSession
from speakstream.server.dialects import cartesia, deepgram, elevenlabs
from speakstream.server.runtime import EngineFactory, Runtime
from speakstream.server.security import SecurityMiddleware, client_of


def default_engine_factory(config: ServerConfig) -> EngineFactory:
    def make() -> Engine:
        if config.fake_engine:
            from speakstream.engine.fake import FakeEngine

            return FakeEngine(seconds_per_char=0.002)
        from speakstream.engine.kokoro import KokoroEngine

        return KokoroEngine(config.engine_config())

    return make


async def _internal_error(request: Request, exc: Exception) -> Response:
    """A bug in a route: the client gets a JSON 500 it can read (no library text), the log the
    traceback (Starlette logs it after this answer)."""
    return http.error_response(internal_error())


async def bidi_endpoint(websocket: WebSocket) -> None:
    await BidiSession(websocket, websocket.app.state.runtime, client_of(websocket.scope)).run()


def create_app(
    config: ServerConfig | None = None,
    engine_factory: EngineFactory | None = None,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    wait_ready: bool = False,
) -> Starlette:
    """The server. ``wait_ready``: startup ends only once the engine is warm (a cluster replica,
    which takes traffic as soon as it has started); otherwise ``/ping`` says 503 until then."""
    config = config or ServerConfig.from_env()
    runtime = Runtime(config, engine_factory or default_engine_factory(config))

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await runtime.start()
        if wait_ready:
            await runtime.wait_ready()
        try:
            yield
        finally:
            await runtime.stop()

    routes: list[BaseRoute] = [
        Route("/ping", http.ping),
        Route("/invocations", http.invocations, methods=["POST"]),
        WebSocketRoute("/invocations-bidirectional-stream", bidi_endpoint),
        Route("/v1/audio/speech", openai.speech, methods=["POST"]),
        Route("/v1/audio/voices", openai.voices),
        Route("/v1/models", openai.models),
        Route("/metrics", http.metrics),
        Route("/v1/session-token", http.session_token, methods=["POST"]),
        *voice_routes.routes(),
        *phoneme_routes.routes(),
        *elevenlabs.routes(),
        *cartesia.routes(),
        *deepgram.routes(),
        *extra_routes,
    ]
    middleware = []  # CORS outermost: it answers preflights, which carry no API key
    if config.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(config.cors_origins),
                allow_methods=["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
                allow_headers=["Authorization", "Content-Type", "Accept", "xi-api-key", "X-API-Key"],
                expose_headers=["X-Request-Id"],
            )
        )
    middleware.append(Middleware(SecurityMiddleware, config=config))
    app = Starlette(
        routes=routes, middleware=middleware, lifespan=lifespan, exception_handlers={Exception: _internal_error}
    )
    app.state.runtime = runtime
    return app
