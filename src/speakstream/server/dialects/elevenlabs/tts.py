"""ElevenLabs' wire protocol: the WebSockets ``/v1/text-to-speech/{voice_id}/stream-input`` and
``multi-stream-input``, and the HTTP ``POST /v1/text-to-speech/{voice_id}[/stream][/with-timestamps]``.

What pipecat's ``ElevenLabsTTSService`` / ``ElevenLabsHttpTTSService`` and LiveKit's
``elevenlabs.TTS`` send and read:

- Query: ``output_format`` (``pcm_<rate>``, ``mp3_<rate>_<kbps>``, ``opus_48000_<kbps>``,
  ``ulaw_8000``, ``alaw_8000``), ``inactivity_timeout`` (s, default 20), ``auto_mode`` (each text message is
  complete: spoken as one chunk), ``sync_alignment``, ``language_code``, ``enable_ssml_parsing``
  (the text is SSML; else only a ``<speak>`` document is), ``apply_text_normalization`` (``off``:
  read as it is; also a field of the HTTP body); ``model_id`` and the rest are accepted and
  ignored (there is one model).
- Client: ``{"text": " ", "voice_settings": {...}}`` opens a context, ``{"text": ...}`` adds text,
  ``"flush": true`` speaks what is held, ``{"text": ""}`` ends the input (single stream) or keeps
  a context alive (multi), ``close_context`` (ends the input; a second one while the context
  still speaks stops it at once: pipecat's interruption), ``close_socket``.
- Server: ``{"audio": <base64>, "alignment": {...}, "normalizedAlignment": {...}, "contextId"}``,
  then ``{"isFinal": true, "contextId"}`` when a context's audio is all out; errors are
  ``{"error": <code>, "message": ..., "contextId"}``.

A chunk's alignment rides on its last audio message, when the chunk's real length is known (the
engine trims trailing silence as it decodes), so the characters end exactly with the audio. Its
times start at 0, as ElevenLabs sends them (pipecat adds each alignment's span to its clock);
with ``sync_alignment=true`` (what LiveKit asks for; it reads the times as the context's own)
they count from the start of the context.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from speakstream.errors import InvalidInput, ProtocolError, SpeakstreamError
from speakstream.protocol import Options, locators
from speakstream.server.alignment import CharTimes, SourceAlignment, chunk_char_times
from speakstream.server.contexts import ChunkTracker, Context, ContextSocket
from speakstream.server.encoding import ChunkOut
from speakstream.server.http import audio_response, error_response, json_body, runtime_of, sse_parts, streaming
from speakstream.server.reply import Reply
from speakstream.server.runtime import Runtime
from speakstream.server.security import client_of
from speakstream.server.speech import SpeechRequest, body_limit, open_reply

DEFAULT_FORMAT = "mp3_44100_128"
DEFAULT_INACTIVITY_S = 20.0
_TIME_KEYS = ("character_start_times_seconds", "character_end_times_seconds")
_CODECS = {"pcm": "pcm", "mp3": "mp3", "opus": "opus", "ulaw": "mulaw", "alaw": "alaw"}


def output_format(value: str) -> tuple[str, int, int | None]:
    """``pcm_24000`` -> (format, rate, bitrate): one of ElevenLabs' output formats we make."""
    codec, _, rest = value.partition("_")
    rate, _, kbps = rest.partition("_")
    if codec not in _CODECS or not rate.isdigit() or (kbps and not kbps.isdigit()):
        raise InvalidInput(
            f"output_format {value[:32]!r} is not one we make: pcm_<rate>, mp3_<rate>_<kbps>, "
            "opus_48000_<kbps>, ulaw_8000 or alaw_8000",
            code="invalid_output_format",
        )
    return _CODECS[codec], int(rate), int(kbps) * 1000 if kbps else None


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "1", "yes")


def _normalize(value: object) -> bool | None:
    """ElevenLabs' ``apply_text_normalization``: ``off`` reads the text as it is (``auto``, ``on``:
    normalised, as always here)."""
    if value is None or value in ("auto", "on"):
        return None
    if value == "off":
        return False
    raise InvalidInput("apply_text_normalization is one of auto, on, off", code="invalid_normalize")


