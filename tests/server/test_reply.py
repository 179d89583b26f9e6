"""``Reply`` on its own: chunking, ordering, the in-flight bound and admission (fake engine)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest

from speakstream.engine.cancel import CancelToken
from speakstream.engine.fake import FakeEngine
from speakstream.errors import InvalidInput
from speakstream.scheduler import Scheduler
from speakstream.server.encoding import ChunkOut
from speakstream.server.reply import Reply, ReplySettings
from speakstream.types import AudioChunk

TEXT = "Thanks for waiting, I found your booking. Your flight leaves tomorrow. Is there anything else?"


class CountingEngine(FakeEngine):
    """Records how many chunks of the reply were at the scheduler at each synthesis."""

    def __init__(self) -> None:
        super().__init__(seconds_per_char=0.0005)
        self.scheduler: Scheduler | None = None
        self.in_flight: list[int] = []

    def synthesize(
        self, text: str, *, voice: str = "af_heart", speed: float = 1.0, cancel: CancelToken | None = None
    ) -> AudioChunk:
        assert self.scheduler is not None
        self.in_flight.append(self.scheduler.queued)  # this chunk included
        return super().synthesize(text, voice=voice, speed=speed, cancel=cancel)


@pytest.fixture
async def scheduler() -> AsyncIterator[Scheduler]:
    engine = CountingEngine()
    scheduler = Scheduler(engine, max_queue=8)
    engine.scheduler = scheduler
    await scheduler.start()
    yield scheduler
    await scheduler.stop()


def _reply(scheduler: Scheduler, **settings: object) -> Reply:
    return Reply(scheduler, session_id="s", request_id="r", settings=ReplySettings(**settings), lookahead=2)  # type: ignore[arg-type]


async def _all(reply: Reply, *, slow_consumer: bool = False) -> list[ChunkOut]:
    outs = []
    async for out in reply.outputs():
        outs.append(out)
        if slow_consumer:
            await asyncio.sleep(0.02)
    return outs


async def test_chunks_come_in_order_with_running_offsets(scheduler: Scheduler) -> None:
    reply = _reply(scheduler)
    reply.push(TEXT)
    reply.end_input()
    outs = await _all(reply)
    spoken = [o for o in outs if o.text]
    assert [o.text for o in spoken] == reply.texts and " ".join(reply.texts) == TEXT
    assert [o.sequence for o in outs] == list(range(len(outs)))
    for before, after in itertools.pairwise(spoken):  # chunks follow each other
        assert after.offset_s == pytest.approx(before.offset_s + before.chunk_duration_s)
    for before, after in itertools.pairwise(outs):  # and so do the pieces inside them
        assert after.offset_s == pytest.approx(before.offset_s + before.duration_s)
    assert len(outs) > len(spoken) + 1  # the engine streamed inside chunks
    assert reply.stats.audio_bytes == sum(len(o.data) for o in outs) > 0
    assert scheduler.admission.reserved == 0 and scheduler.queued == 0


async def test_a_reply_never_has_more_chunks_queued_than_it_reserved(scheduler: Scheduler) -> None:
    reply = _reply(scheduler, chunking="sentences")
    reply.push(" ".join(["One short sentence."] * 12))
    reply.end_input()
    await _all(reply, slow_consumer=True)
    engine = scheduler.engine
    assert isinstance(engine, CountingEngine)
    assert len(engine.in_flight) == 12 and max(engine.in_flight) <= 3  # lookahead 2 + the one being sent


async def test_a_client_chunk_is_spoken_as_it_is(scheduler: Scheduler) -> None:
    reply = _reply(scheduler)
    reply.push("Raw words that are not")
    reply.push_chunk("Well, this one, with commas, is a chunk. Even two sentences. ")
    reply.end_input()
    await _all(reply)
    assert reply.texts == ["Raw words that are not", "Well, this one, with commas, is a chunk. Even two sentences."]


@pytest.mark.parametrize(("chunking", "count"), [("auto", 4), ("sentences", 3), ("none", 1)])
async def test_chunking_modes(scheduler: Scheduler, chunking: str, count: int) -> None:
    reply = _reply(scheduler, chunking=chunking)
    reply.push(TEXT)
    reply.end_input()
    await _all(reply)
    assert len(reply.texts) == count


async def test_a_long_text_without_chunking_is_still_bounded_engine_jobs(scheduler: Scheduler) -> None:
    reply = _reply(scheduler, chunking="none")
    reply.push(" ".join([TEXT] * 40))
    reply.end_input()
    await _all(reply)
    assert len(reply.texts) > 1 and all(len(t) <= 1_000 for t in reply.texts)
    assert " ".join(reply.texts) == " ".join([TEXT] * 40)  # every word, in order, in whole sentences
    assert all(t.endswith("?") or t.endswith(".") for t in reply.texts)


async def test_a_request_over_the_audio_limit_fails_clearly_and_releases_its_slots(scheduler: Scheduler) -> None:
    """The least the text takes (11 s) fits the limit; the audio made (17 s at the fake's pace)
    does not: the reply stops where the audio passes it."""
    reply = Reply(scheduler, session_id="s", request_id="r", settings=ReplySettings(), max_audio_s=12.0)
    reply.push(TEXT * 3)
    reply.end_input()
    with pytest.raises(InvalidInput) as too_long:
        await _all(reply)
    assert too_long.value.code == "audio_too_long"
    assert sum(len(t) for t in reply.texts) < len(TEXT * 3) and scheduler.admission.reserved == 0


def _push_whole(reply: Reply, text: str) -> None:
    reply.push(text)
    reply.end_input()


@pytest.mark.parametrize(
    ("text", "speed", "limit_s"),
    [
        ("7" * 15_000 + " okay.", 1.0, 1800.0),  # a code read digit by digit: at least 3,000 s
        (TEXT * 3, 1.0, 10.0),  # 219 letters: at least 11 s
        (TEXT * 3, 0.5, 20.0),  # the same read at half speed: at least 22 s
        ('<speak>Hello.<break time="10s"/><break time="10s"/>Bye.</speak>', 1.0, 15.0),  # its pauses count
    ],
    ids=["digits", "letters", "half-speed", "ssml-pauses"],
)
async def test_a_text_that_takes_longer_than_the_audio_limit_is_refused_before_any_work(
    scheduler: Scheduler, text: str, speed: float, limit_s: float
) -> None:
    settings = ReplySettings(speed=speed)
    reply = Reply(scheduler, session_id="s", request_id="r", settings=settings, max_audio_s=limit_s)
    with pytest.raises(InvalidInput, match=r"at least \d+ s to speak") as too_long:
        _push_whole(reply, text)
    assert too_long.value.code == "audio_too_long" and too_long.value.http_status == 400
    assert scheduler.queued == 0 and scheduler.admission.reserved == 0


async def test_input_rules(scheduler: Scheduler) -> None:
    reply = Reply(scheduler, session_id="s", request_id="r", settings=ReplySettings(), max_text_chars=10)
    with pytest.raises(InvalidInput) as too_long:
        reply.push("x" * 11)
    assert too_long.value.code == "text_too_long"
    reply.end_input()
    with pytest.raises(InvalidInput) as closed:
        reply.push("more")
    assert closed.value.code == "request_closed"
    with pytest.raises(InvalidInput) as unknown:
        _reply(scheduler, voice="xx_nobody")
    assert unknown.value.code == "unknown_voice"


async def test_nothing_speakable_is_an_error_and_releases_its_slots(scheduler: Scheduler) -> None:
    reply = _reply(scheduler)
    reply.push("   ")
    reply.end_input()
    with pytest.raises(InvalidInput) as empty:
        await _all(reply)
    assert empty.value.code == "empty_text"
    assert scheduler.admission.reserved == 0


async def test_a_reply_cut_short_releases_everything(scheduler: Scheduler) -> None:
    reply = _reply(scheduler, format="mp3")
    reply.push(" ".join([TEXT] * 3))
    reply.end_input()
    outputs = reply.outputs()
    await anext(outputs)
    await outputs.aclose()  # the client went away after the first chunk
    assert scheduler.admission.reserved == 0 and scheduler.queued == 0


async def test_admission_refuses_a_reply_over_the_limit(scheduler: Scheduler) -> None:
    first, second, third = (_reply(scheduler) for _ in range(3))
    await first.admitted()
    await first.admitted()  # idempotent
    await second.admitted()
    with pytest.raises(Exception, match="limit") as refused:
        await third.admitted()
    assert getattr(refused.value, "retryable", False)
    first.release()
    await third.admitted()
    second.release()
    third.release()
    assert scheduler.admission.reserved == 0


@pytest.mark.parametrize("repeat", [1, 25])  # 25: over OFF_LOOP_CHARS, chunked in a worker thread
@pytest.mark.parametrize("chunking", ["auto", "none", "sentences"])
async def test_a_whole_text_chunked_off_the_loop_gives_the_streamed_chunks(
    scheduler: Scheduler, chunking: str, repeat: int
) -> None:
    text = "Thanks for waiting, I found your booking. It leaves at nine. Gate twelve, seat 14C. " * repeat
    pushed = _reply(scheduler, chunking=chunking)
    pushed.push(text)
    pushed.end_input()
    spoken = _reply(scheduler, chunking=chunking)
    await spoken.speak(text)
    assert [o.text for o in await _all(spoken)] == [o.text for o in await _all(pushed)]
    with pytest.raises(InvalidInput, match="already ended"):
        spoken.push("more")
