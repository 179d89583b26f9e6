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

One module to its users (``from speakstream.protocol import ...``), kept as three: ``options``
(a request's options), ``messages`` (the WebSocket's), ``sse`` (Server-Sent Events).
"""

from speakstream.protocol.messages import (
    FINAL_TYPES,
    MAX_REQUEST_ID,
    AppendMessage,
    AudioEvent,
    Cancelled,
    CancelMessage,
    ClientMessage,
    CloseMessage,
    ConfigMessage,
    ControlEvent,
    ErrorMessage,
    Event,
    FlushMessage,
    ServerMessage,
    SessionStart,
    SynthesisComplete,
    SynthesisStart,
    TextMessage,
    WordTimestamps,
    classify_frame,
    client_message,
    encode_server_message,
    parse_client_message,
    parse_server_message,
    safe_audio_frames,
)
from speakstream.protocol.options import (
    CHUNKING,
    MAX_DICTIONARIES,
    MAX_LANGUAGE,
    TEXT_TYPES,
    Locator,
    Options,
    locators,
)
from speakstream.protocol.sse import SSEEvent, SSEReader, sse_event

__all__ = [
    "CHUNKING",
    "FINAL_TYPES",
    "MAX_DICTIONARIES",
    "MAX_LANGUAGE",
    "MAX_REQUEST_ID",
    "TEXT_TYPES",
    "AppendMessage",
    "AudioEvent",
    "CancelMessage",
    "Cancelled",
    "ClientMessage",
    "CloseMessage",
    "ConfigMessage",
    "ControlEvent",
    "ErrorMessage",
    "Event",
    "FlushMessage",
    "Locator",
    "Options",
    "SSEEvent",
    "SSEReader",
    "ServerMessage",
    "SessionStart",
    "SynthesisComplete",
    "SynthesisStart",
    "TextMessage",
    "WordTimestamps",
    "classify_frame",
    "client_message",
    "encode_server_message",
    "locators",
    "parse_client_message",
    "parse_server_message",
    "safe_audio_frames",
    "sse_event",
]
