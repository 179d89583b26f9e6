"""Misbehaving clients for the load tests (a hand-written HTTP request on its own socket)."""

from __future__ import annotations

import asyncio
import socket


async def raw_http(
    port: int, head: str, body: bytes, *, receive_buffer: int | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A hand-written HTTP request to 127.0.0.1 on its own socket (a client that misbehaves on
    purpose: a body that never ends, a response never read with a small receive buffer)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()
    return reader, writer
