"""Server-Sent Events: one event's bytes, and a reader that reassembles events split anywhere
across network reads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SSEEvent:
    event: str
    data: str
    id: str | None = None

    def json(self) -> Any:
        return json.loads(self.data)


def sse_event(event: str | None, data: Any, *, id: str | None = None) -> bytes:
    """One event in ``text/event-stream`` form; ``data`` is sent as JSON unless already a string."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    lines = [f"event: {event}"] if event else []
    if id is not None:
        lines.append(f"id: {id}")
    lines += [f"data: {line}" for line in text.split("\n")]
    return ("\n".join(lines) + "\n\n").encode("utf-8")


class SSEReader:
    """Incremental ``text/event-stream`` parser: feed bytes split anywhere, get whole events.

    Bytes are buffered and an event is acted on only at its blank-line delimiter, so a split
    inside a line, a CRLF pair or a multi-byte UTF-8 character changes nothing.
    """

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[SSEEvent]:
        self._buf += data
        text = self._buf
        hold = b""
        if text.endswith(b"\r"):
            text, hold = text[:-1], b"\r"  # may be the first half of CRLF
        text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *blocks, rest = text.split(b"\n\n")
        self._buf = rest + hold
        return [e for e in (_parse_block(b) for b in blocks) if e is not None]

    def close(self) -> list[SSEEvent]:
        """Whatever complete event the stream ended without a final blank line."""
        events = self.feed(b"\n\n") if self._buf.strip() else []
        self._buf = b""
        return events


def _parse_block(block: bytes) -> SSEEvent | None:
    event, data, event_id = "message", [], None
    for line in block.decode("utf-8", "replace").split("\n"):
        if not line or line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            event_id = value
    if not data:
        return None
    return SSEEvent(event, "\n".join(data), event_id)
