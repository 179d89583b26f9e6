"""``SpeechSession``: an async client of the bidirectional WebSocket session.

    async with SpeechSession("ws://127.0.0.1:8080/invocations-bidirectional-stream") as session:
        request_id = await session.speak("Hello there.")
        result = await session.collect(request_id)

Frames are told apart by the protocol's rule (control only if the whole frame is a JSON
object); audio belongs to the request of the latest ``synthesis_start``.

When the server goes away (close 1001, 1012, 1013, a lost connection), the session reconnects
with backoff, sends its last ``config`` again, and says so with a ``reconnected`` event (a
client-side message: ``attempt``, ``delay_s``, ``code``, ``reason``). A request that was being
spoken is lost: ``collect`` raises a retryable ``session_lost``, and ``say`` speaks it again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection, connect

from speakstream.channel import RECONNECTED, Channel, SpeechResult
from speakstream.client.retry import RETRY_CLOSE_CODES, Backoff, OnReconnect, Reconnect
from speakstream.errors import SpeakstreamError


class SpeechSession(Channel):
    """One persistent session; ``send_binary`` sends client messages as binary frames."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        send_binary: bool = False,
        open_timeout: float = 30.0,
        reconnect: Backoff | None = None,
        on_reconnect: OnReconnect | None = None,
    ) -> None:
        super().__init__()
        self.url = url
        self.api_key = api_key
        self.send_binary = send_binary
        self.open_timeout = open_timeout
        self.backoff = reconnect if reconnect is not None else Backoff()
        self.on_reconnect = on_reconnect
        self.reconnects = 0
        self._ws: ClientConnection | None = None
        self._config: str | bytes | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    async def __aenter__(self) -> SpeechSession:
        await self._open()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    @property
    def ws(self) -> ClientConnection:
        if self._ws is None:
            raise RuntimeError("the session is not open; use `async with SpeechSession(...)`")
        return self._ws

    async def close(self) -> None:
        self._closed = True
        if self._ws is not None:
            await self._ws.close()

    async def send_raw(self, frame: str | bytes) -> None:
        if _is_config(frame):
            self._config = frame
        ws = self.ws
        try:
            await ws.send(frame)
        except websockets.exceptions.ConnectionClosed as exc:
            if not await self._reconnect(ws, exc):
                raise _closed_error(exc) from exc
            if frame is not self._config:  # the new session has the config already
                await self.ws.send(frame)

    async def _recv_frame(self) -> str | bytes:
        ws = self.ws
        try:
            return await ws.recv()
        except websockets.exceptions.ConnectionClosed as exc:
            reconnect = await self._reconnect(ws, exc)
            if reconnect is None:
                raise _closed_error(exc) from exc
            return json.dumps({"type": RECONNECTED, **dataclasses.asdict(reconnect)})

    async def say(self, text: str, **options: Any) -> SpeechResult:
        """Speak ``text`` and collect it; if the session is lost meanwhile, speak it again on the
        new one (the audio of the lost attempt is dropped)."""
        for attempt in range(self.backoff.attempts + 1):
            request_id = await self.speak(text, **options)
            try:
                return await self.collect(request_id)
            except SpeakstreamError as exc:
                if not exc.retryable or attempt == self.backoff.attempts:
                    raise
        raise AssertionError("unreachable")

    async def _open(self) -> None:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else None
        try:
            self._ws = await connect(
                self.url, additional_headers=headers, max_size=None, open_timeout=self.open_timeout
            )
        except (OSError, TimeoutError, websockets.exceptions.InvalidHandshake) as exc:
            raise SpeakstreamError(
                f"cannot open a session at {self.url}: {exc}", code="connect_failed", retryable=True
            ) from exc
        try:
            await self._expect_hello()
        except SpeakstreamError:
            await self._ws.close()
            raise

    async def _reconnect(self, lost: ClientConnection, exc: websockets.exceptions.ConnectionClosed) -> Reconnect | None:
        """A new connection after ``lost`` closed with a retryable code (None: not retryable, or
        every attempt failed). Whoever sees the close first reconnects; the other waits for it."""
        code = exc.rcvd.code if exc.rcvd else 1006
        reason = exc.rcvd.reason if exc.rcvd else "connection lost"
        if self._closed or code not in RETRY_CLOSE_CODES:
            return None
        async with self._lock:
            if self._ws is not lost:
                return Reconnect(self.reconnects, 0.0, code, reason)
            for attempt, delay in enumerate(self.backoff.delays(), start=1):
                await asyncio.sleep(delay)
                try:
                    await self._open()
                except SpeakstreamError as error:
                    if not error.retryable:
                        return None
                    continue
                self.reconnects += 1
                reconnect = Reconnect(attempt, round(delay, 3), code, reason)
                if self._config is not None:
                    await self.ws.send(self._config)
                if self.on_reconnect is not None:
                    self.on_reconnect(reconnect)
                return reconnect
            return None


def _is_config(frame: str | bytes) -> bool:
    try:
        message = json.loads(frame)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("type") == "config"


def _closed_error(exc: websockets.exceptions.ConnectionClosed) -> SpeakstreamError:
    code = exc.rcvd.code if exc.rcvd else "no code"
    return SpeakstreamError(f"session closed ({code})", code="session_closed")
