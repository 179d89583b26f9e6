"""Deepgram's text-to-speech API: ``WS /v1/speak`` and ``POST /v1/speak``, as the official
``deepgram-sdk`` and LiveKit's ``deepgram.TTS`` speak them.

- Query (both): ``model`` (a Kokoro or saved voice, or a Deepgram voice such as
  ``aura-2-thalia-en``, read by a Kokoro voice of its language and gender: ``voices``),
  ``encoding`` (``linear16``, ``mulaw``, ``alaw``; over HTTP also ``mp3``, ``opus``, ``flac``, ``aac``),
  ``sample_rate``, ``speed``; over HTTP ``container`` (``none``, ``wav``, ``ogg``) and
  ``bit_rate``. The rest (``mip_opt_out``, ``tag``, ``callback``, ...) is accepted and ignored, as
  Deepgram's clients send several.
- Client: ``{"type": "Speak", "text"}`` adds text (the chunker decides where chunks end);
  ``Flush`` speaks what is held and is answered by ``{"type": "Flushed", "sequence_id"}`` once
  its audio is out; ``Clear`` stops the audio at once and is answered by ``Cleared``; ``Close``
  finishes what was sent, then closes.
- Server: ``Metadata`` first, then binary audio frames; ``Warning`` for a message it could not
  act on (the connection goes on) and ``Error`` when speech stopped. ``sequence_id`` counts the
  connection's Flush and Clear messages from 0.

Each flush ends a reply: the text after it is a new reply (its first words spoken as soon as any
reply's are), whose audio follows the last one's on the one stream. So a connection kept open
between an agent's turns holds no reply, and no admission, while it waits.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from speakstream.errors import InvalidInput, ProtocolError, SpeakstreamError
from speakstream.protocol import Options
from speakstream.server.contexts import Context, ContextSocket
from speakstream.server.dialects.deepgram.voices import kokoro_voice
from speakstream.server.encoding import ChunkOut
from speakstream.server.http import audio_response, json_body, runtime_of, sse_parts
from speakstream.server.runtime import Runtime
from speakstream.server.security import client_of
from speakstream.server.speech import SpeechRequest, body_limit, open_reply

MODEL_VERSION = "kokoro-82m-v1.0"
_RAW = {"linear16": "pcm", "mulaw": "mulaw", "alaw": "alaw"}
_ENCODED = {"mp3": "mp3", "opus": "opus", "flac": "flac", "aac": "adts"}


def query_options(query: Mapping[str, str], mapped_voice: Any, *, http: bool) -> tuple[Options, int | None]:
    """How a connection (or an HTTP request) speaks, from its query, and the encoder's bitrate."""
    fmt = _format(query.get("encoding") or ("mp3" if http else "linear16"), query.get("container"), http=http)
    bitrate = _whole(query.get("bit_rate"), "bit_rate") if http else None
    speed = query.get("speed")
    try:
        speed_value = float(speed) if speed else None
    except ValueError:
        raise InvalidInput("speed must be a number", code="invalid_speed") from None
    voice = kokoro_voice(mapped_voice(query["model"]) if query.get("model") else None)
    rate = _whole(query.get("sample_rate"), "sample_rate")
    return Options(voice=voice, speed=speed_value, format=fmt, sample_rate=rate), bitrate


def _format(encoding: str, container: str | None, *, http: bool) -> str:
    """Our format for an ``encoding`` in a ``container``: raw over the socket; over HTTP
    ``linear16`` is a WAV file unless ``container=none``, and ``opus`` is Ogg."""
    made = {**_RAW, **_ENCODED} if http else _RAW
    if encoding not in made:
        raise InvalidInput(f"encoding must be one of {', '.join(made)}", code="invalid_encoding")
    if not http or container in (None, ""):
        return "wav" if http and encoding == "linear16" else made[encoding]
    allowed = {"linear16": ("none", "wav"), "opus": ("ogg",)}.get(encoding, ("none",))
    if container not in allowed:
        raise InvalidInput(f"container for {encoding} must be {' or '.join(allowed)}", code="invalid_container")
    return "wav" if container == "wav" else made[encoding]


def _whole(value: str | None, name: str) -> int | None:
    if not value:
        return None
    if not value.isdigit():
        raise InvalidInput(f"{name} must be a whole number", code=f"invalid_{name}")
    return int(value)


