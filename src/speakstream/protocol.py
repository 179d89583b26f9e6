"""The wire protocol, shared by the server and the client.

WebSocket ``/invocations-bidirectional-stream``: the client sends JSON messages as text *or*
binary frames (binary is decoded as UTF-8). The server sends audio as binary frames and control
messages as JSON text frames. A receiver separates them by one rule: a frame is control only if
the whole frame parses as a JSON object (raw PCM may begin with the byte ``{``); the server never
sends an audio frame that would parse as one.

Client -> server::

    {"type": "text", "text": "...", "request_id"?, OPTIONS}
    {"type": "append", "text": "...", "chunk"?, "request_id"?, OPTIONS}
    {"type": "flush", "request_id"?}
    {"type": "cancel", "request_id"?}
    {"type": "config", OPTIONS}
    {"type": "close"}

OPTIONS are any of ``"voice"``, ``"speed"``, ``"format"``, ``"sample_rate"``, ``"chunking"`` (text
only), ``"language"``, ``"pronunciation_dictionaries"``, ``"text_type"`` and ``"normalize"`` (see
``Options``).

``append`` adds raw LLM fragments that the server chunks itself; ``"chunk": true`` says the text
is a whole chunk, chunked by the client: it is spoken as it is, at once, and not split again.
``flush`` ends the appended request.

Server -> client: ``session_start``, ``synthesis_start``, ``word_timestamps``, binary audio,
``synthesis_complete``, ``cancelled``, ``error`` (see the dataclasses below for fields).

Server-Sent Events (``text/event-stream``) carry the same information as named events with JSON
data; ``SSEReader`` reassembles events split anywhere across network reads.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from speakstream.errors import ProtocolError, SpeakstreamError

MAX_REQUEST_ID = 128
CHUNKING = ("auto", "sentences", "none")
MAX_LANGUAGE = 24
MAX_DICTIONARIES = 8
TEXT_TYPES = ("text", "ssml")


# Client messages


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """How to speak a request: the one options model of every route (the WebSocket's messages,
    ``/invocations``, the OpenAI route, ``/agent``). None means the session's or server's default."""

    voice: str | None = None
    speed: float | None = None
    format: str | None = None
    sample_rate: int | None = None
    chunking: str | None = None
    """``auto`` (clause first, then sentences), ``sentences``, or ``none`` (the whole text at once)."""
    language: str | None = None
    """The language to read the text in (``es``, ``pt-br``, ``ja``...); default: the voice's own."""
    dictionaries: tuple[Locator, ...] = ()
    """Pronunciation dictionaries to apply, the earlier first: ``"pronunciation_dictionaries"``,
    a list of ids or of ``{"id", "version_id"?}`` (ElevenLabs' ``pronunciation_dictionary_locators``,
    ``{"pronunciation_dictionary_id", "version_id"?}``, is read too)."""
    text_type: str | None = None
    """``ssml`` (the text is SSML; one without a root is read as inside ``<speak>``) or ``text``
    (never SSML); default: SSML when the text is a ``<speak>`` document."""
    normalize: bool | None = None
    """False: the client normalised the text (numbers, dates, addresses), so the engine reads it
    as it is; default: the engine normalises it."""

    @classmethod
    def parse(cls, data: Mapping[str, Any], *, strings: bool = False) -> Options:
        """Options from a JSON object; ``strings``: values may be text (URL query parameters).
        Every type problem is a ``ProtocolError`` with the field's code."""
        if strings:
            data = {**data, **{k: _from_text(data.get(k), k) for k in ("speed", "sample_rate", "normalize")}}
        return _options(data)

    def over(self, defaults: Options) -> Options:
        """These options, with ``defaults`` where a field is unset (a false flag is set)."""
        return Options(**{f.name: _over(getattr(self, f.name), getattr(defaults, f.name)) for f in fields(self)})


def _over(value: Any, default: Any) -> Any:
    return value if isinstance(value, bool) else value or default


@dataclass(frozen=True, slots=True)
class Locator:
    """A pronunciation dictionary and one of its versions (None: the latest)."""

    dictionary_id: str
    version_id: str | None = None


def locators(value: Any) -> tuple[Locator, ...]:
    """Dictionary locators from JSON: ids, ``{"id", "version_id"?}`` or ElevenLabs'
    ``{"pronunciation_dictionary_id", "version_id"?}``; a ``ProtocolError`` says what is wrong."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_DICTIONARIES:
        raise ProtocolError(
            f"pronunciation dictionaries are a list of at most {MAX_DICTIONARIES}", code="invalid_dictionaries"
        )
    found = []
    for item in value:
        if isinstance(item, dict):
            item_id, version = item.get("pronunciation_dictionary_id", item.get("id")), item.get("version_id")
        else:
            item_id, version = item, None
        if not isinstance(item_id, str) or not 0 < len(item_id) <= 128 or not isinstance(version, str | None):
            raise ProtocolError("a dictionary locator is an id or {id, version_id}", code="invalid_dictionaries")
        found.append(Locator(item_id, version or None))
    return tuple(found)


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


def _options(data: Mapping[str, Any]) -> Options:
    voice, speed, fmt, rate = (data.get(k) for k in ("voice", "speed", "format", "sample_rate"))
    if voice is not None and not isinstance(voice, str):
        raise ProtocolError("voice must be a string", code="unknown_voice")
    if speed is not None and (
        isinstance(speed, bool) or not isinstance(speed, int | float) or not math.isfinite(speed)
    ):
        raise ProtocolError("speed must be a number", code="invalid_speed")
    if fmt is not None and not isinstance(fmt, str):
        raise ProtocolError("format must be a string", code="invalid_format")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int)):
        raise ProtocolError("sample_rate must be an integer", code="invalid_sample_rate")
    chunking = data.get("chunking")
    if chunking is not None and chunking not in CHUNKING:
        raise ProtocolError(f"chunking must be one of {', '.join(CHUNKING)}", code="invalid_chunking")
    language = data.get("language")
    if language is not None and (not isinstance(language, str) or len(language) > MAX_LANGUAGE):
        raise ProtocolError(
            f"language must be a string of at most {MAX_LANGUAGE} characters", code="unsupported_language"
        )
    text_type = data.get("text_type")
    if text_type is not None and text_type not in TEXT_TYPES:
        raise ProtocolError(f"text_type must be one of {', '.join(TEXT_TYPES)}", code="invalid_text_type")
    normalize = data.get("normalize")
    if normalize is not None and not isinstance(normalize, bool):
        raise ProtocolError("normalize must be true or false", code="invalid_normalize")
    found = data.get("pronunciation_dictionaries", data.get("pronunciation_dictionary_locators"))
    return Options(
        voice=voice,
        speed=None if speed is None else float(speed),
        format=fmt,
        sample_rate=rate,
        chunking=chunking,
        language=language or None,
        dictionaries=locators(found),
        text_type=text_type,
        normalize=normalize,
    )


def _from_text(value: Any, name: str) -> Any:
    if not isinstance(value, str):
        return value
    if name == "normalize":
        return {"true": True, "false": False}.get(value.lower(), value)
    try:
        return int(value) if name == "sample_rate" else float(value)
    except ValueError as exc:
        raise ProtocolError(f"{name} must be a number", code=f"invalid_{name}") from exc


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


# Server-Sent Events


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
