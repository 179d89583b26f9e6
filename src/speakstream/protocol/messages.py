"""The WebSocket's messages: what a client sends, what the server sends, and how a receiver
tells audio from control."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from speakstream.errors import ProtocolError, SpeakstreamError
from speakstream.protocol.options import Options

MAX_REQUEST_ID = 128


# Client messages


@dataclass(frozen=True, slots=True, kw_only=True)
class TextMessage:
    text: str
    request_id: str | None = None
    options: Options = field(default_factory=Options)


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendMessage:
    text: str
    request_id: str | None = None
    options: Options = field(default_factory=Options)
    chunk: bool = False
    """The text is a whole chunk (the client chunked it): speak it as it is, now."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FlushMessage:
    request_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelMessage:
    request_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigMessage:
    options: Options


@dataclass(frozen=True, slots=True)
class CloseMessage:
    pass


ClientMessage = TextMessage | AppendMessage | FlushMessage | CancelMessage | ConfigMessage | CloseMessage


def parse_client_message(frame: str | bytes, *, max_bytes: int = 65_536) -> ClientMessage:
    """Decode one client frame; every problem is a ``ProtocolError`` with a precise code."""
    size = len(frame) if isinstance(frame, bytes) else len(frame.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ProtocolError(f"frame of {size} bytes is over the {max_bytes}-byte limit", code="frame_too_large")
    if isinstance(frame, bytes):
        try:
            frame = frame.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"binary frame is not valid UTF-8 ({exc.reason})", code="invalid_utf8") from exc
    try:
        data = json.loads(frame)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError("message is not valid JSON", code="invalid_json") from exc
    if not isinstance(data, dict):
        raise ProtocolError(f"message must be a JSON object, not {type(data).__name__}", code="invalid_message")
    return _message(data)


def _message(data: dict[str, Any]) -> ClientMessage:
    kind = data.get("type")
    if kind in ("text", "append"):
        text = data.get("text")
        if not isinstance(text, str):
            raise ProtocolError(f"'{kind}' needs a string 'text'", code="invalid_text")
        if kind == "text":
            return TextMessage(text=text, request_id=_request_id(data), options=Options.parse(data))
        chunk = data.get("chunk", False)
        if not isinstance(chunk, bool):
            raise ProtocolError("'chunk' must be true or false", code="invalid_message")
        return AppendMessage(text=text, request_id=_request_id(data), options=Options.parse(data), chunk=chunk)
    if kind == "flush":
        return FlushMessage(request_id=_request_id(data))
    if kind == "cancel":
        return CancelMessage(request_id=_request_id(data))
    if kind == "config":
        return ConfigMessage(options=Options.parse(data))
    if kind == "close":
        return CloseMessage()
    shown = json.dumps(kind)[:40]
    raise ProtocolError(
        f"unknown message type {shown}; expected text, append, flush, cancel, config or close",
        code="unknown_type",
    )


def _request_id(data: dict[str, Any]) -> str | None:
    value = data.get("request_id")
    if value is None:
        return None
    if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
        raise ProtocolError("request_id must be a non-empty string", code="invalid_request_id")
    value = str(value)
    if len(value) > MAX_REQUEST_ID or not value.isprintable():
        raise ProtocolError(
            f"request_id must be printable and at most {MAX_REQUEST_ID} characters", code="invalid_request_id"
        )
    return value


def client_message(kind: str, **fields: Any) -> str:
    """Encode a client message (used by the Python client)."""
    return json.dumps({"type": kind, **{k: v for k, v in fields.items() if v is not None}})


# Server messages


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStart:
    session_id: str
    voice: str
    speed: float
    format: str
    sample_rate: int
    limits: dict[str, float | int]
    type: str = "session_start"


@dataclass(frozen=True, slots=True, kw_only=True)
class SynthesisStart:
    request_id: str
    voice: str
    speed: float
    format: str
    sample_rate: int
    mime_type: str
    type: str = "synthesis_start"


@dataclass(frozen=True, slots=True, kw_only=True)
class WordTimestamps:
    request_id: str
    sequence: int
    text: str
    offset_s: float
    """Where this chunk's audio starts in the reply."""
    duration_s: float
    words: list[dict[str, float | str]]
    """``{"word", "start_s", "end_s"}``, in seconds from the start of the reply."""
    voice: str | None = None
    """Who speaks these words: the voice as the client named it (a dialogue's speakers differ)."""
    type: str = "word_timestamps"


