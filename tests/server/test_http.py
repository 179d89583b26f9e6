"""HTTP routes against a real uvicorn server: streaming, SSE, OpenAI compatibility, errors."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time

import httpx
import openai
import pytest
from starlette.routing import Route

from speakstream.audio.decode import decode
from speakstream.client import fetch_audio, stream_events
from speakstream.config import ServerConfig
from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.harness import raw_http
from speakstream.loadtest.servers import server_counts, start_server
from speakstream.scheduler import Job
from speakstream.server.app import create_app
from speakstream.server.runtime import Runtime
from speakstream.server.serve import ThreadedServer

TEXT = "Thanks for waiting, I found your booking. Your flight leaves tomorrow morning."


async def test_ping_is_503_until_the_engine_is_ready() -> None:
    def slow_engine() -> FakeEngine:
        time.sleep(1.0)
        return FakeEngine()

    app = create_app(ServerConfig(), engine_factory=slow_engine)
    server = ThreadedServer(app)
    server.thread.start()
    try:
        while not server.server.started:
            await asyncio.sleep(0.01)
        async with httpx.AsyncClient(base_url=server.url) as client:
            early = await client.get("/ping")
            assert early.status_code == 503 and early.headers["retry-after"]
            busy = await client.post("/invocations", json={"text": "Hi."})
            assert busy.status_code == 503 and busy.json()["error"]["code"] == "not_ready"
            while (await client.get("/ping")).status_code != 200:
                await asyncio.sleep(0.05)
    finally:
        server.stop()


async def test_invocations_streams_audio(fake_server: ThreadedServer) -> None:
    async with httpx.AsyncClient(base_url=fake_server.url) as client:
        response = await client.post("/invocations", json={"text": TEXT, "format": "wav", "voice": "af_bella"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "audio/wav" and response.headers["x-request-id"]
    samples, rate = decode(response.content, "wav")
    assert rate == 24_000 and len(samples) / rate > 1.0


async def test_invocations_accepts_plain_text_with_query_parameters(fake_server: ThreadedServer) -> None:
    async with httpx.AsyncClient(base_url=fake_server.url) as client:
        response = await client.post(
            "/invocations?format=mp3&speed=1.5", content=TEXT.encode(), headers={"content-type": "text/plain"}
        )
    assert response.status_code == 200 and response.headers["content-type"] == "audio/mpeg"
    assert len(decode(response.content, "mp3")[0]) > 0


async def test_audio_leaves_chunk_by_chunk(fake_server: ThreadedServer) -> None:
    arrivals = []
    async with (
        httpx.AsyncClient(base_url=fake_server.url) as client,
        client.stream("POST", "/invocations", json={"text": " ".join([TEXT] * 3)}) as response,
    ):
        async for block in response.aiter_raw():
            arrivals.append((time.perf_counter(), len(block)))
    assert len(arrivals) >= 3  # several network writes, not one buffered body
    assert arrivals[-1][0] - arrivals[0][0] > 0.05


async def test_invocations_sse(fake_server: ThreadedServer) -> None:
    events = [e async for e in stream_events(f"{fake_server.url}/invocations", {"text": TEXT})]
    names = [e.event for e in events]
    assert names[0] == "audio_stream_start" and names[-1] == "audio_stream_end"
    chunks = [e.json() for e in events if e.event == "audio_chunk"]
    assert [c["sequence"] for c in chunks] == list(range(len(chunks)))
    audio = b"".join(base64.b64decode(c["audio"]) for c in chunks)
    end = events[-1].json()
    assert end["audio_bytes"] == len(audio) and end["chunks"] == 3
    assert all(c["words"] for c in chunks if c["text"])
    assert {"ttfa_s", "queue_wait_s", "inference_s", "encode_s"} <= set(end["timings"])


async def test_sse_events_stay_small_whatever_a_chunk_holds() -> None:
    """One long chunk (``chunking: none``) is still many events of at most ``audio_frame_bytes``."""
    server = start_server(FakeEngine(), audio_frame_bytes=4096)
    try:
        body = {"text": TEXT * 4, "chunking": "none"}
        events = [e async for e in stream_events(f"{server.url}/invocations", body)]
    finally:
        server.stop()
    chunks = [e.json() for e in events if e.event == "audio_chunk"]
    sizes = [len(base64.b64decode(c["audio"])) for c in chunks]
    assert len(chunks) > 10 and max(sizes) <= 4096
    assert sum(sizes) == events[-1].json()["audio_bytes"]
    assert sum(c["duration_s"] for c in chunks) == pytest.approx(events[-1].json()["duration_s"], abs=0.01)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"text": ""}, 400, "empty_text"),
        ({"text": "   "}, 400, "empty_text"),
        ({"text": 5}, 400, "invalid_text"),
        ({"text": "hi", "voice": "nobody"}, 400, "unknown_voice"),
        ({"text": "hi", "speed": 7}, 400, "invalid_speed"),
        ({"text": "hi", "speed": "fast"}, 400, "invalid_speed"),
        ({"text": "hi", "format": "wma"}, 400, "invalid_format"),
        ({"text": "hi", "format": "opus", "sample_rate": 44_100}, 400, "invalid_sample_rate"),
        ({"text": "x" * 20_001}, 400, "text_too_long"),
        ({"text": "7" * 15_000 + " okay."}, 400, "audio_too_long"),  # a code: at least 3,000 s to speak
        ({"text": "hi", "language": "klingon"}, 400, "unsupported_language"),
        ({"text": "hi", "voice": "af_heart@"}, 400, "unsupported_language"),
        ({"text": "你好", "voice": "af_heart"}, 400, "unsupported_text"),
        ({"text": "你好", "voice": "af_heart", "language": "fr"}, 400, "unsupported_text"),
    ],
)
async def test_invocations_errors(fake_server: ThreadedServer, body: dict[str, object], status: int, code: str) -> None:
    async with httpx.AsyncClient(base_url=fake_server.url) as client:
        response = await client.post("/invocations", json=body)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code


async def test_body_limits_and_bad_bodies(fake_server: ThreadedServer) -> None:
    async with httpx.AsyncClient(base_url=fake_server.url) as client:
        huge = await client.post("/invocations", content=b"a" * 200_000, headers={"content-type": "text/plain"})
        assert huge.status_code == 413
        broken = await client.post("/invocations", content=b"{not json", headers={"content-type": "application/json"})
        assert broken.status_code == 400 and broken.json()["error"]["code"] == "invalid_json"
        binary = await client.post("/invocations", content=b"\xff\xfe", headers={"content-type": "text/plain"})
        assert binary.status_code == 400 and binary.json()["error"]["code"] == "invalid_utf8"


async def test_metrics(fake_server: ThreadedServer) -> None:
    await fetch_audio(fake_server.url, TEXT)
    async with httpx.AsyncClient(base_url=fake_server.url) as client:
        await client.post("/invocations", json={"text": ""})
        body = (await client.get("/metrics")).text
    for name in (
        "speakstream_time_to_first_audio_seconds_bucket",
        "speakstream_real_time_factor",
        "speakstream_queue_wait_seconds",
        "speakstream_active_sessions",
        'speakstream_engine_seconds_total{window="first"}',
        'speakstream_errors_total{code="empty_text"}',
    ):
        assert name in body


def test_the_engine_seconds_of_a_failed_step_are_counted() -> None:
    """A window that failed or was cancelled took the engine's time too (``Job.failed_s``)."""
    runtime = Runtime(ServerConfig(fake_engine=True), lambda: FakeEngine())
    job = Job("s", "r", 0, "text", "af_heart", 1.0)
    job.failed_s = 0.25
    runtime._on_piece(job, None)
    sample = runtime.metrics.registry.get_sample_value("speakstream_engine_seconds_total", {"window": "first"})
    assert sample == pytest.approx(0.25)


