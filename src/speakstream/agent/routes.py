"""Agent routes on the speech server.

``POST /agent`` takes ``{"prompt", "mode": "bidi"|"batch", "voice"?, "speed"?, "format"?,
"reply_id"?, "tokens_per_s"?, "ttft_s"?}`` and answers with Server-Sent Events: one per agent event,
named by its type, with base64 audio in ``audio_chunk``.

``WS /agent/ws`` carries the same with binary audio frames: send ``{"type": "prompt", ...}`` (same
fields), receive JSON events and binary audio; ``{"type": "interrupt"}`` barges in.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from speakstream.agent.events import AgentEvent, AudioChunkEvent
from speakstream.agent.sources import LlamaCppServer, OpenAISource, ReplaySource, TextSource
from speakstream.agent.voice_agent import MODES, VoiceAgent
from speakstream.data import replies
from speakstream.errors import InvalidInput, SpeakstreamError, internal_error
from speakstream.protocol import Options, sse_event
from speakstream.server.http import error_response, json_body, require_json, runtime_of, streaming
from speakstream.server.loopback import LoopbackChannel
from speakstream.server.runtime import Runtime
from speakstream.server.security import client_of

SourceFactory = Callable[[dict[str, Any]], TextSource]
log = logging.getLogger("speakstream.agent")

MAX_PROMPT_CHARS = 8_000
MAX_REPLY_CHARS = 20_000
MAX_REPLY_ID_CHARS = 64


def source_factory_from(*, llm_url: str | None = None, llm_model: str | None = None) -> SourceFactory:
    """Replay by default; a real LLM when a URL or a local GGUF model is configured."""
    if llm_model and llm_model.endswith(".gguf"):
        server = LlamaCppServer(llm_model).start()
        return lambda _: server.source()
    if llm_url or llm_model:
        return lambda _: OpenAISource(base_url=llm_url, model=llm_model)
    return replay_from_request


def replay_from_request(data: dict[str, Any]) -> TextSource:
    _capped(data, "reply", MAX_REPLY_CHARS)
    _capped(data, "reply_id", MAX_REPLY_ID_CHARS)
    reply_id = str(data.get("reply_id") or "long")
    if not data.get("reply") and reply_id not in replies():
        raise InvalidInput(f"unknown reply_id; one of {', '.join(replies())}", code="unknown_reply")
    try:
        return ReplaySource(
            reply=str(data.get("reply") or ""),
            reply_id=reply_id,
            tokens_per_s=float(data.get("tokens_per_s") or 60.0),
            ttft_s=float(data.get("ttft_s") or 0.1),
        )
    except (TypeError, ValueError) as exc:
        message = "bad replay settings: tokens_per_s and ttft_s must be numbers"
        raise InvalidInput(message, code="invalid_message") from exc


def _agent(runtime: Runtime, channel: LoopbackChannel, sources: SourceFactory, data: dict[str, Any]) -> VoiceAgent:
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidInput("prompt must be a non-empty string", code="empty_text")
    _capped(data, "prompt", MAX_PROMPT_CHARS)
    mode = data.get("mode", "bidi")
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {', '.join(MODES)}", code="invalid_mode")
    settings = runtime.settings(Options.parse(data).over(Options(format="pcm")))
    return VoiceAgent(
        sources(data), channel, mode=mode, voice=settings.voice, speed=settings.speed, audio_format=settings.format
    )


def _capped(data: dict[str, Any], name: str, limit: int) -> None:
    value = data.get(name)
    if isinstance(value, str) and len(value) > limit:
        raise InvalidInput(f"{name} is over the {limit}-character limit", code="text_too_long")


def _event_json(event: AgentEvent) -> dict[str, Any]:
    data = event.to_dict()
    if isinstance(event, AudioChunkEvent):
        data["audio"] = base64.b64encode(event.audio).decode("ascii")
    return data


def agent_routes(sources: SourceFactory = replay_from_request) -> list[BaseRoute]:
    async def agent_sse(request: Request) -> Response:
        runtime = runtime_of(request)
        try:
            require_json(request)  # /agent spends the operator's LLM: no cross-site form posts
            data = await json_body(request, 65_536)
            runtime.require_scheduler()
            channel = LoopbackChannel(runtime, client_of(request.scope))
            agent = _agent(runtime, channel, sources, data)
        except SpeakstreamError as exc:
            return error_response(exc, runtime)
        runtime.metrics.requests.labels("agent").inc()
        return streaming(_sse(channel, agent, str(data["prompt"])), runtime, media_type="text/event-stream")

    async def agent_ws(websocket: WebSocket) -> None:
        await AgentSocket(websocket, runtime_of(websocket), sources).run()  # type: ignore[arg-type]

    async def replay_replies(_: Request) -> Response:
        rows = [{"id": key, "kind": r["kind"], "text": r["text"]} for key, r in replies().items()]
        return JSONResponse({"replies": rows, "default": "long"})

    return [
        Route("/agent", agent_sse, methods=["POST"]),
        Route("/agent/replies", replay_replies),
        WebSocketRoute("/agent/ws", agent_ws),
    ]


async def _sse(channel: LoopbackChannel, agent: VoiceAgent, prompt: str) -> AsyncGenerator[bytes, None]:
    async with channel:
        try:
            async for event in agent.run(prompt):
                yield sse_event(event.type, _event_json(event))
        except Exception:  # a bug must end the stream with an error event, never silence
            log.exception("agent turn failed")
            yield sse_event("error", {"type": "error", **internal_error().to_dict()})


class AgentSocket:
    """One agent conversation over a WebSocket: prompts in; events and binary audio out."""

    def __init__(self, websocket: WebSocket, runtime: Runtime, sources: SourceFactory) -> None:
        self.ws, self.runtime, self.sources = websocket, runtime, sources
        self._agent: VoiceAgent | None = None

    async def run(self) -> None:
        await self.ws.accept()
        turn: asyncio.Task[None] | None = None
        try:
            while True:
                message = await self._receive()
                if message.get("type") == "interrupt":
                    await self._interrupt()
                    continue
                if self._agent is not None and self._agent.running:
                    await self._send_error(InvalidInput("a prompt is still being answered", code="busy"))
                    continue
                if turn is not None:  # its last event is out; let it finish closing
                    await asyncio.gather(turn, return_exceptions=True)
                channel = await self._start(message)
                if channel is None or self._agent is None:
                    continue
                turn = asyncio.create_task(self._turn(self._agent, str(message["prompt"]), channel))
                await self._agent.started.wait()  # so an interrupt right after the prompt is acted on
        except WebSocketDisconnect:
            return
        finally:
            if turn is not None:
                turn.cancel()
                await asyncio.gather(turn, return_exceptions=True)

    async def _start(self, message: dict[str, Any]) -> LoopbackChannel | None:
        """A speech session for one turn (none is held between prompts, so none can idle out
        under the conversation) and the turn's agent; None after telling the client why not."""
        channel = LoopbackChannel(self.runtime, client_of(self.ws.scope))
        try:
            self._agent = _agent(self.runtime, channel, self.sources, message)
            await channel.__aenter__()
        except SpeakstreamError as exc:
            await channel.close()
            await self._send_error(exc)
            return None
        return channel

    async def _interrupt(self) -> None:
        """Barge in; with no reply being spoken, say so (an interrupt is always answered)."""
        if self._agent is None or await self._agent.interrupt() is None:
            await self._send_error(InvalidInput("there is no reply to interrupt", code="nothing_to_interrupt"))

    async def _receive(self) -> dict[str, Any]:
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(message.get("code", 1000))
            frame = message.get("text") or (message.get("bytes") or b"").decode("utf-8", "replace")
            try:
                data = json.loads(frame)
            except ValueError:
                await self._send_error(InvalidInput("message is not valid JSON", code="invalid_json"))
                continue
            if isinstance(data, dict):
                return data
            await self._send_error(InvalidInput("message must be a JSON object", code="invalid_message"))

    async def _turn(self, agent: VoiceAgent, prompt: str, channel: LoopbackChannel) -> None:
        try:
            await self._speak_turn(agent, prompt)
        finally:
            await channel.close()

    async def _speak_turn(self, agent: VoiceAgent, prompt: str) -> None:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):
            try:
                async for event in agent.run(prompt):
                    if isinstance(event, AudioChunkEvent):
                        await self.ws.send_bytes(event.audio)
                    else:
                        await self.ws.send_text(json.dumps(event.to_dict()))
            except (WebSocketDisconnect, RuntimeError, asyncio.CancelledError):
                raise
            except Exception:  # a bug must become an error message, never silence
                log.exception("agent turn failed")
                await self._send_error(internal_error())

    async def _send_error(self, exc: SpeakstreamError) -> None:
        self.runtime.error(exc)
        await self.ws.send_text(json.dumps({"type": "error", **exc.to_dict()}))
