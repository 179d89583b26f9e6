"""The ElevenLabs dialect on the wire (fake engine): contexts, alignment, limits, errors, HTTP."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx
import pytest
import websockets

from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.dialects.elevenlabs.tts import output_format
from speakstream.server.serve import ThreadedServer
from tests.server.dialects.helpers import elevenlabs_url, read_until

SAMPLE_RATE = 24_000


@pytest.fixture
def keyed_server() -> Iterator[ThreadedServer]:
    server = start_server(FakeEngine(seconds_per_char=0.001), api_key="secret-key")
    yield server
    server.stop()


def _audio_s(messages: list[dict]) -> float:
    return sum(len(base64.b64decode(m["audio"])) for m in messages if m.get("audio")) / 2 / SAMPLE_RATE


def _aligned(messages: list[dict]) -> tuple[str, int]:
    """The characters of all alignments, and where the last one ends (ms, per-message clocks)."""
    chars, clock = "", 0
    for m in messages:
        if a := m.get("alignment"):
            chars += "".join(a["chars"])
            clock += a["charStartTimesMs"][-1] + a["charDurationsMs"][-1]
    return chars, clock


def test_output_formats() -> None:
    assert output_format("pcm_16000") == ("pcm", 16_000, None)
    assert output_format("mp3_44100_128") == ("mp3", 44_100, 128_000)
    assert output_format("ulaw_8000") == ("mulaw", 8_000, None)
    assert output_format("alaw_8000") == ("alaw", 8_000, None)
    assert output_format("opus_48000_64") == ("opus", 48_000, 64_000)
    for bad in ("flac_44100", "pcm", "wav_24000", "mp3_x_1"):
        with pytest.raises(Exception, match="output_format"):
            output_format(bad)


async def test_two_contexts_interleave_and_each_ends_with_is_final(fake_server: ThreadedServer) -> None:
    texts = {"a": "Hello there, my friend. How are you today?", "b": "A second voice speaks. It overlaps."}
    async with websockets.connect(elevenlabs_url(fake_server)) as ws:
        for cid, text in texts.items():
            await ws.send(json.dumps({"text": " ", "context_id": cid, "voice_settings": {"speed": 1.1}}))
            await ws.send(json.dumps({"text": text + " ", "context_id": cid}))
        for cid in texts:
            await ws.send(json.dumps({"context_id": cid, "flush": True}))
            await ws.send(json.dumps({"context_id": cid, "close_context": True}))
        finals: set[str] = set()
        messages = await read_until(ws, lambda m: (m.get("isFinal") and finals.add(m["contextId"])) or len(finals) == 2)
    for cid, text in texts.items():
        mine = [m for m in messages if m.get("contextId") == cid]
        assert mine[-1] == {"isFinal": True, "contextId": cid}
        chars, clock = _aligned(mine)
        assert chars.split() == text.split()  # every character timed, chunks joined by a word break
        assert abs(clock / 1000 - _audio_s(mine)) < 0.01  # the alignment clock ends with the audio


async def test_sync_alignment_counts_from_the_context_start(fake_server: ThreadedServer) -> None:
    async with websockets.connect(elevenlabs_url(fake_server, sync_alignment="true")) as ws:
        await ws.send(json.dumps({"text": "One sentence here. And another one after it. ", "context_id": "x"}))
        await ws.send(json.dumps({"context_id": "x", "close_context": True}))
        messages = await read_until(ws, lambda m: m.get("isFinal"))
    starts = [m["alignment"]["charStartTimesMs"][0] for m in messages if m.get("alignment")]
    assert len(starts) >= 2 and starts[0] == 0 and starts[1] > 0


async def test_auto_mode_speaks_each_message_as_a_chunk(fake_server: ThreadedServer) -> None:
    async with websockets.connect(elevenlabs_url(fake_server, auto_mode="true")) as ws:
        for sentence in ("First part", "second part", "third."):
            await ws.send(json.dumps({"text": sentence, "context_id": "x"}))
        await ws.send(json.dumps({"context_id": "x", "close_context": True}))
        messages = await read_until(ws, lambda m: m.get("isFinal"))
    assert ["".join(m["alignment"]["chars"]).strip() for m in messages if m.get("alignment")] == [
        "First part",
        "second part",
        "third.",
    ]


async def test_keepalives_open_nothing_and_the_context_limit_is_an_error(fake_server: ThreadedServer) -> None:
    async with websockets.connect(elevenlabs_url(fake_server)) as ws:
        await ws.send(json.dumps({"text": ""}))
        await ws.send(json.dumps({"text": "", "context_id": "nothing-yet"}))
        for i in range(5):
            await ws.send(json.dumps({"text": " ", "context_id": f"c{i}"}))
        await ws.send(json.dumps({"text": " ", "context_id": "c5"}))
        [error] = await read_until(ws, lambda m: True)
        assert error["error"] == "max_contexts" and error["contextId"] == "c5" and "5 contexts" in error["message"]
        await ws.send(json.dumps({"context_id": "c0", "close_context": True}))
        assert await read_until(ws, lambda m: True) == [{"isFinal": True, "contextId": "c0"}]
        await ws.send(json.dumps({"text": "Now there is room. ", "context_id": "c5"}))
        await ws.send(json.dumps({"context_id": "c5", "close_context": True}))
        messages = await read_until(ws, lambda m: m.get("isFinal"))
        assert messages[-1]["contextId"] == "c5" and _audio_s(messages) > 0


async def test_bad_messages_get_an_error_and_the_connection_goes_on(fake_server: ThreadedServer) -> None:
    async with websockets.connect(elevenlabs_url(fake_server)) as ws:
        for bad, code in (
            ("not json", "invalid_json"),
            ("[1]", "invalid_message"),
            (json.dumps({"text": 5, "context_id": "x"}), "invalid_text"),
            (json.dumps({"text": "Hi. ", "context_id": "x", "voice_settings": {"speed": "fast"}}), "invalid_speed"),
            (json.dumps({"text": "Hi. ", "context_id": "y", "voice_settings": {"speed": 9}}), "invalid_speed"),
        ):
            await ws.send(bad)
            [error] = await read_until(ws, lambda m: True)
            assert error["error"] == code, (bad, error)
        await ws.send(json.dumps({"text": "Still here. ", "context_id": "z"}))
        await ws.send(json.dumps({"context_id": "z", "close_context": True}))
        assert (await read_until(ws, lambda m: m.get("isFinal")))[-1] == {"isFinal": True, "contextId": "z"}


async def test_single_stream_ends_with_is_final_and_closes(fake_server: ThreadedServer) -> None:
    async with websockets.connect(elevenlabs_url(fake_server, multi=False)) as ws:
        await ws.send(json.dumps({"text": " ", "voice_settings": {"stability": 0.5}}))
        await ws.send(json.dumps({"text": "Hello from one stream. ", "flush": True}))
        await ws.send(json.dumps({"text": ""}))
        messages = await read_until(ws, lambda m: m.get("isFinal"))
        assert "contextId" not in messages[0] and _audio_s(messages) > 0
        with pytest.raises(websockets.ConnectionClosedOK):
            await ws.recv()


@pytest.mark.parametrize(
    ("query", "code"), [({"output_format": "wav_24000"}, "invalid_output_format"), ({"voice": "xx"}, "unknown_voice")]
)
async def test_a_bad_handshake_gets_an_error_then_a_close(
    fake_server: ThreadedServer, query: dict[str, str], code: str
) -> None:
    voice = query.pop("voice", "af_heart")
    async with websockets.connect(elevenlabs_url(fake_server, voice=voice, **query)) as ws:
        [error] = await read_until(ws, lambda m: True)
        assert error["error"] == code
        with pytest.raises(websockets.ConnectionClosedError) as closed:
            await ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


async def test_inactivity_timeout_closes_an_idle_connection(fake_server: ThreadedServer) -> None:
    async with websockets.connect(elevenlabs_url(fake_server, inactivity_timeout="1")) as ws:
        [error] = await read_until(ws, lambda m: True, timeout=10)
        assert error["error"] == "input_timeout_exceeded"
        with pytest.raises(websockets.ConnectionClosed):
            await ws.recv()


async def test_the_api_key_rides_in_xi_api_key(keyed_server: ThreadedServer) -> None:
    with pytest.raises(websockets.InvalidStatus):
        async with websockets.connect(elevenlabs_url(keyed_server), additional_headers={"xi-api-key": "wrong"}):
            pass
    async with websockets.connect(elevenlabs_url(keyed_server), additional_headers={"xi-api-key": "secret-key"}) as ws:
        await ws.send(json.dumps({"text": "Authorised. ", "context_id": "a"}))
        await ws.send(json.dumps({"context_id": "a", "close_context": True}))
        assert (await read_until(ws, lambda m: m.get("isFinal")))[-1]["isFinal"] is True
    async with httpx.AsyncClient(base_url=keyed_server.url) as http:
        response = await http.post("/v1/text-to-speech/af_heart/stream", json={"text": "Hi."})
        assert response.status_code == 401
        response = await http.post(
            "/v1/text-to-speech/af_heart/stream", json={"text": "Hi."}, headers={"xi-api-key": "secret-key"}
        )
        assert response.status_code == 200 and response.content


async def test_http_stream_with_timestamps(fake_server: ThreadedServer) -> None:
    text = "Hello over HTTP. With timings for every character."
    async with httpx.AsyncClient(base_url=fake_server.url) as http:
        audio = await http.post("/v1/text-to-speech/af_heart/stream?output_format=pcm_16000", json={"text": text})
        assert audio.status_code == 200 and audio.headers["content-type"] == "audio/pcm"
        timed = await http.post(
            "/v1/text-to-speech/af_heart/stream/with-timestamps?output_format=pcm_24000", json={"text": text}
        )
        lines = [json.loads(line) for line in timed.text.splitlines() if line]
        whole = await http.post(
            "/v1/text-to-speech/af_heart/with-timestamps?output_format=pcm_24000", json={"text": text}
        )
        bad = await http.post("/v1/text-to-speech/nobody/stream", json={"text": text})
    assert len(audio.content) / 2 / 16_000 > 1.0
    chars = "".join(c for line in lines if "alignment" in line for c in line["alignment"]["characters"])
    assert chars.split() == text.split()
    seconds = sum(len(base64.b64decode(line["audio_base64"])) for line in lines) / 2 / SAMPLE_RATE
    ends = [line["alignment"]["character_end_times_seconds"][-1] for line in lines if "alignment" in line]
    assert ends == sorted(ends) and abs(ends[-1] - seconds) < 0.01  # times from the start of the reply
    body = whole.json()
    assert body["alignment"]["characters"] == [
        c for line in lines if "alignment" in line for c in line["alignment"]["characters"]
    ]
    assert bad.status_code == 400 and bad.json()["detail"]["status"] == "unknown_voice"