def test_openai_sdk_non_streaming_and_streaming(fake_server: ThreadedServer) -> None:
    client = openai.OpenAI(base_url=f"{fake_server.url}/v1", api_key="unused")
    speech = client.audio.speech.create(model="tts-1", voice="alloy", input=TEXT, response_format="wav")
    samples, rate = decode(speech.content, "wav")
    assert rate == 24_000 and len(samples) > rate
    with client.audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts", voice="af_heart", input=TEXT, response_format="pcm"
    ) as response:
        blocks = list(response.iter_bytes())
    assert len(b"".join(blocks)) > 24_000 * 2
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice="nova", input=TEXT, response_format="mp3", stream_format="sse"
    ) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    events = [json.loads(line[6:]) for line in lines]
    assert events[-1]["type"] == "speech.audio.done" and "usage" in events[-1]
    audio = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
    assert len(decode(audio, "mp3")[0]) > 24_000
    assert [m.id for m in client.models.list()][:2] == ["kokoro", "tts-1"]


def test_openai_errors_are_openai_shaped(fake_server: ThreadedServer) -> None:
    client = openai.OpenAI(base_url=f"{fake_server.url}/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError) as info:
        client.audio.speech.create(model="tts-1", voice="nobody", input="Hi.")
    assert info.value.status_code == 400


@pytest.mark.parametrize("field", ["response_format", "stream_format"])
async def test_openai_fields_of_the_wrong_type_are_a_400(fake_server: ThreadedServer, field: str) -> None:
    """Found by the HTTP fuzzer: ``response_format: {}`` was a 500 (an unhashable lookup)."""
    async with httpx.AsyncClient(base_url=fake_server.url) as client:
        response = await client.post("/v1/audio/speech", json={"input": "Hi.", field: {}})
    assert response.status_code == 400 and response.json()["error"]["code"].startswith("invalid_")


async def test_a_bug_in_a_route_is_a_readable_500_without_its_text() -> None:
    async def broken(_: object) -> None:
        raise RuntimeError("/srv/secret: something internal")

    server = start_server(FakeEngine(), routes=[Route("/broken", broken)])
    try:
        async with httpx.AsyncClient(base_url=server.url) as client:
            response = await client.get("/broken")
        assert response.status_code == 500 and response.json()["error"]["code"] == "internal_error"
        assert "/srv/secret" not in response.text
    finally:
        server.stop()


async def test_voices_and_models(fake_server: ThreadedServer) -> None:
    async with httpx.AsyncClient(base_url=fake_server.url) as client:
        voices = (await client.get("/v1/audio/voices")).json()
        models = (await client.get("/v1/models")).json()
    assert len(voices["voices"]) == 54 and voices["aliases"]["alloy"] == "af_alloy"
    assert {"id", "language", "gender"} <= set(voices["voices"][0])
    assert models["object"] == "list"


async def test_a_body_that_never_arrives_is_refused_with_408() -> None:
    server = start_server(FakeEngine(), body_timeout_s=0.3)
    try:
        head = "POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"
        reader, writer = await raw_http(server.port, head, b'{"text": "He')
        status = await asyncio.wait_for(reader.readline(), 10)
        assert status.startswith(b"HTTP/1.1 408")
        writer.close()
        async with httpx.AsyncClient(base_url=server.url) as client:  # the server goes on
            assert (await client.post("/invocations", json={"text": "Hello."})).status_code == 200
    finally:
        server.stop()


async def test_a_client_that_stops_reading_is_dropped_and_frees_its_slots(caplog: pytest.LogCaptureFixture) -> None:
    server = start_server(FakeEngine(seconds_per_char=0.0), send_timeout_s=0.3)
    caplog.set_level(logging.WARNING, logger="speakstream.http")
    try:
        body = json.dumps({"text": "Long enough to fill every buffer on the way. " * 200}).encode()
        head = f"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
        head += "\r\n"
        _, writer = await raw_http(server.port, head, body, receive_buffer=4096)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while "read nothing" not in caplog.text and loop.time() < deadline:  # never read: the server lets go
            await asyncio.sleep(0.1)
        assert "read nothing" in caplog.text
        counts = await asyncio.to_thread(server_counts, server)
        assert counts["reserved"] == 0 and counts["queued"] == 0
        writer.close()
    finally:
        server.stop()


async def test_the_runtime_is_ready_only_once_its_engine_is_warm() -> None:
    """``/ping`` says ready after ``Engine.warm`` has run, in the configured voice, and not before."""
    warmed: list[str] = []

    class Warmed(FakeEngine):
        def warm(self, voice: str = "af_heart") -> None:
            super().warm(voice)
            warmed.append(voice)

    runtime = Runtime(ServerConfig(fake_engine=True, voice="bf_emma"), Warmed)
    await runtime.start()
    try:
        await runtime.wait_ready()
        assert runtime.ready and warmed == ["bf_emma"]
    finally:
        await runtime.stop()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/invocations", {"text": "Doomed text."}),
        ("/v1/audio/speech", {"model": "kokoro", "input": "Doomed text.", "voice": "af_heart"}),
        ("/v1/text-to-speech/af_heart/stream", {"text": "Doomed text."}),
        ("/tts/bytes", {"transcript": "Doomed text.", "voice": {"mode": "id", "id": "af_heart"}}),
    ],
)
def test_a_reply_that_fails_before_its_first_audio_is_an_http_error_not_an_empty_200(
    path: str, body: dict[str, object]
) -> None:
    server = start_server(FakeEngine(seconds_per_char=0.0005, fail_when=lambda text: "Doomed" in text))
    try:
        failed = httpx.post(f"{server.url}{path}", json=body, timeout=30)
        fine = json.loads(json.dumps(body).replace("Doomed", "Fine"))
        served = httpx.post(f"{server.url}{path}", json=fine, timeout=30)
    finally:
        server.stop()
    assert failed.status_code >= 400 and "engine_error" in failed.text, (failed.status_code, failed.text[:200])
    assert served.status_code == 200 and served.content
