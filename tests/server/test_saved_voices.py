"""Saved voices on the fake engine: the store's API and bounds, a restart, a read-only data
directory, voices managed as files, and a saved name heard on every route and dialect (the
engine records the voice spec it was given)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import websockets
from hypothesis import given
from hypothesis import strategies as st

from speakstream.engine.fake import FakeEngine
from speakstream.engine.voices import KOKORO_VOICES, parse_blend
from speakstream.errors import InvalidInput
from speakstream.loadtest.servers import start_server
from speakstream.server.saved_voices import VoiceStore, saved_voice
from speakstream.server.serve import ThreadedServer
from tests.server.dialects.helpers import ws_base

NARRATOR = {"name": "narrator", "blend": "af_heart:3,bm_george:2", "speed": 1.2, "language": "es"}
BLEND = "af_heart:0.6,bm_george:0.4"


def _server(data_dir: Path | None, engine: FakeEngine | None = None, **config: object) -> ThreadedServer:
    return start_server(engine or FakeEngine(seconds_per_char=0.0002), data_dir=data_dir, cache_mb=0, **config)


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine(seconds_per_char=0.0002)


@pytest.fixture
def server(tmp_path: Path, engine: FakeEngine) -> Iterator[ThreadedServer]:
    running = _server(tmp_path / "data", engine)
    httpx.post(f"{running.url}/v1/saved-voices", json=NARRATOR).raise_for_status()
    yield running
    running.stop()


def _error(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def test_a_voice_is_created_read_listed_changed_and_deleted(server: ThreadedServer) -> None:
    url = f"{server.url}/v1/saved-voices"
    got = httpx.get(f"{url}/narrator").json()
    assert got["blend"] == BLEND and got["speed"] == 1.2 and got["language"] == "es" and got["gender"] == "female"
    assert got["preview_url"].endswith("/v1/audio/voices/narrator/preview")
    assert [v["name"] for v in httpx.get(url).json()["voices"]] == ["narrator"]
    changed = httpx.patch(f"{url}/narrator", json={"speed": 0.9, "description": "calm"}).json()
    assert changed["speed"] == 0.9 and changed["description"] == "calm" and changed["blend"] == BLEND
    renamed = httpx.patch(f"{url}/narrator", json={"name": "host"})
    assert renamed.json()["name"] == "host" and httpx.get(f"{url}/narrator").status_code == 404
    assert httpx.delete(f"{url}/host").status_code == 204
    assert _error(httpx.get(f"{url}/host")) == (404, "unknown_voice")
    assert httpx.get(url).json()["voices"] == []


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"name": "af_heart", "blend": "af_bella"}, 409, "voice_name_taken"),
        ({"name": "alloy", "blend": "af_bella"}, 409, "voice_name_taken"),
        ({"name": "narrator", "blend": "af_bella"}, 409, "voice_exists"),
        ({"name": "twice", "blend": "af_bella:0.5,af_bella:0.5"}, 400, "invalid_blend"),
        ({"name": "nothing", "blend": "af_bella:0,am_adam:0"}, 400, "invalid_blend"),
        ({"name": "ghost", "blend": "af_nobody"}, 400, "unknown_voice"),
        ({"name": "bad name!", "blend": "af_bella"}, 400, "invalid_name"),
        ({"name": "a:b", "blend": "af_bella"}, 400, "invalid_name"),
        ({"name": "fast", "blend": "af_bella", "speed": 9}, 400, "invalid_speed"),
        ({"name": "klingon", "blend": "af_bella", "language": "tlh"}, 400, "unsupported_language"),
        ({"name": "dict", "blend": "af_bella", "pronunciation_dictionaries": ["nope"]}, 404, "unknown_dictionary"),
        ({"name": "extra", "blend": "af_bella", "colour": "blue"}, 400, "invalid_input"),
    ],
)
def test_bad_voices_are_refused_with_their_own_error_and_nothing_written(
    server: ThreadedServer, tmp_path: Path, body: dict[str, object], status: int, code: str
) -> None:
    assert _error(httpx.post(f"{server.url}/v1/saved-voices", json=body)) == (status, code)
    assert sorted(p.name for p in (tmp_path / "data" / "voices").iterdir()) == ["narrator.json"]


def test_a_change_that_fails_leaves_the_voice_as_it_was(server: ThreadedServer) -> None:
    url = f"{server.url}/v1/saved-voices/narrator"
    assert _error(httpx.patch(url, json={"pronunciation_dictionaries": ["nope"]})) == (404, "unknown_dictionary")
    assert _error(httpx.patch(url, json={"blend": "af_heart,af_heart"})) == (400, "invalid_blend")
    assert httpx.get(url).json()["blend"] == BLEND


def test_the_store_is_bounded(tmp_path: Path) -> None:
    running = _server(tmp_path, max_saved_voices=2)
    try:
        url = f"{running.url}/v1/saved-voices"
        for name in ("one", "two"):
            assert httpx.post(url, json={"name": name, "blend": "af_bella"}).status_code == 201
        assert _error(httpx.post(url, json={"name": "three", "blend": "af_bella"})) == (413, "too_many_voices")
        assert httpx.delete(f"{url}/one").status_code == 204
        assert httpx.post(url, json={"name": "three", "blend": "af_bella"}).status_code == 201
    finally:
        running.stop()


def test_a_saved_voice_survives_a_restart(tmp_path: Path) -> None:
    first = _server(tmp_path)
    try:
        httpx.post(f"{first.url}/v1/saved-voices", json=NARRATOR).raise_for_status()
    finally:
        first.stop()
    engine = FakeEngine(seconds_per_char=0.0002)
    second = _server(tmp_path, engine)
    try:
        assert httpx.get(f"{second.url}/v1/saved-voices/narrator").json()["blend"] == BLEND
        assert httpx.post(f"{second.url}/invocations", json={"text": "Hola.", "voice": "narrator"}).status_code == 200
        assert engine.voices_used[-1] == f"{BLEND}@es"
    finally:
        second.stop()


def test_a_data_directory_that_cannot_be_written_refuses_changes(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    running = _server(blocked)
    try:
        url = f"{running.url}/v1/saved-voices"
        assert httpx.get(url).json() == {"voices": [], "store": "read-only"}
        assert _error(httpx.post(url, json={"name": "new", "blend": "af_bella"})) == (507, "read_only_store")
    finally:
        running.stop()


def test_voices_kept_as_files_load_at_start_and_are_read_only(tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "support.json").write_text(json.dumps({"blend": "am_adam:1,am_michael:1", "speed": 1.1}))
    running = _server(tmp_path / "data", voices_dir=files)
    try:
        url = f"{running.url}/v1/saved-voices"
        found = httpx.get(f"{url}/support").json()
        assert found["read_only"] and found["blend"] == "am_adam:0.5,am_michael:0.5"
        assert _error(httpx.delete(f"{url}/support")) == (400, "read_only_voice")
    finally:
        running.stop()
    (files / "broken.json").write_text(json.dumps({"blend": "af_heart,af_heart"}))
    with pytest.raises(InvalidInput, match=r"broken\.json"):  # a file that is not a voice stops the start
        VoiceStore.open(None, files)


def test_a_saved_voice_works_on_every_route_and_dialect(server: ThreadedServer, engine: FakeEngine) -> None:
    spoken, before = f"{BLEND}@es", len(engine.voices_used)  # the warm-up spoke the default voice
    url = server.url
    assert httpx.post(f"{url}/invocations", json={"text": "Hola.", "voice": "narrator"}).status_code == 200
    assert httpx.post(f"{url}/v1/audio/speech", json={"input": "Hola.", "voice": "narrator"}).status_code == 200
    elevenlabs = f"{url}/v1/text-to-speech/narrator?output_format=pcm_24000"
    assert httpx.post(elevenlabs, json={"text": "Hola."}).status_code == 200
    cartesia = {
        "model_id": "sonic-2",
        "transcript": "Hola.",
        "voice": {"mode": "id", "id": "narrator"},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24_000},
    }
    assert httpx.post(f"{url}/tts/bytes", json=cartesia).status_code == 200
    asyncio.run(_bidi(ws_base(server)))
    assert engine.voices_used[before:] == [spoken] * 5


async def _bidi(base: str) -> None:
    async with websockets.connect(f"{base}/invocations-bidirectional-stream") as ws:
        await ws.recv()
        await ws.send(json.dumps({"type": "config", "voice": "narrator"}))
        await ws.send(json.dumps({"type": "text", "text": "Hola."}))
        while True:
            message = await ws.recv()
            if isinstance(message, str) and json.loads(message)["type"] in ("synthesis_complete", "error"):
                assert json.loads(message)["type"] == "synthesis_complete"
                return


def test_the_request_speed_wins_over_the_saved_one(server: ThreadedServer) -> None:
    body = {"text": "Hola.", "voice": "narrator", "speed": 0.8}
    with httpx.stream("POST", f"{server.url}/invocations", json=body, headers={"accept": "text/event-stream"}) as r:
        start = json.loads(next(line for line in r.iter_lines() if line.startswith("data:"))[5:])
    assert start["speed"] == 0.8 and start["voice"] == f"{BLEND}@es"
    sse = {"accept": "text/event-stream"}
    with httpx.stream("POST", f"{server.url}/invocations", json={**body, "speed": None}, headers=sse) as r:
        start = json.loads(next(line for line in r.iter_lines() if line.startswith("data:"))[5:])
    assert start["speed"] == 1.2


def test_the_catalogue_lists_built_in_and_saved_voices_with_previews(server: ThreadedServer) -> None:
    voices = httpx.get(f"{server.url}/v1/audio/voices").json()["voices"]
    assert len(voices) == 55 and voices[-1]["id"] == "narrator" and voices[-1]["saved"]
    assert {v["gender"] for v in voices} == {"female", "male"}
    preview = httpx.get(voices[-1]["preview_url"])
    assert preview.status_code == 200 and preview.headers["content-type"] == "audio/mpeg"
    assert _error(httpx.get(f"{server.url}/v1/audio/voices/nobody/preview")) == (400, "unknown_voice")


@given(st.lists(st.sampled_from(KOKORO_VOICES), min_size=1, max_size=8, unique=True), st.data())
def test_a_blend_saved_reads_back_as_the_same_weights(voices: list[str], data: st.DataObject) -> None:
    weights = [data.draw(st.integers(1, 100)) for _ in voices]
    spec = ",".join(f"{v}:{w}" for v, w in zip(voices, weights, strict=True))
    saved = saved_voice({"name": "mix", "blend": spec})
    total = sum(weights)
    assert dict(saved.parts) == pytest.approx({v: w / total for v, w in zip(voices, weights, strict=True)}, abs=1e-5)
    assert dict(parse_blend(saved.blend, KOKORO_VOICES)) == pytest.approx(dict(saved.parts), abs=1e-5)
