from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from speakstream.agent.models import gemma_270m_path
from speakstream.agent.sources import LlamaCppServer, OpenAISource, ReplaySource
from speakstream.data import replies
from speakstream.errors import SourceError
from tests.agent.fake_llm import WORDS, fake_llm_app


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[str]:
    server = uvicorn.Server(
        uvicorn.Config(fake_llm_app(), host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/v1"
    server.should_exit = True
    thread.join(10)


async def collect(source: OpenAISource | ReplaySource) -> list[str]:
    return [delta async for delta in source.stream("hello")]


async def test_replay_streams_the_reply_at_the_given_rate() -> None:
    source = ReplaySource(reply_id="greeting", ttft_s=0.05, tokens_per_s=200.0)
    started = time.perf_counter()
    deltas = await collect(source)
    elapsed = time.perf_counter() - started
    assert "".join(deltas) == replies()["greeting"]["text"]
    assert len(deltas) >= 15 and all(len(d.strip()) <= 4 for d in deltas)
    assert elapsed >= 0.05 + (len(deltas) - 1) / 200.0
    assert "replay" in source.name


async def test_openai_source_skips_role_usage_and_empty_chunks(fake_llm: str) -> None:
    assert await collect(OpenAISource(base_url=fake_llm, model="ok")) == WORDS


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("error-mid", "mid-stream"),
        ("drop", "without \\[DONE\\]"),
        ("http500", "HTTP 500"),
        ("unauthorized", "HTTP 401"),
    ],
)
async def test_openai_source_errors_are_clean(fake_llm: str, model: str, message: str) -> None:
    with pytest.raises(SourceError, match=message):
        await collect(OpenAISource(base_url=fake_llm, model=model))


async def test_openai_source_times_out(fake_llm: str) -> None:
    with pytest.raises(SourceError, match="timed out") as info:
        await collect(OpenAISource(base_url=fake_llm, model="slow", timeout_s=0.5))
    assert info.value.retryable


async def test_unreachable_llm() -> None:
    with pytest.raises(SourceError, match="failed"):
        await collect(OpenAISource(base_url="http://127.0.0.1:9/v1", model="x"))


@pytest.mark.llm
@pytest.mark.slow
async def test_openai_source_against_a_real_llama_cpp_server() -> None:
    with LlamaCppServer(gemma_270m_path(), chat_template="gemma") as server:
        source = server.source(max_tokens=24, temperature=0.0)
        started = time.perf_counter()
        deltas = []
        async for delta in source.stream("Say hello."):
            deltas.append((time.perf_counter() - started, delta))
    assert len(deltas) >= 8  # real token streaming, one delta at a time
    assert deltas[-1][0] > deltas[0][0]  # spread over time, not one buffered body
    assert "".join(d for _, d in deltas).strip()
