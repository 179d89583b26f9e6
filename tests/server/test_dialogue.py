"""Several speakers in one reply, on the fake engine: ElevenLabs' text-to-dialogue through the
official SDK, SSML ``<voice>``, and a voice per append in our bidirectional protocol; each chunk
read by its speaker's voice, the turns apart by ``turn_pause_s``, the words told who spoke them."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from elevenlabs import ElevenLabs
from elevenlabs.core.api_error import ApiError

from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer
from tests.server.dialects.helpers import ws_base

TURNS = [
    {"text": "Thank you for calling. How can I help?", "voice_id": "af_heart"},
    {"text": "My order has not arrived.", "voice_id": "customer"},
    {"text": "Lo siento mucho.", "voice_id": "ef_dora"},
]


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine(seconds_per_char=0.0002)


@pytest.fixture
def server(tmp_path: Path, engine: FakeEngine) -> Iterator[ThreadedServer]:
    running = start_server(engine, data_dir=tmp_path, cache_mb=0, max_turns=20, turn_pause_s=0.25)
    httpx.post(f"{running.url}/v1/saved-voices", json={"name": "customer", "blend": "am_adam"}).raise_for_status()
    yield running
    running.stop()


def _spoken(engine: FakeEngine, before: int) -> list[tuple[str, str]]:
    return list(zip(engine.voices_used[before:], engine.calls[before:], strict=True))


def test_a_dialogue_reads_each_turn_in_its_speakers_voice(server: ThreadedServer, engine: FakeEngine) -> None:
    before = len(engine.calls)
    client = ElevenLabs(api_key="unused", base_url=server.url)
    audio = b"".join(client.text_to_dialogue.stream(inputs=TURNS, output_format="pcm_24000"))  # type: ignore[arg-type]
    assert len(audio) > 48_000
    voices = [voice for voice, _ in _spoken(engine, before)]
    assert voices[0] == voices[1] == "af_heart" and voices[2:] == ["am_adam", "ef_dora"]
    assert "".join(text for _, text in _spoken(engine, before)).replace(" ", "") == "".join(
        t["text"] for t in TURNS
    ).replace(" ", "")


def test_the_timed_dialogue_says_which_input_speaks_when(server: ThreadedServer) -> None:
    client = ElevenLabs(api_key="unused", base_url=server.url)
    whole = client.text_to_dialogue.convert_with_timestamps(inputs=TURNS, output_format="pcm_24000")  # type: ignore[arg-type]
    segments = whole.voice_segments
    assert [s.dialogue_input_index for s in segments] == [0, 0, 1, 2]
    assert [s.voice_id for s in segments] == ["af_heart", "af_heart", "customer", "ef_dora"]
    joined = " ".join(t["text"] for t in TURNS)
    for segment in segments:
        said = joined[segment.character_start_index : segment.character_end_index]
        assert said in TURNS[segment.dialogue_input_index]["text"], said
    pauses = [b.start_time_seconds - a.end_time_seconds for a, b in itertools.pairwise(segments)]
    assert pauses[0] == pytest.approx(0.0, abs=0.002) and pauses[1:] == pytest.approx([0.25, 0.25], abs=0.002)
    streamed = [
        s.dialogue_input_index
        for chunk in client.text_to_dialogue.stream_with_timestamps(inputs=TURNS, output_format="pcm_24000")  # type: ignore[arg-type]
        for s in chunk.voice_segments or []
    ]
    assert streamed == [0, 0, 1, 2]


@pytest.mark.parametrize(
    ("inputs", "code"),
    [
        ([], "invalid_dialogue"),
        ([{"text": "Hi.", "voice_id": "af_heart"}] * 21, "invalid_dialogue"),
        ([{"text": "Hi.", "voice_id": "af_heart"}, {"text": "Hello.", "voice_id": "nobody"}], "unknown_voice"),
        ([{"text": "Hi.", "voice_id": "af_heart"}, {"text": "  ", "voice_id": "af_bella"}], "empty_text"),
        ([{"text": "Hi.", "voice_id": "af_heart"}, {"text": "你好", "voice_id": "af_bella"}], "unsupported_text"),
        ([{"text": "Hi."}], "invalid_dialogue"),
    ],
)
def test_a_bad_dialogue_is_refused_before_any_audio(server: ThreadedServer, inputs: list[Any], code: str) -> None:
    client = ElevenLabs(api_key="unused", base_url=server.url)
    with pytest.raises(ApiError) as refused:
        b"".join(client.text_to_dialogue.convert(inputs=inputs, output_format="pcm_24000"))
    assert refused.value.status_code == 400 and refused.value.body["detail"]["status"] == code


def test_ssml_voice_changes_the_speaker(server: ThreadedServer, engine: FakeEngine) -> None:
    before = len(engine.calls)
    ssml = '<speak>Welcome back. <voice name="customer">I have a question.</voice> Of course.</speak>'
    body = {"text": ssml, "voice": "af_heart"}
    with httpx.stream("POST", f"{server.url}/invocations", json=body, headers={"accept": "text/event-stream"}) as r:
        chunks = [json.loads(line[5:]) for line in r.iter_lines() if line.startswith("data:")]
    voices = [c["voice"] for c in chunks if c.get("text")]
    assert voices == ["af_heart", "customer", "af_heart"]
    assert [v for v, _ in _spoken(engine, before)] == ["af_heart", "am_adam", "af_heart"]
    bad = httpx.post(f"{server.url}/invocations", json={"text": '<speak><voice name="nobody">Hi.</voice></speak>'})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "unknown_voice"  # before any audio


def test_an_append_may_change_the_speaker_mid_reply(server: ThreadedServer, engine: FakeEngine) -> None:
    before = len(engine.calls)
    messages = asyncio.run(_appends(ws_base(server)))
    timed = [m for m in messages if m["type"] == "word_timestamps"]
    assert [m["voice"] for m in timed] == ["af_heart", "customer", "af_heart"]
    assert [v for v, _ in _spoken(engine, before)] == ["af_heart", "am_adam", "af_heart"]
    errors = [m for m in messages if m["type"] == "error"]
    assert [e["code"] for e in errors] == ["unknown_voice"]  # the bad speaker: the reply went on
    assert messages[-1]["type"] == "synthesis_complete"


async def _appends(base: str) -> list[dict[str, Any]]:
    sends = [
        {"type": "append", "text": "Hello, how can I ", "voice": "af_heart"},
        {"type": "append", "text": "help? "},
        {"type": "append", "text": "My parcel is late. ", "voice": "customer"},
        {"type": "append", "text": "Oops. ", "voice": "nobody"},
        {"type": "append", "text": "Let me check.", "voice": "af_heart"},
        {"type": "flush"},
    ]
    messages = []
    async with websockets.connect(f"{base}/invocations-bidirectional-stream") as ws:
        await ws.recv()
        for message in sends:
            await ws.send(json.dumps(message))
        while True:
            frame = await asyncio.wait_for(ws.recv(), 30)
            if isinstance(frame, str):
                messages.append(json.loads(frame))
                if messages[-1]["type"] == "synthesis_complete":
                    return messages