def _speed(voice_settings: object) -> float | None:
    if not isinstance(voice_settings, dict) or voice_settings.get("speed") is None:
        return None
    speed = voice_settings["speed"]
    if isinstance(speed, bool) or not isinstance(speed, int | float):
        raise ProtocolError("voice_settings.speed must be a number", code="invalid_speed")
    return float(speed)


class ElevenLabsSocket(ContextSocket):
    transport = "elevenlabs"

    def __init__(self, websocket: WebSocket, runtime: Runtime, client: str, *, multi: bool) -> None:
        super().__init__(websocket, runtime, client)
        self.multi = multi
        self.voice = runtime.config.mapped_voice(websocket.path_params.get("voice_id", ""))
        self.alignment_cumulative = False
        self.auto_mode = False
        self._format: tuple[str, int, int | None] = ("mp3", 44_100, 128_000)
        self._language: str | None = None
        self._text_type: str | None = None
        self._normalize: bool | None = None

    async def start(self) -> None:
        query = self.ws.query_params
        self._format = output_format(query.get("output_format") or DEFAULT_FORMAT)
        self.auto_mode = _flag(query.get("auto_mode"))
        self.alignment_cumulative = _flag(query.get("sync_alignment"))
        self._language = query.get("language_code") or None
        self._text_type = "ssml" if _flag(query.get("enable_ssml_parsing")) else None
        self._normalize = _normalize(query.get("apply_text_normalization"))
        timeout = query.get("inactivity_timeout")
        if timeout is not None and not timeout.isdigit():
            raise InvalidInput("inactivity_timeout must be whole seconds", code="invalid_inactivity_timeout")
        self.inactivity_s = min(float(timeout or DEFAULT_INACTIVITY_S), self.config.idle_timeout_s) or 1.0
        self.open_options({})  # a bad voice or format is refused at the handshake, as ElevenLabs does

    def open_options(self, message: dict[str, Any]) -> tuple[Options, int | None]:
        fmt, rate, bitrate = self._format
        options = Options(
            voice=self.voice,
            speed=_speed(message.get("voice_settings")),
            format=fmt,
            sample_rate=rate,
            language=self._language,
            dictionaries=locators(message.get("pronunciation_dictionary_locators")),
            text_type=self._text_type,
            normalize=self._normalize,
        )
        self.rt.settings(options, bitrate=bitrate)  # checked before the first text
        return options, bitrate

    async def handle(self, message: dict[str, Any]) -> bool:
        if message.get("close_socket") is True:
            return True
        cid = message.get("context_id", "") if self.multi else ""
        if not isinstance(cid, str) or len(cid) > 256:
            raise ProtocolError("context_id must be a string of up to 256 characters", code="invalid_context_id")
        text = message.get("text")
        if text is not None and not isinstance(text, str):
            raise ProtocolError("text must be a string", code="invalid_text")
        ctx = self.contexts.get(cid)
        if message.get("close_context") is True:
            await self._close_context(ctx)
            return False
        if ctx is None:
            if not text and not message.get("flush"):
                return False  # a keepalive
            options, bitrate = self.open_options(message)
            ctx = self.open(cid, options, bitrate=bitrate)
        if text == "" and not self.multi:  # the end of the input
            self.end(ctx)
            return True
        if text and text.strip():  # (the opening " " has nothing to speak)
            await self.text(ctx, text, whole=self.auto_mode)
        if message.get("flush") is True or message.get("try_trigger_generation") is True:
            self.flush(ctx)
        return False

    async def _close_context(self, ctx: Context | None) -> None:
        """The first ``close_context`` ends the input (what is held is spoken, then ``isFinal``);
        a second one, while the context still speaks, stops it at once: that is how pipecat
        interrupts a reply whose text was all sent."""
        if ctx is None:
            return  # (a context that has finished needs nothing)
        if not ctx.ended:
            self.end(ctx)
            return
        await self.cancel(ctx)
        await self.send(self.done_messages(ctx)[0], ctx)

    def chunk_messages(self, ctx: Context, out: ChunkOut) -> list[str | bytes]:
        """The piece's audio; a chunk's last piece also carries the chunk's alignment, timed on
        its real length (see ``ChunkTracker``)."""
        parts = sse_parts(out.data, self.config.audio_frame_bytes) if out.data else [(0, b"")]
        messages: list[dict[str, Any]] = [
            {"audio": base64.b64encode(part).decode("ascii")} if part else {} for _, part in parts
        ]
        if ctx.track.finished is not None:
            messages[-1]["alignment"], messages[-1]["normalizedAlignment"] = self._alignment(ctx, *ctx.track.finished)
        return [json.dumps(self._tag({**m, "isFinal": False}, ctx)) for m in messages if m]

    def _alignment(self, ctx: Context, first: ChunkOut, duration_s: float) -> tuple[dict[str, list[Any]], ...]:
        """The chunk's alignment of the client's own text (of the spoken text when its words do
        not know their spans), and of the spoken text."""
        spoken = chunk_char_times(first, duration_s, word_break=ctx.track.chunks > 1)
        written = ctx.source.times(ctx.reply, first, duration_s) or spoken
        if self.alignment_cumulative:
            spoken, written = (t.shifted(round(first.offset_s * 1000)) for t in (spoken, written))
        return _ws_alignment(written), _ws_alignment(spoken)

    def done_messages(self, ctx: Context) -> list[str]:
        return [json.dumps(self._tag({"isFinal": True}, ctx))]

    def error_message(self, exc: SpeakstreamError, context_id: str | None) -> str:
        message: dict[str, Any] = {"error": exc.code, "message": exc.message}
        if self.multi and context_id is not None:
            message["contextId"] = context_id
        return json.dumps(message)

    def _tag(self, message: dict[str, Any], ctx: Context) -> dict[str, Any]:
        if self.multi:
            message["contextId"] = ctx.id
        return message


