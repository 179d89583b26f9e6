"""API keys, CORS and WebSocket origins."""

from __future__ import annotations

import time

import httpx
import pytest
import websockets

from speakstream.client import SpeechSession
from speakstream.engine.fake import FakeEngine
from speakstream.errors import SpeakstreamError
from speakstream.loadtest.servers import start_server
from speakstream.server.security import TOKEN_TTL_S, issue_token, token_valid
from speakstream.server.serve import ThreadedServer

KEY = "s3cret-key"


@pytest.fixture(scope="module")
def locked() -> ThreadedServer:
    server = start_server(
        FakeEngine(), api_key=KEY, cors_origins=("https://app.example",), ws_origins=("https://app.example",)
    )
    yield server  # type: ignore[misc]
    server.stop()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/invocations"),
        ("POST", "/v1/audio/speech"),
        ("GET", "/v1/audio/voices"),
        ("GET", "/v1/models"),
        ("GET", "/metrics"),
    ],
)
async def test_every_route_needs_the_key(locked: ThreadedServer, method: str, path: str) -> None:
    async with httpx.AsyncClient(base_url=locked.url) as client:
        body = {"text": "Hi.", "input": "Hi.", "model": "tts-1", "voice": "alloy"}
        missing = await client.request(method, path, json=body)
        wrong = await client.request(method, path, json=body, headers={"Authorization": "Bearer nope"})
        right = await client.request(method, path, json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert missing.status_code == wrong.status_code == 401
    assert missing.json()["error"]["code"] == "unauthorized"
    assert right.status_code == 200


async def test_ping_stays_open_for_health_checks(locked: ThreadedServer) -> None:
    async with httpx.AsyncClient(base_url=locked.url) as client:
        assert (await client.get("/ping")).status_code == 200


async def test_websocket_handshake_needs_the_key(locked: ThreadedServer) -> None:
    origin = {"Origin": "https://app.example"}
    with pytest.raises(websockets.exceptions.InvalidStatus) as info:
        await websockets.connect(locked.ws_url, additional_headers=origin)
    assert info.value.response.status_code == 403
    async with websockets.connect(f"{locked.ws_url}?token={KEY}", additional_headers=origin) as ws:
        assert b"session_start" in (await ws.recv()).encode()
    headers = {**origin, "Authorization": f"Bearer {KEY}"}
    async with websockets.connect(locked.ws_url, additional_headers=headers) as ws:
        assert "session_start" in await ws.recv()


async def test_websocket_from_a_foreign_origin_is_refused(locked: ThreadedServer) -> None:
    headers = {"Origin": "https://evil.example", "Authorization": f"Bearer {KEY}"}
    with pytest.raises(websockets.exceptions.InvalidStatus):
        await websockets.connect(locked.ws_url, additional_headers=headers)


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [(None, True), ("SAME", True), ("https://evil.example", False), ("http://127.0.0.1:1", False), ("null", False)],
)
async def test_by_default_a_browser_websocket_must_come_from_the_servers_own_origin(
    fake_server: ThreadedServer, origin: str | None, allowed: bool
) -> None:
    own = fake_server.url  # http://127.0.0.1:PORT, what a page served by this server sends
    headers = {} if origin is None else {"Origin": own if origin == "SAME" else origin}
    if not allowed:
        with pytest.raises(websockets.exceptions.InvalidStatus):
            await websockets.connect(fake_server.ws_url, additional_headers=headers)
        return
    async with websockets.connect(fake_server.ws_url, additional_headers=headers) as ws:
        assert "session_start" in await ws.recv()


async def test_any_origin_when_configured_so() -> None:
    server = start_server(FakeEngine(), ws_origins=("*",))
    try:
        async with websockets.connect(server.ws_url, additional_headers={"Origin": "https://a.example"}) as ws:
            assert "session_start" in await ws.recv()
    finally:
        server.stop()


async def test_client_reports_a_refused_handshake(locked: ThreadedServer) -> None:
    with pytest.raises(SpeakstreamError, match="cannot open"):
        async with SpeechSession(locked.ws_url, api_key="wrong"):
            pass


async def test_cors_preflight(locked: ThreadedServer) -> None:
    async with httpx.AsyncClient(base_url=locked.url) as client:
        response = await client.options(
            "/invocations",
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            },
        )
    assert response.headers["access-control-allow-origin"] == "https://app.example"


async def test_a_browser_opens_a_websocket_with_a_short_lived_token_not_the_key(locked: ThreadedServer) -> None:
    origin = {"Origin": "https://app.example"}
    async with httpx.AsyncClient(base_url=locked.url) as client:
        assert (await client.post("/v1/session-token")).status_code == 401
        issued = (await client.post("/v1/session-token", headers={"Authorization": f"Bearer {KEY}"})).json()
    assert issued["expires_in"] == TOKEN_TTL_S and KEY not in issued["token"]
    async with websockets.connect(f"{locked.ws_url}?token={issued['token']}", additional_headers=origin) as ws:
        assert "session_start" in await ws.recv()
    expired = issue_token(KEY.encode(), now=time.time() - 2 * TOKEN_TTL_S)
    forged = issue_token(b"another key")
    for token in (expired, forged, issued["token"] + "0", "st1.99999999999999.00", "st1.99.%C3%A9"):
        with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
            await websockets.connect(f"{locked.ws_url}?token={token}", additional_headers=origin)
        assert refused.value.response.status_code == 403, token  # refused, not a 500


def test_tokens_expire_and_are_bound_to_the_key() -> None:
    token = issue_token(b"k", now=1000.0, ttl_s=60)
    assert token_valid(token, b"k", now=1059.0)
    assert not token_valid(token, b"k", now=1061.0)
    assert not token_valid(token, b"other", now=1000.0)
    assert not token_valid("garbage", b"k") and not token_valid("", b"k")
    expires = token.split(".")[1]
    assert not token_valid(f"st1.{expires}.é", b"k", now=1000.0)  # was a TypeError
    assert not token_valid("st1.١٢٣.00", b"k", now=0.0)  # digits, but not ASCII ones
