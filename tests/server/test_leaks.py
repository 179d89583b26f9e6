"""Nothing a client receives names a path, an upstream URL or a library's own error text: those
go to the server log."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from speakstream.client import SpeechSession
from speakstream.config import ServerConfig
from speakstream.engine.fake import FakeEngine
from speakstream.errors import AssetError, SpeakstreamError
from speakstream.loadtest.servers import start_server
from speakstream.server.app import create_app
from speakstream.server.bidi import BidiSession
from speakstream.server.serve import ThreadedServer
from speakstream.types import AudioChunk

SECRET = "/srv/secret/models/kokoro.onnx"


class LeakyEngine(FakeEngine):
    """Fails the way a library does: with its own text, naming a file."""

    def synthesize(self, text: str, **kwargs: Any) -> AudioChunk:
        if "boom" in text:
            raise RuntimeError(f"[ONNXRuntimeError] : 1 : FAIL : Load model from {SECRET} failed")
        return super().synthesize(text, **kwargs)


async def test_an_engine_failure_is_reported_without_its_library_text() -> None:
    server = start_server(LeakyEngine())
    try:
        async with SpeechSession(server.ws_url) as session:
            failed = await session.collect(await session.speak("This goes boom."))
            assert failed.final is not None and failed.final["code"] == "engine_error"
            assert SECRET not in str(failed.final) and "ONNXRuntimeError" not in str(failed.final)
            again = await session.collect(await session.speak("Still here."))
            assert again.final is not None and again.final["type"] == "synthesis_complete"
    finally:
        server.stop()


async def test_ping_says_why_the_engine_failed_to_load_without_the_path() -> None:
    def broken() -> FakeEngine:
        raise AssetError(f"model file missing: {SECRET}; run `speakstream assets fetch`")

    server = ThreadedServer(create_app(ServerConfig(), engine_factory=broken))
    server.thread.start()
    try:
        ping = await _ping_once_loaded(server)
        assert ping.status_code == 503 and ping.json()["code"] == "missing_asset"
        assert "assets fetch" in ping.json()["reason"] and SECRET not in ping.text
    finally:
        server.stop()


async def test_a_library_failing_to_load_is_reported_not_loading_forever() -> None:
    """A library's own exception while loading (here the espeak library failing to map, as on a
    noexec /tmp) is a load failure /ping reports, and a session is refused for it."""

    def broken() -> FakeEngine:
        raise OSError(f"{SECRET}/libespeak-ng.so: failed to map segment from shared object")

    server = ThreadedServer(create_app(ServerConfig(), engine_factory=broken))
    server.thread.start()
    try:
        ping = await _ping_once_loaded(server)
        assert ping.status_code == 503 and ping.json()["code"] == "engine_load_failed"
        assert SECRET not in ping.text  # the server log has the library's words, not the client
        with pytest.raises(SpeakstreamError) as refused:
            async with SpeechSession(f"ws://127.0.0.1:{server.port}/invocations-bidirectional-stream"):
                pass
        assert refused.value.code == "engine_load_failed"
    finally:
        server.stop()


async def _ping_once_loaded(server: ThreadedServer) -> httpx.Response:
    """``/ping`` once the engine has loaded or failed to (no longer ``not_ready``)."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{await _port(server)}") as client:
        for _ in range(200):
            ping = await client.get("/ping")
            if ping.json().get("code") != "not_ready":
                return ping
            await asyncio.sleep(0.05)
    raise AssertionError("the engine was still loading after 10 s")


async def _port(server: ThreadedServer) -> int:
    while not server.server.started:
        await asyncio.sleep(0.01)
    return server.port


async def test_a_bug_in_a_session_is_an_error_frame_and_the_session_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken_chunk(self: BidiSession, rid: str, out: object) -> None:
        raise RuntimeError(f"encoder state at {SECRET}")

    def broken_config(self: BidiSession, options: object) -> None:
        raise KeyError(SECRET)

    server = start_server(FakeEngine())
    try:
        async with SpeechSession(server.ws_url) as session:
            with monkeypatch.context() as patch:
                patch.setattr(BidiSession, "_send_chunk", broken_chunk)
                failed = await session.collect(await session.speak("Hello there."))
            assert failed.final is not None and failed.final["code"] == "internal_error"
            with monkeypatch.context() as patch:
                patch.setattr(BidiSession, "_configure", broken_config)
                await session.send_raw('{"type": "config", "speed": 1.1}')
                error = await _next_error(session)
            assert error["code"] == "internal_error" and SECRET not in str(error)
            again = await session.collect(await session.speak("Still here."))
            assert again.final is not None and again.final["type"] == "synthesis_complete"
    finally:
        server.stop()


async def _next_error(session: SpeechSession) -> dict[str, object]:
    while True:
        message = getattr(await asyncio.wait_for(session.receive(), 10), "message", None)
        if message and message.get("type") == "error":
            return dict(message)
