"""API-key authentication and WebSocket origin checks, as one pure ASGI middleware.

With a key configured, every HTTP route but ``/ping`` and the web page needs
``Authorization: Bearer <key>`` (``/metrics`` too, unless ``protect_metrics`` is off), or the key in
the header the ElevenLabs, Cartesia and Deepgram clients use (``xi-api-key``, ``X-API-Key``,
``Authorization: Token <key>``); a WebSocket
handshake needs one of those headers or a ``token`` query parameter (``api_key`` and ``xi_api_key``
are read the same way): a short-lived token from
``POST /v1/session-token`` (what a browser, which cannot set headers on a WebSocket, should use,
so the key never sits in a URL), or the key itself (older clients). Keys are compared in constant
time and never logged. A browser's WebSocket (it sends ``Origin``) must come from the server's
own origin or one in ``ws_origins`` (``*``: any); otherwise the handshake is refused (HTTP 403).
A page on another site could else open a session with the visitor's network position (``/agent/ws``
spends the operator's LLM). Clients that are not browsers send no ``Origin`` and are not affected.
"""

from __future__ import annotations

import hmac
import json
import time
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from speakstream.config import ServerConfig

OPEN_PATHS = ("/ping",)
AUTH_SCHEMES = (b"bearer", b"token")
"""``Authorization`` schemes that carry the key: ``Bearer``, and ``Token`` (Deepgram's clients)."""
KEY_HEADERS = (b"xi-api-key", b"x-api-key")
"""Where the ElevenLabs and Cartesia clients put their key: the same key as ``Authorization``."""
TOKEN_TTL_S = 60
_TOKEN_PREFIX = "st1"


def issue_token(key: bytes, *, now: float | None = None, ttl_s: int = TOKEN_TTL_S) -> str:
    """A token that opens a WebSocket until it expires: its expiry, signed with the key."""
    expires = int((time.time() if now is None else now) + ttl_s)
    return f"{_TOKEN_PREFIX}.{expires}.{_signature(key, expires)}"


def token_valid(presented: str, key: bytes, *, now: float | None = None) -> bool:
    prefix, _, rest = presented.partition(".")
    expires, _, signature = rest.partition(".")
    if prefix != _TOKEN_PREFIX or not (expires.isascii() and expires.isdigit()) or len(expires) > 12:
        return False
    fresh = int(expires) >= (time.time() if now is None else now)
    # bytes: compare_digest refuses str with non-ASCII characters (a TypeError, not a refusal)
    return hmac.compare_digest(signature.encode(), _signature(key, int(expires)).encode()) and fresh


def _signature(key: bytes, expires: int) -> str:
    return hmac.new(key, f"speakstream-ws:{expires}".encode(), "sha256").hexdigest()


def client_of(scope: Scope) -> str:
    """Who is asking, for per-client turns and limits: the peer's address (one API key serves
    everyone, so it names nobody). Behind a proxy, uvicorn's ``forwarded_allow_ips`` makes the
    address the real client's."""
    peer = scope.get("client")
    return str(peer[0]) if peer else "local"


class SecurityMiddleware:
    def __init__(self, app: ASGIApp, *, config: ServerConfig) -> None:
        self.app = app
        self.key = config.api_key.encode() if config.api_key else None
        self.protect_metrics = config.protect_metrics
        self.origins = set(config.ws_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket" and not self._origin_allowed(scope):
            await send({"type": "websocket.close", "code": 1008, "reason": "origin not allowed"})
            return
        if self._needs_key(scope["path"]) and not self._authorized(scope):
            await self._deny(scope, send)
            return
        await self.app(scope, receive, send)

    def _needs_key(self, path: str) -> bool:
        if self.key is None or path in OPEN_PATHS:
            return False
        if path == "/" or path.startswith("/static/"):
            return False
        return not (path == "/metrics" and not self.protect_metrics)

    def _authorized(self, scope: Scope) -> bool:
        assert self.key is not None
        presented = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, credential = value.partition(b" ")
                if scheme.lower() in AUTH_SCHEMES:
                    presented = credential.strip()
            elif name in KEY_HEADERS and not presented:
                presented = value.strip()
        if not presented and scope["type"] == "websocket":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            token = (query.get("token") or query.get("api_key") or query.get("xi_api_key") or [""])[0]
            if token_valid(token, self.key):
                return True
            presented = token.encode()
        return hmac.compare_digest(presented, self.key)

    def _origin_allowed(self, scope: Scope) -> bool:
        if "*" in self.origins:
            return True
        headers: dict[bytes, bytes] = dict(scope.get("headers", []))
        origin = headers.get(b"origin", b"").decode("latin-1").lower()
        if not origin or origin in self.origins:
            return True
        scheme = "https" if scope.get("scheme") == "wss" else "http"
        own = f"{scheme}://{headers.get(b'host', b'').decode('latin-1').lower()}"
        return origin == own

    async def _deny(self, scope: Scope, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
            return
        body = json.dumps(
            {"error": {"code": "unauthorized", "message": "missing or wrong API key", "retryable": False}}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="speakstream"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
