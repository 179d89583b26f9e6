"""``SpeechSession``: an async client of the bidirectional WebSocket session.

    async with SpeechSession("ws://127.0.0.1:8080/invocations-bidirectional-stream") as session:
        request_id = await session.speak("Hello there.")
        result = await session.collect(request_id)

Frames are told apart by the protocol's rule (control only if the whole frame is a JSON
object); audio belongs to the request of the latest ``synthesis_start``.
"""

from __future__ import annotations

import websockets
from websockets.asyncio.client import ClientConnection, connect

from speakstream.channel import Channel
from speakstream.errors import SpeakstreamError


class SpeechSession(Channel):
    """One persistent session; ``send_binary`` sends client messages as binary frames."""

    def __init__(
        self, url: str, *, api_key: str | None = None, send_binary: bool = False, open_timeout: float = 30.0
    ) -> None:
        super().__init__()
        self.url = url
        self.api_key = api_key
        self.send_binary = send_binary
        self.open_timeout = open_timeout
        self._ws: ClientConnection | None = None

    async def __aenter__(self) -> SpeechSession:
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
            await self.close()
            raise
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    @property
    def ws(self) -> ClientConnection:
        if self._ws is None:
            raise RuntimeError("the session is not open; use `async with SpeechSession(...)`")
        return self._ws

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()

    async def send_raw(self, frame: str | bytes) -> None:
        try:
            await self.ws.send(frame)
        except websockets.exceptions.ConnectionClosed as exc:
            raise SpeakstreamError(
                f"session closed ({exc.rcvd.code if exc.rcvd else 'no code'})", code="session_closed"
            ) from exc

    async def _recv_frame(self) -> str | bytes:
        try:
            return await self.ws.recv()
        except websockets.exceptions.ConnectionClosed as exc:
            raise SpeakstreamError(
                f"session closed ({exc.rcvd.code if exc.rcvd else 'no code'})", code="session_closed"
            ) from exc
