"""Whatever a client sends in any dialect, the connection answers in that dialect's shape
and stays usable: no internal error, no hang, a good context still speaks afterwards."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from speakstream.server.serve import ThreadedServer
from tests.server.dialects.helpers import cartesia_request, elevenlabs_url, read_until, ws_base

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["", " ", "Hello there. ", "af_heart", "pcm_s16le", "raw", "c1", "c2", "id"]),
    st.lists(st.integers(), max_size=3),
    st.fixed_dictionaries({"mode": st.sampled_from(["id", "embedding"]), "id": st.sampled_from(["af_heart", "x"])}),
    st.fixed_dictionaries({"speed": st.one_of(st.floats(0.1, 5), st.text(max_size=5))}),
)
_ELEVENLABS_KEYS = ["text", "context_id", "flush", "close_context", "voice_settings", "try_trigger_generation"]
_CARTESIA_KEYS = [
    "transcript",
    "context_id",
    "continue",
    "flush",
    "cancel",
    "voice",
    "output_format",
    "language",
    "add_timestamps",
    "max_buffer_delay_ms",
    "generation_config",
    "speed",
]


_DEEPGRAM_MESSAGES = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["Speak", "Flush", "Clear", "Sing", "", "speak"])},
        optional={"text": _VALUES, "sequence_id": _VALUES},
    ),
    min_size=1,
    max_size=8,
)
"""Deepgram's messages (``Close`` left out: it ends the connection before the probe)."""


def _messages(keys: list[str]) -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(st.dictionaries(st.sampled_from(keys), _VALUES, max_size=5), min_size=1, max_size=6)


async def _survives(url: str, messages: list[dict[str, Any]], probe: list[str], is_end: Any) -> None:
    async with websockets.connect(url, max_size=None) as ws:
        for message in messages:
            await ws.send(json.dumps(message))
        for frame in probe:
            await ws.send(frame)
        seen = await read_until(ws, is_end, timeout=20)
    assert not any(m.get("error") == "internal_error" or m.get("error_code") == "internal_error" for m in seen), seen


def _elevenlabs_probe_done(m: dict[str, Any]) -> bool:
    return m.get("contextId") == "probe" and (m.get("isFinal") is True or m.get("error") == "max_contexts")


def _cartesia_probe_done(m: dict[str, Any]) -> bool:
    return m.get("context_id") == "probe" and (m.get("type") == "done" or m.get("error_code") == "max_contexts")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=_messages(_ELEVENLABS_KEYS))
def test_elevenlabs_survives_any_messages(fake_server: ThreadedServer, messages: list[dict[str, Any]]) -> None:
    probe = [
        json.dumps({"text": "Still speaking. ", "context_id": "probe"}),
        json.dumps({"context_id": "probe", "close_context": True}),
    ]
    asyncio.run(_survives(elevenlabs_url(fake_server), messages, probe, _elevenlabs_probe_done))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=_messages(_CARTESIA_KEYS))
def test_cartesia_survives_any_messages(fake_server: ThreadedServer, messages: list[dict[str, Any]]) -> None:
    probe = [cartesia_request("probe", "Still speaking.", more=False)]
    asyncio.run(_survives(f"{ws_base(fake_server)}/tts/websocket", messages, probe, _cartesia_probe_done))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=_DEEPGRAM_MESSAGES)
def test_deepgram_survives_any_messages(fake_server: ThreadedServer, messages: list[dict[str, Any]]) -> None:
    answered = sum(m["type"] in ("Flush", "Clear") for m in messages) + 1  # each takes a sequence id
    asyncio.run(_deepgram_survives(f"{ws_base(fake_server)}/v1/speak", messages, answered))


async def _deepgram_survives(url: str, messages: list[dict[str, Any]], probe_sequence: int) -> None:
    """After the messages, a Clear and a probe reply: the probe is spoken and flushed, and nothing
    on the way was an internal error."""
    probe = [{"type": "Clear"}, {"type": "Speak", "text": "Still speaking."}, {"type": "Flush"}]
    seen, audio = [], 0
    async with websockets.connect(url, max_size=None) as ws:
        for message in messages + probe:
            await ws.send(json.dumps(message))
        while not (seen and seen[-1] == {"type": "Flushed", "sequence_id": probe_sequence}):
            frame = await asyncio.wait_for(ws.recv(), 20)
            if isinstance(frame, bytes):
                audio += len(frame)
            else:
                seen.append(json.loads(frame))
    assert audio and not any(m.get("code") == "internal_error" for m in seen), seen
