"""Cartesia's wire protocol: ``WS /tts/websocket``, as pipecat's ``CartesiaTTSService`` and
LiveKit's ``cartesia.TTS`` speak it.

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

from starlette.routing import BaseRoute, WebSocketRoute
from starlette.websockets import WebSocket

from speakstream.errors import InvalidInput, ProtocolError, SpeakstreamError
from speakstream.protocol import Options
from speakstream.server.contexts import Context, ContextSocket
from speakstream.server.dialects.alignment import text_words
from speakstream.server.http import sse_parts
from speakstream.server.reply import ChunkOut
from speakstream.server.security import client_of

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
            ctx = self.open(cid, _options(message, self.config.mapped_voice))
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
        real length, see ``Context.finished``) and the flushes it completes."""
        messages: list[str | bytes] = []
        step_ms = round(out.duration_s * 1000)
        for _, part in sse_parts(out.data, self.config.audio_frame_bytes) if out.data else ():
            data = base64.b64encode(part).decode("ascii")
            messages.append(self._message(ctx, "chunk", data=data, step_time=step_ms, flush_id=ctx.flush_count))
        if ctx.finished is not None and ctx.extra["timestamps"]:
            first, length = ctx.finished
            timed = text_words(first.text, [w.shifted(-first.offset_s) for w in first.words], length)
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


def _options(message: dict[str, Any], mapped_voice: Any) -> Options:
    voice = message.get("voice")
    if not isinstance(voice, dict) or voice.get("mode", "id") != "id" or not isinstance(voice.get("id"), str):
        raise InvalidInput('voice must be {"mode": "id", "id": <a voice>}', code="invalid_voice")
    fmt = message.get("output_format") or {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24_000}
    if not isinstance(fmt, dict) or fmt.get("container", "raw") != "raw" or fmt.get("encoding") not in ENCODINGS:
        raise InvalidInput(
            f"output_format must be raw with one of {', '.join(ENCODINGS)}", code="invalid_output_format"
        )
    rate = fmt.get("sample_rate")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int)):
        raise InvalidInput("output_format.sample_rate must be a whole number", code="invalid_sample_rate")
    language = message.get("language")
    return Options(
        voice=mapped_voice(voice["id"]),
        speed=_speed(message),
        format=ENCODINGS[fmt["encoding"]],
        sample_rate=rate,
        language=language if isinstance(language, str) and language else None,
    )


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


def routes() -> list[BaseRoute]:
    return [WebSocketRoute("/tts/websocket", websocket_endpoint)]