@dataclass(frozen=True, slots=True, kw_only=True)
class SynthesisComplete:
    request_id: str
    audio_bytes: int
    duration_s: float
    chunks: int
    timings: dict[str, float]
    """``ttfa_s``, ``queue_wait_s``, ``admission_wait_s``, ``phonemize_s``, ``inference_s``,
    ``encode_s``, ``gaps``, ``gap_s``, ``total_s``."""
    trace_id: str | None = None
    """The reply's OpenTelemetry trace id, when the server traces (``docs/operate.md``)."""
    type: str = "synthesis_complete"


@dataclass(frozen=True, slots=True, kw_only=True)
class Cancelled:
    request_id: str
    audio_bytes: int
    """Audio bytes of this request actually sent before the cancel."""
    duration_s: float
    last_word: str | None
    """The last word whose audio was fully sent; None when no word was sent whole (the cancel
    came before the end of the first word, or before any audio)."""
    heard_to_char: int | None = None
    """Where that word ends in the text the client sent for the request (its appends joined): the
    client's own text was heard up to here."""
    type: str = "cancelled"


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorMessage:
    code: str
    message: str
    retryable: bool
    request_id: str | None = None
    type: str = "error"

    @classmethod
    def of(cls, error: SpeakstreamError, request_id: str | None = None) -> ErrorMessage:
        return cls(code=error.code, message=error.message, retryable=error.retryable, request_id=request_id)


ServerMessage = SessionStart | SynthesisStart | WordTimestamps | SynthesisComplete | Cancelled | ErrorMessage


_SERVER_TYPES: dict[str, type[ServerMessage]] = {
    cls.__dataclass_fields__["type"].default: cls  # type: ignore[misc]
    for cls in (SessionStart, SynthesisStart, WordTimestamps, SynthesisComplete, Cancelled, ErrorMessage)
}


def encode_server_message(message: ServerMessage) -> str:
    """The message as JSON (a trace id only when there is one)."""
    data = asdict(message)
    if data.get("trace_id", "") is None:
        del data["trace_id"]
    return json.dumps(data, separators=(",", ":"))


def parse_server_message(data: Mapping[str, Any]) -> ServerMessage | None:
    """A control frame as its typed message, for clients; None for a type this client does not
    know (a newer server). Fields it does not know are ignored; a missing one is a ``ProtocolError``."""
    cls = _SERVER_TYPES.get(str(data.get("type")))
    if cls is None:
        return None
    known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
    try:
        return cls(**known)
    except TypeError as exc:
        raise ProtocolError(f"malformed {data.get('type')} message: {exc}", code="invalid_message") from exc


def classify_frame(frame: str | bytes) -> dict[str, Any] | bytes:
    """The receiver's rule: control if the whole frame parses as a JSON object, else audio."""
    if isinstance(frame, str):
        frame = frame.encode("utf-8")
    if frame[:1] == b"{" and frame[-1:] == b"}":
        try:
            data = json.loads(frame.decode("utf-8"))
        except ValueError:
            return frame
        if isinstance(data, dict):
            return data
    return frame


def safe_audio_frames(data: bytes, max_bytes: int) -> list[bytes]:
    """Split audio into frames of at most ``max_bytes`` none of which reads as a JSON object."""
    frames = [data[i : i + max_bytes] for i in range(0, len(data), max_bytes)]
    out: list[bytes] = []
    for frame in frames:
        if isinstance(classify_frame(frame), dict):
            half = max(2, len(frame) // 2) & ~1
            out += [frame[:half], frame[half:]]
        else:
            out.append(frame)
    return [f for f in out if f]


# What a receiver gets


@dataclass(frozen=True, slots=True)
class AudioEvent:
    request_id: str | None
    data: bytes
    received_at: float


@dataclass(frozen=True, slots=True)
class ControlEvent:
    message: dict[str, Any]
    """The message as it came (JSON object)."""
    received_at: float
    parsed: ServerMessage | None = None
    """The same as its protocol type (None for a type this client does not know)."""

    @property
    def type(self) -> str:
        return str(self.message.get("type"))

    @property
    def request_id(self) -> str | None:
        value = self.message.get("request_id")
        return None if value is None else str(value)


Event = AudioEvent | ControlEvent
FINAL_TYPES = ("synthesis_complete", "cancelled", "error")
"""A request ends with one of these."""
