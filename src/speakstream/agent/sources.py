"""Text sources: async iterators of LLM text deltas.

- ``OpenAISource``: any OpenAI-compatible ``/v1/chat/completions`` with ``stream: true`` (OpenAI,
  vLLM, Ollama, llama.cpp's server, Bedrock's OpenAI-compatible endpoint).
- ``LlamaCppServer``: an embedded llama.cpp server (``xllamacpp``) for a local GGUF chat model,
  bound to 127.0.0.1, spoken to through ``OpenAISource``.
- ``ReplaySource``: an offline stand-in that REPLAYS a fixed reply token by token at a given
  time-to-first-token and rate (defaults measured on a local LLM here). It is not a model.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from speakstream.data import replies
from speakstream.errors import SourceError
from speakstream.protocol import SSEReader

log = logging.getLogger("speakstream.agent")

DEFAULT_TTFT_S = 0.10
DEFAULT_TOKENS_PER_S = 60.0
_TOKEN = re.compile(r"\s*[^\s]{1,4}|\s+")


class TextSource(Protocol):
    @property
    def name(self) -> str:
        """What the demo and events call this source (``replay(...)``, ``openai(...)``)."""
        ...

    def stream(self, prompt: str) -> AsyncIterator[str]:
        """The reply to ``prompt`` as text deltas, as they are generated."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplaySource:
    """Streams a fixed reply like an LLM would (this is a replay, not a model)."""

    reply: str = ""
    reply_id: str = "long"
    ttft_s: float = DEFAULT_TTFT_S
    tokens_per_s: float = DEFAULT_TOKENS_PER_S

    @property
    def name(self) -> str:
        return f"replay({self.reply_id if not self.reply else 'custom'}, {self.tokens_per_s:g} tok/s)"

    @property
    def text(self) -> str:
        return self.reply or replies()[self.reply_id]["text"]

    def tokens(self) -> list[str]:
        """LLM-sized pieces (about four characters, spaces attached to the following word)."""
        return _TOKEN.findall(self.text)

    async def stream(self, prompt: str) -> AsyncIterator[str]:
        start = time.perf_counter()
        for i, token in enumerate(self.tokens()):
            due = start + self.ttft_s + i / self.tokens_per_s
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            yield token


class OpenAISource:
    """Streaming chat completions from an OpenAI-compatible endpoint."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        system_prompt: str = "You are a helpful voice assistant. Answer briefly in plain sentences.",
        max_tokens: int = 200,
        temperature: float = 0.7,
        timeout_s: float = 30.0,
    ) -> None:
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.model = model or os.environ.get("SPEAKSTREAM_LLM_MODEL", "gpt-4o-mini")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY")
        self.system_prompt = system_prompt
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout = httpx.Timeout(timeout_s, connect=10.0)

    @property
    def name(self) -> str:
        return f"openai({self.model} at {self.base_url})"

    def _body(self, prompt: str) -> dict[str, Any]:
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages.append({"role": "user", "content": prompt})
        return {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }

    async def stream(self, prompt: str) -> AsyncIterator[str]:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        url = f"{self.base_url}/chat/completions"
        try:
            async with (
                httpx.AsyncClient(timeout=self.timeout) as client,
                client.stream("POST", url, json=self._body(prompt), headers=headers) as response,
            ):
                if response.status_code >= 400:
                    body = (await response.aread())[:300].decode("utf-8", "replace")
                    log.warning("LLM at %s answered HTTP %s: %s", self.base_url, response.status_code, body)
                    raise SourceError(
                        f"the LLM answered HTTP {response.status_code}",
                        retryable=response.status_code >= 500 or response.status_code == 429,
                    )
                async for delta in _deltas(response):
                    yield delta
        except httpx.TimeoutException as exc:
            raise SourceError("the LLM timed out", code="source_timeout") from exc
        except httpx.HTTPError as exc:
            log.warning("LLM at %s failed: %r", self.base_url, exc)
            raise SourceError(f"the LLM request failed ({type(exc).__name__})") from exc


async def _deltas(response: httpx.Response) -> AsyncIterator[str]:
    """Content deltas of a chat-completions event stream; usage-only and empty chunks skipped."""
    reader = SSEReader()
    done = False
    async for block in response.aiter_bytes():
        for event in reader.feed(block):
            if event.data.strip() == "[DONE]":
                done = True
                continue
            try:
                chunk = json.loads(event.data)
            except ValueError as exc:
                raise SourceError(f"LLM sent a malformed event: {event.data[:80]!r}") from exc
            if isinstance(chunk, dict) and chunk.get("error"):
                raise SourceError(f"LLM failed mid-stream: {str(chunk['error'])[:200]}")
            for choice in (chunk.get("choices") or []) if isinstance(chunk, dict) else []:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    yield content
    if not done:
        raise SourceError("LLM stream ended without [DONE] (connection dropped?)")


class LlamaCppServer:
    """An embedded llama.cpp server (xllamacpp, CPU) for a local GGUF chat model."""

    def __init__(
        self, model_path: Path | str, *, n_ctx: int = 2048, threads: int = 2, chat_template: str | None = None
    ) -> None:
        self.model_path = Path(model_path)
        self.n_ctx, self.threads, self.chat_template = n_ctx, threads, chat_template
        self._server: Any = None
        self.base_url = ""

    def start(self) -> LlamaCppServer:
        try:
            import xllamacpp
        except ImportError as exc:
            raise SourceError("the embedded LLM needs `pip install speakstream[llm]`", retryable=False) from exc
        if not self.model_path.is_file():
            raise SourceError(f"no GGUF model at {self.model_path}", retryable=False)
        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.n_ctx = self.n_ctx
        params.cpuparams.n_threads = self.threads
        params.port = 0
        params.verbosity = 0
        if self.chat_template:
            params.use_jinja = False
            params.chat_template = self.chat_template
        self._server = xllamacpp.Server(params)
        address = str(self._server.listening_address)
        self.base_url = (address if address.startswith("http") else f"http://{address}") + "/v1"
        return self

    def stop(self) -> None:
        self._server = None  # xllamacpp stops its server when the object is released

    def source(self, **kwargs: Any) -> OpenAISource:
        return OpenAISource(base_url=self.base_url, model=self.model_path.stem, api_key=None, **kwargs)

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