def _ws_alignment(times: CharTimes) -> dict[str, list[Any]]:
    return {"chars": times.chars, "charStartTimesMs": times.starts_ms, "charDurationsMs": times.durations_ms}


async def stream_input(websocket: WebSocket) -> None:
    await ElevenLabsSocket(websocket, websocket.app.state.runtime, client_of(websocket.scope), multi=False).run()


async def multi_stream_input(websocket: WebSocket) -> None:
    await ElevenLabsSocket(websocket, websocket.app.state.runtime, client_of(websocket.scope), multi=True).run()


# HTTP


async def speech(request: Request) -> Response:
    """``/v1/text-to-speech/{voice_id}`` and ``/stream``: the audio, streamed as it is made."""
    runtime = runtime_of(request)
    reply = await _admitted(request, runtime)
    if isinstance(reply, Response):
        return reply
    return await audio_response(reply, runtime, "elevenlabs", media_type=reply.fmt.mime_type)


async def speech_with_timestamps(request: Request) -> Response:
    """``.../with-timestamps``: JSON objects, one per line, with base64 audio and the characters'
    times from the start of the reply (``/stream/with-timestamps``), or one object for it all."""
    runtime = runtime_of(request)
    reply = await _admitted(request, runtime)
    if isinstance(reply, Response):
        return reply
    if request.url.path.rstrip("/").endswith("/stream/with-timestamps"):
        return streaming(timed_lines(reply, runtime), runtime, media_type="application/x-ndjson")
    return await timed_whole(reply, runtime)


async def _admitted(request: Request, runtime: Runtime) -> Reply | Response:
    """The request's reply, admitted at the scheduler, or the error response."""
    try:
        data = await json_body(request, body_limit(runtime))
        return await open_reply(runtime, request, _speech(request, data, runtime))
    except SpeakstreamError as exc:
        return elevenlabs_error(exc, runtime)


def _speech(request: Request, data: dict[str, Any], runtime: Runtime) -> SpeechRequest:
    fmt, rate, bitrate = output_format(request.query_params.get("output_format") or DEFAULT_FORMAT)
    language = data.get("language_code")
    options = Options(
        voice=runtime.config.mapped_voice(request.path_params["voice_id"]),
        speed=_speed(data.get("voice_settings")),
        format=fmt,
        sample_rate=rate,
        language=language if isinstance(language, str) and language else None,
        dictionaries=locators(data.get("pronunciation_dictionary_locators")),
        normalize=_normalize(data.get("apply_text_normalization")),
    )
    return SpeechRequest(data.get("text"), options, "elevenlabs", bitrate=bitrate)


Alignments = tuple[dict[str, list[Any]], dict[str, list[Any]]]
Extra = Callable[[ChunkOut, float], dict[str, list[Any]]]
"""More lists for a finished chunk's message (its first output, its audio seconds): a dialogue's
``voice_segments``."""


