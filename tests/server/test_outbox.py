"""The session's outbox (bounded, purgeable) and the record of what was really sent."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

from speakstream.server.outbox import Outbox, Outgoing, SentLog
from speakstream.types import WordTimestamp

WORDS = (WordTimestamp("Hello", 0.0, 0.4), WordTimestamp("there", 0.4, 0.9))


async def test_frames_leave_in_order_and_the_bound_holds() -> None:
    box = Outbox(maxsize=2)
    await box.put(Outgoing(b"a"))
    await box.put(Outgoing(b"b"))
    blocked = asyncio.create_task(box.put(Outgoing(b"c")))
    await asyncio.sleep(0.01)
    assert not blocked.done() and len(box) == 2  # waits for room
    await box.put(Outgoing(b"err"), control=True)  # control frames may pass the bound a little
    assert [(await box.get()).payload for _ in range(2)] == [b"a", b"b"]
    await asyncio.wait_for(blocked, 1)
    assert [(await box.get()).payload for _ in range(2)] == [b"err", b"c"]


async def test_purge_drops_one_request_but_keeps_its_cancelled_marker() -> None:
    box = Outbox(maxsize=8)
    for item in (
        Outgoing(b"x1", "x"),
        Outgoing(b"y1", "y"),
        Outgoing(request_id="x", cancelled=True),
        Outgoing(b"x2", "x"),
        Outgoing(b"none"),
    ):
        await box.put(item)
    assert await box.purge("x") == 2
    left = [await box.get() for _ in range(len(box))]
    assert [(i.payload, i.request_id, i.cancelled) for i in left] == [
        (b"y1", "y", False),
        (b"", "x", True),
        (b"none", None, False),
    ]


def _cancelled(log: SentLog, request_id: str) -> dict[str, object]:
    message: dict[str, object] = json.loads(log.cancelled(request_id))
    return message


def test_sent_log_counts_audio_and_whole_words_only() -> None:
    log = SentLog()
    log.start("r")
    log.account(Outgoing(b"\0" * 100, "r", audio_to_s=0.3, words=WORDS), b"\0" * 100)
    message = _cancelled(log, "r")
    assert message == {
        "type": "cancelled",
        "request_id": "r",
        "audio_bytes": 100,
        "duration_s": 0.3,
        "last_word": None,  # "Hello" ends at 0.4: not sent whole
        "heard_to_char": None,
    }
    log.start("r")
    for end in (0.3, 0.6):
        log.account(Outgoing(b"\0" * 100, "r", audio_to_s=end, words=WORDS), b"\0" * 100)
    assert _cancelled(log, "r")["last_word"] == "Hello"
    log.start("r")  # a word that knows where it came from in the client's text says so
    spans = [replace(w, chars=(i * 6, i * 6 + 5)) for i, w in enumerate(WORDS)]
    log.account(Outgoing(b"\0" * 100, "r", audio_to_s=0.6, words=spans), b"\0" * 100)
    assert _cancelled(log, "r")["heard_to_char"] == 5


def test_sent_log_ignores_control_frames_and_forgets_finished_requests() -> None:
    log = SentLog()
    log.start("r")
    log.account(Outgoing('{"type":"x"}', "r"), '{"type":"x"}')
    log.finish("r")
    assert _cancelled(log, "r")["audio_bytes"] == 0
    assert _cancelled(log, "never-started") == {
        "type": "cancelled",
        "request_id": "never-started",
        "audio_bytes": 0,
        "duration_s": 0.0,
        "last_word": None,
        "heard_to_char": None,
    }
