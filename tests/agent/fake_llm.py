"""A small OpenAI-compatible chat server for source tests: streams like a real one, and
misbehaves on request (the model name picks the behaviour)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

WORDS = ["Sure", ",", " here", " is", " the", " answer", ".", " It", " has", " two", " sentences", "."]


def _chunk(content: str | None, *, usage: bool = False) -> bytes:
    body: dict[str, object] = {"id": "x", "object": "chat.completion.chunk", "model": "fake"}
    body["choices"] = [] if usage else [{"index": 0, "delta": {} if content is None else {"content": content}}]
    if usage:
        body["usage"] = {"prompt_tokens": 3, "completion_tokens": len(WORDS), "total_tokens": 3 + len(WORDS)}
    return f"data: {json.dumps(body)}\n\n".encode()


async def _stream(model: str) -> AsyncIterator[bytes]:
    yield _chunk(None)  # role-only first delta, as OpenAI sends
    for i, word in enumerate(WORDS):
        if model == "error-mid" and i == 4:
            yield b'data: {"error": {"message": "model overloaded", "type": "server_error"}}\n\n'
            return
        if model == "drop" and i == 4:
            return
        if model == "slow" and i == 2:
            await asyncio.sleep(5)
        yield _chunk(word)
        yield _chunk("")  # empty deltas happen
        await asyncio.sleep(0.005)
    yield _chunk(None, usage=True)
    yield b"data: [DONE]\n\n"


async def completions(request: Request) -> Response:
    body = await request.json()
    model = body.get("model", "ok")
    if model == "http500":
        return JSONResponse({"error": {"message": "boom"}}, status_code=500)
    if model == "unauthorized":
        return JSONResponse({"error": {"message": "bad key"}}, status_code=401)
    return StreamingResponse(_stream(model), media_type="text/event-stream")


def fake_llm_app() -> Starlette:
    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    app.state.runtime = None
    return app
