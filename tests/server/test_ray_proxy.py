"""The middleware speakstream puts in Ray Serve's proxy, without a cluster: a WebSocket whose
replica died gets a real close (1012), and no other connection is touched."""

from __future__ import annotations

from typing import Any

import pytest

from speakstream.server.ray_serve import LOST_CLOSE, ReplicaLossClose, proxy_middlewares


class Peer:
    """The proxy's side of one WebSocket: what the client sent, and what reached it."""

    def __init__(self, *incoming: dict[str, Any]) -> None:
        self.incoming = [{"type": "websocket.connect"}, *incoming]
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        return self.incoming.pop(0)

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


async def dies_after_accept(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.send", "text": "{}"})
    raise RuntimeError("the replica's actor died")


async def closes_itself(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.close", "code": 1001, "reason": "replica removed; reconnect"})


async def client_leaves(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "websocket.accept"})
    await receive()  # the client's disconnect


async def test_a_replica_lost_under_a_session_is_a_1012_close() -> None:
    peer = Peer()
    with pytest.raises(RuntimeError):
        await ReplicaLossClose(dies_after_accept)({"type": "websocket"}, peer.receive, peer.send)
    assert peer.sent[-1] == {"type": "websocket.close", "code": LOST_CLOSE[0], "reason": LOST_CLOSE[1]}


async def test_a_session_the_replica_closed_or_the_client_left_is_not_closed_again() -> None:
    drained = Peer()
    await ReplicaLossClose(closes_itself)({"type": "websocket"}, drained.receive, drained.send)
    assert [m["type"] for m in drained.sent] == ["websocket.accept", "websocket.close"]
    assert drained.sent[-1]["code"] == 1001
    left = Peer({"type": "websocket.disconnect", "code": 1000})
    await ReplicaLossClose(client_leaves)({"type": "websocket"}, left.receive, left.send)
    assert [m["type"] for m in left.sent] == ["websocket.accept"]


async def test_http_passes_through_untouched() -> None:
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def record(message: dict[str, Any]) -> None:
        sent.append(message)

    async def nothing() -> dict[str, Any]:
        return {}

    await ReplicaLossClose(app)({"type": "http"}, nothing, record)
    assert sent == [{"type": "http.response.start", "status": 200, "headers": []}]
    assert [m.cls for m in proxy_middlewares()] == [ReplicaLossClose]
