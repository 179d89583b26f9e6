"""Word timestamps that point at the client's own text, on the fake engine: each word carries its
character span in the text the request sent (its appends joined), through SSML, aliases and
markdown, and a cancelled reply says where in that text it was heard up to."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import websockets

from speakstream.client import AudioEvent, ControlEvent, SpeechSession
from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import start_server
from speakstream.server.serve import ThreadedServer
from tests.server.helpers import drain_until

FRAGMENTS = [
    "We meet on ",
    '<sub alias="Saturday">Zorb',
    "ixal</sub> at 10:30. ",
    'Then <break time="200ms"/>',
    " **lunch**.",
]


@pytest.fixture
def server() -> Iterator[ThreadedServer]:
    running = start_server(FakeEngine(seconds_per_char=0.0002), cache_mb=0)
    yield running
    running.stop()


async def test_each_word_points_at_the_text_the_client_sent(server: ThreadedServer) -> None:
    text = "".join(FRAGMENTS)
    words: list[dict[str, Any]] = []
    async with websockets.connect(server.ws_url) as ws:
        for fragment in FRAGMENTS:
            await ws.send(json.dumps({"type": "append", "text": fragment, "text_type": "ssml"}))
        await ws.send(json.dumps({"type": "flush"}))
        async for frame in ws:
            message = {} if isinstance(frame, bytes) else json.loads(frame)
            words += message.get("words", []) if message.get("type") == "word_timestamps" else []
            if message.get("type") == "synthesis_complete":
                break
    said = [(w["word"], text[w["char_start"] : w["char_end"]]) for w in words]
    assert said == [
        ("We", "We"),
        ("meet", "meet"),
        ("on", "on"),
        ("Saturday", "Zorbixal"),
        ("at", "at"),
        ("10", "10:30"),  # a number written in parts: each word points at all of it
        ("30.", "10:30"),
        ("Then", "Then"),
        ("lunch", "lunch"),
    ]


async def test_a_cancelled_reply_says_where_the_clients_text_was_heard_up_to() -> None:
    server = start_server(FakeEngine(seconds_per_char=0.004), audio_frame_bytes=4096)
    text = " ".join(["Thanks for waiting, I found your booking on Zorbixal."] * 6)
    try:
        async with SpeechSession(server.ws_url) as session:
            await session.speak(text)
            events: list[AudioEvent | ControlEvent] = []
            while sum(len(e.data) for e in events if isinstance(e, AudioEvent)) < 2 * 24_000 * 2:
                events.append(await session.receive())  # two seconds of audio: words were heard
            await session.cancel()
            events += await drain_until(session, ("cancelled",))
        cancelled = events[-1].message  # type: ignore[union-attr]
        words = [w for e in events if isinstance(e, ControlEvent) for w in e.message.get("words", [])]
        last = [w for w in words if w["end_s"] <= cancelled["duration_s"] + 1e-6][-1]
        assert cancelled["last_word"] == last["word"] and cancelled["heard_to_char"] == last["char_end"]
        assert last["char_start"] < cancelled["heard_to_char"] <= len(text)
        assert text[last["char_start"] : last["char_end"]].lower() == last["word"].strip(".,").lower()
    finally:
        server.stop()


async def test_kokoros_words_point_at_numbers_and_aliases_as_written(kokoro_server: ThreadedServer) -> None:
    text = '<speak>The meeting moved to 2025-03-05 at 10:30, on <sub alias="Saturday">Zorbixal</sub>.</speak>'
    async with SpeechSession(kokoro_server.ws_url) as session:
        result = await session.collect(await session.speak(text, voice="af_heart"))
    words = [w for m in result.of_type("word_timestamps") for w in m["words"]]
    said = [(w["word"], text[w["char_start"] : w["char_end"]]) for w in words]
    assert said == [
        ("The", "The"),
        ("meeting", "meeting"),
        ("moved", "moved"),
        ("to", "to"),
        ("March", "2025-03-05"),
        ("5", "2025-03-05"),
        ("2025", "2025-03-05"),
        ("at", "at"),
        ("10", "10:30"),
        ("30", "10:30"),
        ("on", "on"),
        ("Saturday", "Zorbixal"),
    ], said
