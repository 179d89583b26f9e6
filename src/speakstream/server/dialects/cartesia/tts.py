"""Cartesia's wire protocol: ``WS /tts/websocket`` and ``POST /tts/bytes``, as pipecat's
``CartesiaTTSService`` and LiveKit's ``cartesia.TTS`` speak them.

- Client: a generation request ``{"context_id", "transcript", "continue", "voice": {"mode": "id",
  "id"}, "output_format": {"container": "raw", "encoding", "sample_rate"}, "language",
  "add_timestamps", "max_buffer_delay_ms", "generation_config": {"speed"}}``; the first one of a
  context sets how it speaks, later ones add text; ``"continue": false`` ends the context's input,
  ``"flush": true`` speaks what is held and is answered by ``flush_done``;
  ``{"context_id", "cancel": true}`` stops the context at once.
- Server: ``chunk`` (base64 ``data``), ``timestamps`` (``word_timestamps``: ``words``, ``start``,
  ``end`` in seconds from the context's start; a chunk's come after its audio, when its real
  length is known), ``flush_done``, ``done`` (``"done": true``) and ``error``, each with its
  ``context_id``.

``max_buffer_delay_ms`` (default 3000): with 0 each transcript is spoken as it is (the client
sends whole sentences); otherwise the chunker decides, and what it holds is spoken when no text has
come for that long. ``model_id`` is accepted and ignored (there is one model).
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from speakstream.errors import InvalidInput, ProtocolError, SpeakstreamError
from speakstream.protocol import Locator, Options, locators
from speakstream.server.alignment import chunk_words, words_of
from speakstream.server.contexts import Context, ContextSocket
from speakstream.server.encoding import ChunkOut
from speakstream.server.http import audio_response, json_body, runtime_of, sse_parts
from speakstream.server.security import client_of
from speakstream.server.speech import SpeechRequest, body_limit, open_reply

ENCODINGS = {"pcm_s16le": "pcm", "pcm_f32le": "f32", "pcm_mulaw": "mulaw"}
DEFAULT_BUFFER_DELAY_MS = 3000
MAX_BUFFER_DELAY_MS = 5000
SPEEDS = {"slowest": 0.7, "slow": 0.85, "normal": 1.0, "fast": 1.15, "fastest": 1.3}


class CartesiaSocket(ContextSocket):
    transport = "cartesia"

    async def handle(self, message: dict[str, Any]) -> bool:
        cid = message.get("context_id")
        if cid is None:
            cid = uuid.uuid4().hex
        if not isinstance(cid, str) or not cid or len(cid) > 256:
            raise ProtocolError("context_id must be a string of 1 to 256 characters", code="invalid_context_id")
        ctx = self.contexts.get(cid)
        if message.get("cancel") is True:
            if ctx is not None:
                await self.cancel(ctx)
            return False
        transcript = message.get("transcript", "")
        if not isinstance(transcript, str):
            raise ProtocolError("transcript must be a string", code="invalid_transcript")
        if ctx is None:
            options, _ = _options(message, self.config.mapped_voice)
            ctx = self.open(cid, options)
            ctx.extra["timestamps"] = message.get("add_timestamps") is True
            ctx.extra["delay_ms"] = _buffer_delay(message)
        await self._take(ctx, message, transcript)
        return False

    async def _take(self, ctx: Context, message: dict[str, Any], transcript: str) -> None:
        more = message.get("continue") is True
        delay_ms = ctx.extra["delay_ms"]
        if transcript.strip():
            await self.text(ctx, transcript, whole=delay_ms == 0)
            if more and delay_ms:
                self.cut_after(ctx, delay_ms / 1000)
        if message.get("flush") is True:
            self.flush(ctx)
            for flush_id in self.flushes_done(ctx):
                await self.send(self._flush_done(ctx, flush_id), ctx)
        if not more:
            self.end(ctx)

    def chunk_messages(self, ctx: Context, out: ChunkOut) -> list[str | bytes]:
        """The piece's audio; on a chunk's last piece, the chunk's word timestamps (timed on its
        real length, see ``ChunkTracker``) and the flushes it completes."""
        messages: list[str | bytes] = []
        step_ms = round(out.duration_s * 1000)
        for _, part in sse_parts(out.data, self.config.audio_frame_bytes) if out.data else ():
            data = base64.b64encode(part).decode("ascii")
            messages.append(self._message(ctx, "chunk", data=data, step_time=step_ms, flush_id=ctx.flush_count))
        if ctx.track.finished is not None and ctx.extra["timestamps"]:
            first, length = ctx.track.finished
            written = ctx.source.times(ctx.reply, first, length)  # the client's own words
            timed = words_of(written) if written is not None else chunk_words(first, length)
            words = {
                "words": [w.word for w in timed],
                "start": [round(first.offset_s + w.start_s, 3) for w in timed],
                "end": [round(first.offset_s + w.end_s, 3) for w in timed],
            }
            messages.append(self._message(ctx, "timestamps", word_timestamps=words))
        messages += [self._flush_done(ctx, fid) for fid in self.flushes_done(ctx)]
        return messages

    def done_messages(self, ctx: Context) -> list[str]:
        flushes = [self._flush_done(ctx, fid) for fid in self.flushes_done(ctx, final=True)]
        return [*flushes, self._message(ctx, "done", done=True)]

    def error_message(self, exc: SpeakstreamError, context_id: str | None) -> str:
        return json.dumps(
            {
                "type": "error",
                "context_id": context_id,
                "done": True,
                "status_code": exc.http_status,
                "title": exc.code.replace("_", " "),
                "message": exc.message,
                "error": exc.message,
                "error_code": exc.code,
            }
        )

    def _flush_done(self, ctx: Context, flush_id: int) -> str:
        return self._message(ctx, "flush_done", flush_done=True, flush_id=flush_id)

    def _message(self, ctx: Context, kind: str, *, done: bool = False, **fields: Any) -> str:
        message = {"type": kind, "context_id": ctx.id, "done": done, "status_code": 206, **fields}
        return json.dumps(message)


def _options(message: dict[str, Any], mapped_voice: Any, *, http: bool = False) -> tuple[Options, int | None]:
    """How a context (or an HTTP request) speaks, and its bitrate (mp3 over HTTP only)."""
    voice = message.get("voice")
    if not isinstance(voice, dict) or voice.get("mode", "id") != "id" or not isinstance(voice.get("id"), str):
        raise InvalidInput('voice must be {"mode": "id", "id": <a voice>}', code="invalid_voice")
    fmt = message.get("output_format") or {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24_000}
    name, bitrate = _format(fmt, http=http)
    rate = fmt.get("sample_rate")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int)):
        raise InvalidInput("output_format.sample_rate must be a whole number", code="invalid_sample_rate")
    language = message.get("language")
    options = Options(
        voice=mapped_voice(voice["id"]),
        speed=_speed(message),
        format=name,
        sample_rate=rate,
        language=language if isinstance(language, str) and language else None,
        dictionaries=_dictionary(message.get("pronunciation_dict_id")),
    )
    return options, bitrate


def _dictionary(value: object) -> tuple[Locator, ...]:
    """Cartesia's ``pronunciation_dict_id``: one dictionary of the server's store."""
    if value is None or value == "":
        return ()
    if not isinstance(value, str):
        raise ProtocolError("pronunciation_dict_id must be a string", code="invalid_dictionaries")
    return locators([value])


def _format(fmt: object, *, http: bool) -> tuple[str, int | None]:
    """Our format for Cartesia's ``output_format``: ``raw`` with an encoding; over HTTP also
    ``wav`` (16-bit) and ``mp3`` (with ``bit_rate``)."""
    containers = ("raw", "wav", "mp3") if http else ("raw",)
    if not isinstance(fmt, dict) or fmt.get("container", "raw") not in containers:
        raise InvalidInput(
            f"output_format.container must be one of {', '.join(containers)}", code="invalid_output_format"
        )
    container = fmt.get("container", "raw")
    if container == "mp3":
        bitrate = fmt.get("bit_rate")
        if bitrate is not None and (isinstance(bitrate, bool) or not isinstance(bitrate, int)):
            raise InvalidInput("output_format.bit_rate must be a whole number", code="invalid_output_format")
        return "mp3", bitrate
    encoding = fmt.get("encoding", "pcm_s16le")
    if encoding not in ENCODINGS or (container == "wav" and encoding != "pcm_s16le"):
        allowed = "pcm_s16le" if container == "wav" else ", ".join(ENCODINGS)
        raise InvalidInput(f"output_format.encoding must be one of {allowed}", code="invalid_output_format")
    return ("wav" if container == "wav" else ENCODINGS[encoding]), None


def _speed(message: dict[str, Any]) -> float | None:
    """``generation_config.speed`` (a number), or the older ``speed`` / experimental controls
    (a number or ``slowest`` ... ``fastest``)."""
    config = message.get("generation_config")
    controls = (message.get("voice") or {}).get("__experimental_controls")
    for speed in (
        config.get("speed") if isinstance(config, dict) else None,
        message.get("speed"),
        controls.get("speed") if isinstance(controls, dict) else None,
    ):
        if speed is None:
            continue
        if isinstance(speed, str) and speed in SPEEDS:
            return SPEEDS[speed]
        if isinstance(speed, int | float) and not isinstance(speed, bool):
            return float(speed)
        raise InvalidInput(f"speed must be a number or one of {', '.join(SPEEDS)}", code="invalid_speed")
    return None


def _buffer_delay(message: dict[str, Any]) -> int:
    delay = message.get("max_buffer_delay_ms", DEFAULT_BUFFER_DELAY_MS)
    if delay is None:
        return DEFAULT_BUFFER_DELAY_MS
    if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= MAX_BUFFER_DELAY_MS:
        raise InvalidInput(f"max_buffer_delay_ms must be 0 to {MAX_BUFFER_DELAY_MS}", code="invalid_buffer_delay")
    return delay


async def websocket_endpoint(websocket: WebSocket) -> None:
    await CartesiaSocket(websocket, websocket.app.state.runtime, client_of(websocket.scope)).run()


# HTTP


async def bytes_endpoint(request: Request) -> Response:
    """``POST /tts/bytes``: the whole transcript's audio, streamed as it is made (what LiveKit's
    ``cartesia.TTS.synthesize`` calls); containers ``raw``, ``wav`` and ``mp3``."""
    runtime = runtime_of(request)
    try:
        data = await json_body(request, body_limit(runtime))
        options, bitrate = _options(data, runtime.config.mapped_voice, http=True)
        speech = SpeechRequest(data.get("transcript"), options, "cartesia", bitrate=bitrate)
        reply = await open_reply(runtime, request, speech)
    except SpeakstreamError as exc:
        runtime.error(exc)
        body = {"error": exc.message, "error_code": exc.code, "title": exc.code.replace("_", " ")}
        return JSONResponse(body, status_code=exc.http_status, headers={"Retry-After": "1"} if exc.retryable else None)
    return await audio_response(reply, runtime, "cartesia", media_type=reply.fmt.mime_type)


def routes() -> list[BaseRoute]:
    return [WebSocketRoute("/tts/websocket", websocket_endpoint), Route("/tts/bytes", bytes_endpoint, methods=["POST"])]