class DeepgramSocket(ContextSocket):
    transport = "deepgram"

    def __init__(self, websocket: WebSocket, runtime: Runtime, client: str = "") -> None:
        super().__init__(websocket, runtime, client)
        self.options = Options()
        self.ctx: Context | None = None
        self.sequences = 0

    async def start(self) -> None:
        """A bad model or format is refused at the handshake; then the connection's metadata."""
        query = self.ws.query_params
        self.options, _ = query_options(query, self.config.mapped_voice, http=False)
        self.rt.settings(self.options)  # checked: a bad model or format is refused here
        await self.send(json.dumps(_metadata(self.id, query.get("model") or self.config.voice)))

    async def handle(self, message: dict[str, Any]) -> bool:
        kind = message.get("type")
        if kind == "Speak":
            text = message.get("text")
            if not isinstance(text, str):
                raise ProtocolError("Speak needs its text as a string", code="invalid_text")
            if text.strip():
                await self.text(self._context(), text)
        elif kind == "Flush":
            await self._flush()
        elif kind == "Clear":
            await self._clear()
        elif kind == "Close":
            return True
        else:
            raise ProtocolError("type must be Speak, Flush, Clear or Close", code="invalid_type")
        return False

    def _context(self) -> Context:
        """The reply text goes to: the open one, or a new one whose audio follows the last's."""
        ctx = self.ctx
        if ctx is not None and not ctx.ended and self.contexts.get(ctx.id) is ctx:
            return ctx
        self.ctx = self.open(uuid.uuid4().hex, self.options)
        if ctx is not None and ctx.task is not None:
            self.ctx.extra["after"] = ctx.task
        return self.ctx

    async def _flush(self) -> None:
        """The open reply ends (what it holds is spoken), answered after its last audio."""
        ctx, self.ctx = self.ctx, None
        if ctx is None or ctx.ended or self.contexts.get(ctx.id) is not ctx:
            await self.send(self._answer("Flushed"))  # nothing held: answered at once
            return
        ctx.extra["flushed"] = self._answer("Flushed")
        self.end(ctx)

    async def _clear(self) -> None:
        for ctx in list(self.contexts.values()):
            await self.cancel(ctx)
        self.ctx = None
        await self.send(self._answer("Cleared"))

    def _answer(self, kind: str) -> str:
        self.sequences += 1
        return json.dumps({"type": kind, "sequence_id": self.sequences - 1})

    async def _speak(self, ctx: Context) -> None:
        before = ctx.extra.get("after")
        if before is not None:  # one audio stream: the last reply's audio goes out first
            await asyncio.wait([before])
        await super()._speak(ctx)

    def chunk_messages(self, ctx: Context, out: ChunkOut) -> list[str | bytes]:
        return [part for _, part in sse_parts(out.data, self.config.audio_frame_bytes) if part]

    def done_messages(self, ctx: Context) -> list[str]:
        return [ctx.extra["flushed"]] if "flushed" in ctx.extra else []

    def error_message(self, exc: SpeakstreamError, reference: str | None) -> str:
        kind = "Warning" if isinstance(exc, ProtocolError) else "Error"
        return json.dumps({"type": kind, "code": exc.code, "description": exc.message})


def _metadata(request_id: str, model: str) -> dict[str, str]:
    return {
        "type": "Metadata",
        "request_id": request_id,
        "model_name": model,
        "model_version": MODEL_VERSION,
        "model_uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"speakstream/{MODEL_VERSION}")),
    }


async def websocket_endpoint(websocket: WebSocket) -> None:
    await DeepgramSocket(websocket, websocket.app.state.runtime, client_of(websocket.scope)).run()


async def speak_endpoint(request: Request) -> Response:
    """``POST /v1/speak``: ``{"text": ...}``'s audio, streamed as it is made (MP3 by default)."""
    runtime = runtime_of(request)
    try:
        data = await json_body(request, body_limit(runtime))
        speech_options, bitrate = query_options(request.query_params, runtime.config.mapped_voice, http=True)
        speech = SpeechRequest(data.get("text"), speech_options, "deepgram", bitrate=bitrate)
        reply = await open_reply(runtime, request, speech)
    except SpeakstreamError as exc:
        runtime.error(exc)
        body = {"err_code": exc.code, "err_msg": exc.message}
        return JSONResponse(body, status_code=exc.http_status, headers={"Retry-After": "1"} if exc.retryable else None)
    headers = {
        "dg-request-id": reply.request_id,
        "dg-model-name": request.query_params.get("model") or runtime.config.voice,
        "dg-char-count": str(len(str(data.get("text")))),
    }
    return await audio_response(reply, runtime, "deepgram", media_type=reply.fmt.mime_type, headers=headers)


def routes() -> list[BaseRoute]:
    return [WebSocketRoute("/v1/speak", websocket_endpoint), Route("/v1/speak", speak_endpoint, methods=["POST"])]
