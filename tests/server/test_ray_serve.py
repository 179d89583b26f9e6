"""speakstream on a local Ray Serve cluster: the routes through Serve's proxy, replicas that
take traffic only when warm, and the two ways a replica leaves (removed: its sessions get
``server_shutdown`` and 1001; killed: the connection drops) with clients reconnecting.

These start a Ray cluster (seconds, and hundreds of MB), so they run under ``make test-ray``.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import os
import signal
import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest
import ray

from speakstream.bench.process import free_port
from speakstream.channel import RECONNECTED
from speakstream.client import Backoff, ControlEvent, Reconnect, SpeechSession, stream_events
from speakstream.config import ServerConfig
from speakstream.server import ray_serve

pytestmark = [pytest.mark.ray, pytest.mark.slow]
serve = ray_serve.serve
TEXT = "Hello there, this reply goes through Ray Serve."
QUICK = Backoff(attempts=20, first_s=0.1, max_s=1.0)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    port = free_port()
    os.environ.setdefault(ray_serve.PROXY_CALLBACK, "speakstream.server.ray_serve:proxy_middlewares")
    ray.init(num_cpus=4, include_dashboard=False, logging_level="ERROR")
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    yield f"127.0.0.1:{port}"
    serve.shutdown()
    ray.shutdown()


def deploy(replicas: int, **config: object) -> None:
    settings = ServerConfig(fake_engine=True, grace_s=2.0, **config)  # type: ignore[arg-type]
    scaling = ray_serve.Scaling(replicas=replicas, cpus_per_replica=0.5)
    serve.run(ray_serve.application(settings, scaling), name="speakstream", route_prefix="/")


def replica_pids() -> list[int]:
    out = subprocess.run(["pgrep", "-f", "ServeReplica:speakstream"], capture_output=True, text=True).stdout
    return sorted(int(p) for p in out.split())


def running_replicas() -> int:
    status = serve.status().applications["speakstream"].deployments["speakstream"]
    return int(status.replica_states.get("RUNNING", 0))


async def test_every_route_works_through_the_proxy(cluster: str) -> None:
    deploy(2)
    base = f"http://{cluster}"
    async with httpx.AsyncClient(timeout=60) as client:
        ping = await client.get(f"{base}/ping")
        assert ping.status_code == 200 and ping.json()["status"] == "ok"
        streamed = await client.post(f"{base}/invocations", json={"text": TEXT})
        assert streamed.status_code == 200 and len(streamed.content) > 24_000
        openai = await client.post(f"{base}/v1/audio/speech", json={"input": TEXT, "response_format": "wav"})
        assert openai.status_code == 200 and openai.content[:4] == b"RIFF"
        bad = await client.post(f"{base}/invocations", json={"text": ""})
        assert bad.status_code == 400  # errors pass through the proxy as they are
    events = [e async for e in stream_events(f"{base}/invocations", {"text": TEXT})]
    audio = b"".join(base64.b64decode(e.json()["audio"]) for e in events if e.event == "audio_chunk")
    assert events[-1].event == "audio_stream_end" and events[-1].json()["audio_bytes"] == len(audio) > 24_000
    async with SpeechSession(f"ws://{cluster}/invocations-bidirectional-stream") as session:
        result = await session.say(TEXT)
        assert result.final is not None and result.final["audio_bytes"] == len(result.audio) > 0


async def test_sessions_are_spread_and_keep_their_own_audio(cluster: str) -> None:
    deploy(2)
    async with asyncio.TaskGroup() as group:
        runs = [group.create_task(_speak_turns(cluster, i, 3)) for i in range(6)]
    for i, run in enumerate(runs):
        ids = run.result()
        assert ids == [f"s{i}-{t}" for t in range(3)]


async def _speak_turns(cluster: str, index: int, turns: int) -> list[str]:
    done = []
    async with SpeechSession(f"ws://{cluster}/invocations-bidirectional-stream") as session:
        for turn in range(turns):
            request_id = await session.speak(f"Session {index}, turn {turn}.", request_id=f"s{index}-{turn}")
            result = await session.collect(request_id)
            assert result.final is not None and result.final["audio_bytes"] == len(result.audio)
            assert all(m.get("request_id") in (None, request_id) for m in result.messages)
            done.append(request_id)
    return done


async def open_sessions(cluster: str, count: int, heard: list[Reconnect]) -> list[SpeechSession]:
    url = f"ws://{cluster}/invocations-bidirectional-stream"
    sessions = [SpeechSession(url, reconnect=QUICK, on_reconnect=heard.append) for _ in range(count)]
    for session in sessions:
        await session.__aenter__()
    return sessions


async def test_removed_replicas_drain_their_sessions_and_clients_reconnect(cluster: str) -> None:
    deploy(2)
    heard: list[Reconnect] = []
    sessions = await open_sessions(cluster, 4, heard)
    try:
        closes = [asyncio.create_task(_first_close(s)) for s in sessions]
        await asyncio.to_thread(serve.delete, "speakstream")  # every replica leaves
        redeploy = asyncio.create_task(asyncio.to_thread(deploy, 2))
        frames = await asyncio.wait_for(asyncio.gather(*closes), 60)
        await redeploy
        assert frames == [("server_shutdown", 1001)] * 4
        assert [r.code for r in heard] == [1001] * 4
        for session in sessions:
            assert (await session.say(TEXT)).final["type"] == "synthesis_complete"  # type: ignore[index]
    finally:
        for session in sessions:
            await session.close()


async def test_scaling_down_drains_only_the_removed_replica(cluster: str) -> None:
    deploy(2)
    heard: list[Reconnect] = []
    sessions = await open_sessions(cluster, 6, heard)
    try:
        closes = [asyncio.create_task(_first_close(s)) for s in sessions]
        await asyncio.to_thread(deploy, 1)  # Serve removes one of the two
        done, pending = await asyncio.wait(closes, timeout=15)
        for task in pending:
            task.cancel()
        frames = [t.result() for t in done]
        assert all(f == ("server_shutdown", 1001) for f in frames), frames
        for session in sessions:  # drained or not, every session speaks on
            assert (await session.say(TEXT)).final["type"] == "synthesis_complete"  # type: ignore[index]
        assert running_replicas() == 1
    finally:
        for session in sessions:
            await session.close()


async def _first_close(session: SpeechSession) -> tuple[str, int]:
    """The error frame that came before the session was reconnected, and the close code."""
    error = ""
    while True:
        event = await session.receive()
        if isinstance(event, ControlEvent) and event.type == "error":
            error = str(event.message.get("code"))
        if isinstance(event, ControlEvent) and event.type == RECONNECTED:
            return error, int(event.message["code"])


async def test_a_killed_replica_is_replaced_and_its_clients_reconnect(cluster: str) -> None:
    deploy(2)
    heard: list[Reconnect] = []
    url = f"ws://{cluster}/invocations-bidirectional-stream"
    async with SpeechSession(url, reconnect=QUICK, on_reconnect=heard.append) as session:
        await session.say(TEXT)
        victims = replica_pids()
        assert len(victims) == 2
        killed_at = time.monotonic()
        for pid in victims:  # both: the session was on one of them
            os.kill(pid, signal.SIGKILL)
        result = await session.say(TEXT * 2)  # lost with its replica, then spoken again
        assert result.final is not None and result.final["type"] == "synthesis_complete"
        assert heard and (heard[0].code, heard[0].reason) == ray_serve.LOST_CLOSE  # a real close, not 1006
    while running_replicas() < 2:
        assert time.monotonic() - killed_at < 120, "Serve did not replace the killed replicas"
        await asyncio.sleep(0.5)
    assert not set(replica_pids()) & set(victims)


async def test_autoscaling_adds_a_replica_for_more_sessions(cluster: str) -> None:
    settings = ServerConfig(fake_engine=True, grace_s=2.0)
    scaling = ray_serve.Scaling(min_replicas=1, max_replicas=2, target_sessions=1, cpus_per_replica=0.5)
    scaling = dataclasses.replace(scaling, upscale_delay_s=1.0)
    serve.delete("speakstream")  # start from one replica, not from the last test's two
    serve.run(ray_serve.application(settings, scaling), name="speakstream", route_prefix="/")
    assert running_replicas() == 1
    heard: list[Reconnect] = []
    sessions = await open_sessions(cluster, 3, heard)  # 3 sessions, a target of 1 per replica
    try:
        deadline = time.monotonic() + 90
        while running_replicas() < 2:
            assert time.monotonic() < deadline, "Serve did not scale up"
            await asyncio.sleep(0.5)
        async with SpeechSession(f"ws://{cluster}/invocations-bidirectional-stream") as late:
            assert (await late.say(TEXT)).final["type"] == "synthesis_complete"  # type: ignore[index]
        assert heard == []  # scaling up moves no one
    finally:
        for session in sessions:
            await session.close()


def test_a_replica_whose_engine_cannot_load_never_takes_traffic(cluster: str, tmp_path: object) -> None:
    settings = ServerConfig(model_dir=tmp_path, grace_s=1.0)  # type: ignore[arg-type]  # no model there
    scaling = ray_serve.Scaling(replicas=1, cpus_per_replica=0.5)
    with pytest.raises(RuntimeError, match=r"missing|failed"):
        serve.run(ray_serve.application(settings, scaling), name="broken", route_prefix="/broken")
    serve.delete("broken")
