"""The container image, run as SageMaker runs it (``docker run IMAGE serve``, host network):
ready time, every route of the contract, a non-root user, the labels, the health check, a
drain on ``docker stop``, and first audio through the container against the same server outside it.

``make test-image`` builds the image first; the figures go to ``bench-out/container.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from speakstream.audio.decode import decode
from speakstream.bench.asr import Recognizer, wer
from speakstream.bench.process import ServerProcess, free_port
from speakstream.bench.stats import summary
from speakstream.client import Backoff, ControlEvent, SpeechSession, fetch_audio
from speakstream.data import bench_text
from speakstream.text import split_sentences

pytestmark = [pytest.mark.image, pytest.mark.slow]
IMAGE = os.environ.get("SPEAKSTREAM_IMAGE", "speakstream:latest")
REPORT = Path(os.environ.get("SPEAKSTREAM_IMAGE_REPORT", "bench-out/container.json"))
TEXT = "Thanks for calling. Your order shipped this morning and should arrive on Thursday."
FIGURES: dict[str, object] = {}


@dataclass
class Container:
    name: str
    port: int
    ready_s: float

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/invocations-bidirectional-stream"


def docker(*args: str, check: bool = True) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check).stdout.strip()


# read-only, /tmp a tmpfs, no capabilities: as deploy/k8s runs it (the espeak library is copied
# to /tmp and loaded from there, so /tmp must allow exec, as an emptyDir does)
AS_DEPLOYED = ("--read-only", "--tmpfs", "/tmp:exec", "--cap-drop", "ALL", "--security-opt", "no-new-privileges")


def start_container(port: int, *options: str) -> Container:
    """``docker run IMAGE serve`` as deployed, with ``options`` (volumes, settings); ready once /ping is 200."""
    name = f"speakstream-test-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    run = ["run", "-d", "--rm", "--network", "host", *AS_DEPLOYED, "-e", f"SPEAKSTREAM_PORT={port}", "--name", name]
    docker(*run, *options, IMAGE, "serve")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ping", timeout=1).status_code == 200:
                return Container(name, port, time.perf_counter() - started)
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    logs = docker("logs", name, check=False)
    docker("rm", "-f", name, check=False)
    raise AssertionError(f"the container did not become ready: {logs[-2000:]}")


@contextlib.contextmanager
def volume() -> Iterator[str]:
    name = f"speakstream-test-data-{uuid.uuid4().hex[:8]}"
    docker("volume", "create", name)
    try:
        yield name
    finally:
        docker("volume", "rm", "-f", name, check=False)


@pytest.fixture(scope="module")
def container() -> Iterator[Container]:
    """As the manifest runs it: a data volume at /data that must be writable. The audio cache is
    off: the first-audio comparison repeats one sentence, which the cache would answer."""
    with volume() as data:
        settings = ("-e", "SPEAKSTREAM_DATA_REQUIRED=true", "-e", "SPEAKSTREAM_CACHE_MB=0")
        running = start_container(free_port(), "-v", f"{data}:/data", *settings)
        FIGURES["image_size_mb"] = round(int(docker("image", "inspect", IMAGE, "--format", "{{.Size}}")) / 1e6)
        FIGURES["ready_s"] = round(running.ready_s, 2)
        yield running
        docker("rm", "-f", running.name, check=False)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(FIGURES, indent=2) + "\n")
    print(f"\ncontainer figures: {json.dumps(FIGURES)}")


def test_the_image_is_what_sagemaker_needs() -> None:
    labels = json.loads(docker("image", "inspect", IMAGE, "--format", "{{json .Config.Labels}}"))
    assert labels["com.amazonaws.sagemaker.capability.bidirectional-streaming"] == "true"
    assert docker("image", "inspect", IMAGE, "--format", "{{json .Config.ExposedPorts}}") == '{"8080/tcp":{}}'
    assert docker("image", "inspect", IMAGE, "--format", "{{.Config.User}}") == "speakstream"
    assert "serve" in docker("image", "inspect", IMAGE, "--format", "{{json .Config.Cmd}}")
    assert docker("run", "--rm", "--network", "none", "--entrypoint", "id", IMAGE, "-u") == "10001"
    verify = subprocess.run(["docker", "run", "--rm", "--network", "none", IMAGE, "assets", "verify"], check=False)
    assert verify.returncode == 0  # the model is inside, whole, and needs no network


def test_ping_invocations_and_openai(container: Container, asr: Recognizer) -> None:
    ping = httpx.get(f"{container.url}/ping")
    assert ping.status_code == 200 and ping.json()["status"] == "ok"
    assert (ping.json()["weights"], ping.json()["store"]) == ("assets", "writable")  # made at build time
    arrivals = []
    with httpx.stream("POST", f"{container.url}/invocations", json={"text": TEXT}, timeout=60) as response:
        assert response.status_code == 200
        for block in response.iter_bytes():
            arrivals.append((time.perf_counter(), len(block)))
    assert len(arrivals) >= 3 and arrivals[-1][0] - arrivals[0][0] > 0.05  # streamed, not one body
    speech = httpx.post(f"{container.url}/v1/audio/speech", json={"input": TEXT, "response_format": "wav"}, timeout=60)
    assert speech.status_code == 200 and speech.headers["content-type"] == "audio/wav"
    heard = asr.transcribe(*decode(speech.content, "wav")).text
    assert wer(TEXT, heard) <= 0.1, heard
    bad = httpx.post(f"{container.url}/invocations", json={"text": ""})
    assert bad.status_code == 400


async def test_the_bidirectional_session(container: Container) -> None:
    async with SpeechSession(container.ws_url) as session:
        for sentence in ("Hello there.", "A second request on the same connection."):
            result = await session.say(sentence)
            assert result.final is not None and result.final["audio_bytes"] == len(result.audio) > 0


def test_the_health_check_turns_healthy(container: Container) -> None:
    deadline = time.monotonic() + 90
    status = ""
    while time.monotonic() < deadline:
        status = docker("inspect", container.name, "--format", "{{.State.Health.Status}}")
        if status == "healthy":
            return
        time.sleep(1)
    raise AssertionError(f"health: {status}")


async def test_first_audio_in_and_out_of_the_container(container: Container) -> None:
    sentence = split_sentences(bench_text())[0].text
    outside = ServerProcess(env={"SPEAKSTREAM_CACHE_MB": "0"}).wait_ready(timeout=180)
    try:
        times: dict[str, list[float]] = {"container": [], "outside": []}
        async with SpeechSession(container.ws_url) as inner, SpeechSession(outside.ws_url) as outer:
            sessions = {"container": inner, "outside": outer}
            for session in sessions.values():
                await session.say("Warm up.")
            for trial in range(20):
                for name in sorted(sessions, reverse=trial % 2 == 1):
                    result = await sessions[name].say(sentence)
                    assert result.ttfa_s is not None
                    times[name].append(result.ttfa_s * 1000)
        stats = {name: summary(values) for name, values in times.items()}
        FIGURES["first_audio_ms"] = stats
        FIGURES["container_over_outside_p50"] = round(stats["container"]["p50"] / stats["outside"]["p50"], 3)
        assert stats["container"]["p50"] < stats["outside"]["p50"] * 1.5  # the same engine, same machine
    finally:
        outside.terminate()


async def test_docker_stop_drains_sessions_with_1001() -> None:
    running = start_container(free_port())
    try:
        async with SpeechSession(running.ws_url, reconnect=Backoff(attempts=0)) as session:
            await session.say("Hello.")
            stop = asyncio.create_task(asyncio.to_thread(docker, "stop", "-t", "20", running.name))
            error, code = "", None
            try:
                while True:
                    event = await session.receive()
                    if isinstance(event, ControlEvent) and event.type == "error":
                        error = str(event.message.get("code"))
            except Exception:
                code = session.ws.close_code
            stopped_at = time.perf_counter()
            await stop
            FIGURES["stop_s"] = round(time.perf_counter() - stopped_at, 2)
        assert (error, code) == ("server_shutdown", 1001)
    finally:
        docker("rm", "-f", running.name, check=False)


async def test_http_client_waits_for_a_starting_container() -> None:
    port = free_port()
    starting = asyncio.create_task(asyncio.to_thread(start_container, port))
    try:
        patient = Backoff(attempts=60, first_s=0.25, max_s=2.0)  # refused, then 503 while loading, then audio
        audio = await fetch_audio(f"http://127.0.0.1:{port}", TEXT, retry=patient)
        assert len(audio.audio) > 0
    finally:
        docker("rm", "-f", (await starting).name, check=False)


RULES = [{"type": "alias", "string_to_replace": "Kokoro", "alias": "Coco Row"}]


def _spoken_with(url: str, dictionary: str) -> int:
    body = {"text": "Kokoro speaks.", "pronunciation_dictionaries": [dictionary], "format": "pcm"}
    response = httpx.post(f"{url}/invocations", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return len(response.content)


def test_a_dictionary_outlives_the_container_on_its_data_volume() -> None:
    with volume() as data:
        options = ("-v", f"{data}:/data", "-e", "SPEAKSTREAM_DATA_REQUIRED=true")
        first = start_container(free_port(), *options)
        try:
            add = f"{first.url}/v1/pronunciation-dictionaries/add-from-rules"
            made = httpx.post(add, json={"name": "brands", "rules": RULES}, timeout=30)
            assert made.status_code == 200, made.text
        finally:
            docker("rm", "-f", first.name, check=False)
        second = start_container(free_port(), *options)
        try:
            dictionary = made.json()["id"]
            found = httpx.get(f"{second.url}/v1/pronunciation-dictionaries/{dictionary}", timeout=30)
            assert found.status_code == 200 and found.json()["name"] == "brands", found.text
            assert _spoken_with(second.url, dictionary) > 24_000
        finally:
            docker("rm", "-f", second.name, check=False)


def test_with_no_writable_data_folder_it_serves_read_only() -> None:
    """No data volume where it looks (its data folder on the read-only root): it starts, speaks,
    and refuses a change with the reason."""
    running = start_container(free_port(), "-e", "SPEAKSTREAM_DATA_DIR=/home/speakstream/data")
    try:
        ping = httpx.get(f"{running.url}/ping").json()
        assert (ping["weights"], ping["store"]) == ("assets", "read-only")
        add = f"{running.url}/v1/pronunciation-dictionaries/add-from-rules"
        refused = httpx.post(add, json={"name": "brands", "rules": RULES}, timeout=30)
        assert refused.status_code == 507 and refused.json()["detail"]["status"] == "read_only_store"
        speech = httpx.post(f"{running.url}/invocations", json={"text": TEXT, "format": "pcm"}, timeout=60)
        assert speech.status_code == 200 and len(speech.content) > 24_000
        FIGURES["read_only_ready_s"] = round(running.ready_s, 2)
    finally:
        docker("rm", "-f", running.name, check=False)


def test_a_container_without_its_model_exits_with_the_reason() -> None:
    run = ["docker", "run", "--rm", "--network", "host", *AS_DEPLOYED, "-e", f"SPEAKSTREAM_PORT={free_port()}"]
    done = subprocess.run(
        [*run, "-e", "SPEAKSTREAM_MODEL_DIR=/nowhere", IMAGE, "serve"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "missing_asset" in done.stderr, done.stderr[-2000:]
    FIGURES["missing_model"] = {"exit_code": done.returncode, "stderr": done.stderr.strip().splitlines()[-1]}


def _peak_rss_mb(container: Container) -> float:
    status = docker("exec", container.name, "cat", "/proc/1/status")
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024


def test_shared_weights_hold_the_container_in_less_memory() -> None:
    """Peak resident memory of the server serving one reply, its weights shared (the default) and not."""
    peaks = {}
    for arm, share in (("shared", "true"), ("unshared", "false")):
        running = start_container(free_port(), "-e", f"SPEAKSTREAM_SHARE_WEIGHTS={share}")
        try:
            assert httpx.get(f"{running.url}/ping").json()["weights"] == ("assets" if share == "true" else "unshared")
            speech = httpx.post(f"{running.url}/invocations", json={"text": TEXT, "format": "pcm"}, timeout=60)
            assert speech.status_code == 200
            peaks[arm] = round(_peak_rss_mb(running))
            FIGURES.setdefault("ready_s_by_weights", {})[arm] = round(running.ready_s, 2)  # type: ignore[index]
        finally:
            docker("rm", "-f", running.name, check=False)
    FIGURES["peak_rss_mb_one_reply"] = peaks
    assert peaks["shared"] < peaks["unshared"]