def _no_extra(first: ChunkOut, duration_s: float) -> dict[str, list[Any]]:
    return {}


async def _chunk_alignments(
    reply: Reply, extra: Extra
) -> AsyncIterator[tuple[ChunkOut, Alignments | None, dict[str, list[Any]]]]:
    """The reply's outputs, each with the alignments (the client's text, the spoken text) of the
    chunk it ends (or None), and ``extra``'s lists for it."""
    track, source = ChunkTracker(), SourceAlignment()
    async for out in reply.outputs():
        track.see(out)
        if track.finished is None:
            yield out, None, {}
            continue
        first, duration_s = track.finished
        spoken = chunk_char_times(first, duration_s, word_break=track.chunks > 1)
        written = source.times(reply, first, duration_s) or spoken
        yield out, (_http_alignment(first, written), _http_alignment(first, spoken)), extra(first, duration_s)


async def timed_lines(reply: Reply, runtime: Runtime, extra: Extra = _no_extra) -> AsyncGenerator[bytes, None]:
    """The reply as ElevenLabs' ``/stream/with-timestamps`` lines: audio, each chunk's alignments."""
    try:
        async for out, alignment, more in _chunk_alignments(reply, extra):
            message: dict[str, Any] = {"audio_base64": base64.b64encode(out.data).decode("ascii")}
            if alignment is not None:
                message["alignment"], message["normalized_alignment"] = alignment
            message.update(more)
            if out.data or alignment is not None:
                yield (json.dumps(message) + "\n").encode()
    except SpeakstreamError as exc:
        runtime.error(exc)
        yield (json.dumps({"error": exc.code, "message": exc.message}) + "\n").encode()


async def timed_whole(reply: Reply, runtime: Runtime, extra: Extra = _no_extra) -> Response:
    """The reply as ElevenLabs' ``/with-timestamps`` object: the audio, the whole alignments."""
    audio = bytearray()
    whole: list[dict[str, list[Any]]] = [{k: [] for k in ("characters", *_TIME_KEYS)} for _ in range(2)]
    extras: dict[str, list[Any]] = {}
    try:
        async for out, alignments, more in _chunk_alignments(reply, extra):
            audio += out.data
            for joined, alignment in zip(whole, alignments or (), strict=False):
                for key, values in alignment.items():
                    joined[key] += values
            for key, values in more.items():
                extras.setdefault(key, []).extend(values)
    except SpeakstreamError as exc:
        return elevenlabs_error(exc, runtime)
    body = {"audio_base64": base64.b64encode(bytes(audio)).decode("ascii"), "alignment": whole[0]}
    return JSONResponse({**body, "normalized_alignment": whole[1], **extras})


def _http_alignment(first: ChunkOut, times: CharTimes) -> dict[str, list[Any]]:
    """A chunk's characters, in seconds from the start of the reply (the HTTP form)."""
    at = first.offset_s
    starts = [round(at + s / 1000, 3) for s in times.starts_ms]
    ends = [round(at + (s + d) / 1000, 3) for s, d in zip(times.starts_ms, times.durations_ms, strict=True)]
    return {"characters": times.chars, "character_start_times_seconds": starts, "character_end_times_seconds": ends}


def elevenlabs_error(exc: SpeakstreamError, runtime: Runtime) -> Response:
    """ElevenLabs' error body: ``{"detail": {"status": <code>, "message": ...}}``."""
    retry = error_response(exc, runtime).headers.get("retry-after")
    return JSONResponse(
        {"detail": {"status": exc.code, "message": exc.message}},
        status_code=exc.http_status,
        headers={"Retry-After": retry} if retry else None,
    )


def routes() -> list[BaseRoute]:
    base = "/v1/text-to-speech/{voice_id}"
    return [
        WebSocketRoute(f"{base}/stream-input", stream_input),
        WebSocketRoute(f"{base}/multi-stream-input", multi_stream_input),
        Route(base, speech, methods=["POST"]),
        Route(f"{base}/stream", speech, methods=["POST"]),
        Route(f"{base}/with-timestamps", speech_with_timestamps, methods=["POST"]),
        Route(f"{base}/stream/with-timestamps", speech_with_timestamps, methods=["POST"]),
    ]
