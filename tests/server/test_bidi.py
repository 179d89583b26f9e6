"""The bidirectional session against a real uvicorn server (fake engine: protocol only)."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
import websockets

from speakstream.client import AudioEvent, ControlEvent, SpeechSession
from speakstream.engine.cancel import CancelToken
from speakstream.engine.fake import FakeEngine
from speakstream.errors import SpeakstreamError
from speakstream.loadtest.fuzz import BAD_INPUTS
from speakstream.loadtest.servers import server_counts, settled, start_server
from speakstream.server.serve import ThreadedServer
from speakstream.types import AudioChunk
from tests.server.helpers import drain_until, next_control

REPLY = "Thanks for waiting, I found your booking. Your flight leaves tomorrow. Is there anything else?"


@pytest.mark.parametrize("binary", [False, True])
async def test_many_messages_on_one_session(fake_server: ThreadedServer, binary: bool) -> None:
    async with SpeechSession(fake_server.ws_url, send_binary=binary) as session:
        assert session.info["type"] == "session_start"
        for i in range(12):
            request_id = await session.speak(f"Sentence number {i}, spoken on one connection.")
            result = await session.collect(request_id)
            kinds = [m["type"] for m in result.messages]
            assert kinds[0] == "synthesis_start" and kinds[-1] == "synthesis_complete", kinds
            complete = result.final
            assert complete is not None and complete["audio_bytes"] == len(result.audio) > 0
            assert complete["timings"]["ttfa_s"] >= 0 and complete["chunks"] >= 1


async def test_synthesis_start_states_the_audio_format(fake_server: ThreadedServer) -> None:
    async with SpeechSession(fake_server.ws_url) as session:
        result = await session.collect(await session.speak("Hello there."))
        start = result.of_type("synthesis_start")[0]
        assert (start["format"], start["sample_rate"], start["mime_type"]) == ("pcm", 24_000, "audio/pcm")
        result = await session.collect(await session.speak("Hello there.", format="mp3", sample_rate=16_000))
        start = result.of_type("synthesis_start")[0]
        assert (start["format"], start["sample_rate"]) == ("mp3", 16_000)
        assert bytes(result.audio[:3]) in (b"ID3",) or result.audio[0] == 0xFF


class BraceEngine(FakeEngine):
    """Audio whose first byte is 0x7B ('{'), as raw PCM legally may be."""

    def synthesize(
        self, text: str, *, voice: str = "af_heart", speed: float = 1.0, cancel: CancelToken | None = None
    ) -> AudioChunk:
        chunk = super().synthesize(text, voice=voice, speed=speed, cancel=cancel)
        samples = chunk.samples.copy()
        samples[0] = 0x7B / 32767.0
        return AudioChunk(samples, chunk.sample_rate, chunk.text, chunk.words, chunk.timings)


async def test_audio_beginning_with_a_brace_is_still_audio() -> None:
    server = start_server(BraceEngine(), audio_frame_bytes=2048)
    try:
        async with SpeechSession(server.ws_url) as session:
            result = await session.collect(await session.speak("Brace yourself."))
            assert result.audio[:1] == b"{"
            assert result.final is not None and result.final["audio_bytes"] == len(result.audio)
    finally:
        server.stop()


async def test_every_bad_input_gets_an_error_and_the_session_goes_on(fake_server: ThreadedServer) -> None:
    async with SpeechSession(fake_server.ws_url) as session:
        for frame, code in BAD_INPUTS:
            await session.send_raw(frame)
            error = await next_control(session)
            assert error.type == "error" and error.message["code"] == code, (frame[:40], error.message)
            assert error.message["message"] and error.message["retryable"] is False
            result = await session.collect(await session.speak("Still here."))
            assert result.final is not None and result.final["type"] == "synthesis_complete"


async def test_other_sessions_are_untouched_by_bad_input(fake_server: ThreadedServer) -> None:
    async with SpeechSession(fake_server.ws_url) as good, SpeechSession(fake_server.ws_url) as bad:
        request_id = await good.speak(REPLY)
        for frame, _ in BAD_INPUTS[:6]:
            await bad.send_raw(frame)
        result = await good.collect(request_id)
        assert result.final is not None and result.final["type"] == "synthesis_complete"


async def test_appended_fragments_are_chunked_by_the_server(fake_server: ThreadedServer) -> None:
    async with SpeechSession(fake_server.ws_url) as session:
        for i in range(0, len(REPLY), 5):
            await session.append(REPLY[i : i + 5], request_id="stream-1")
        await session.flush()
        result = await session.collect("stream-1")
        texts = [m["text"] for m in result.of_type("word_timestamps")]
        assert texts == [
            "Thanks for waiting,",
            "I found your booking.",
            "Your flight leaves tomorrow.",
            "Is there anything else?",
        ]
        assert result.final is not None and result.final["audio_bytes"] == len(result.audio)


async def test_first_audio_arrives_before_the_reply_is_flushed(fake_server: ThreadedServer) -> None:
    async with SpeechSession(fake_server.ws_url) as session:
        await session.append("Thanks for waiting, I found your booking. And", request_id="live")
        event = await asyncio.wait_for(session.receive(), 10)
        while not isinstance(event, AudioEvent):
            event = await asyncio.wait_for(session.receive(), 10)
        assert event.request_id == "live"
        await session.append(" that is all.")
        await session.flush()
        await drain_until(session, ("synthesis_complete",))


async def test_an_appended_request_that_gets_no_more_text_is_ended_and_frees_its_slots() -> None:
    """A client that appends and never flushes holds nothing: after ``text_idle_s`` the request
    is spoken as a flush would end it, its engine slots are released, and the session goes on."""
    server = start_server(FakeEngine(seconds_per_char=0.001), text_idle_s=0.3)
    try:
        async with SpeechSession(server.ws_url) as session:
            await session.append("Thanks for waiting, I found your booking. And then", request_id="idle")
            result = await asyncio.wait_for(session.collect("idle"), 10)
            assert result.final is not None and result.final["type"] == "synthesis_complete"
            assert [m["text"] for m in result.of_type("word_timestamps")][-1] == "And then"
            assert (await asyncio.to_thread(server_counts, server))["reserved"] == 0
            follow = await session.collect(await session.speak("Still here."))
            assert follow.final is not None and follow.final["type"] == "synthesis_complete"
    finally:
        server.stop()


async def test_cancel_mid_reply_stops_audio_and_reports_what_was_sent() -> None:
    server = start_server(FakeEngine(seconds_per_char=0.004), audio_frame_bytes=4096)
    try:
        async with SpeechSession(server.ws_url) as session:
            request_id = await session.speak(" ".join([REPLY] * 4))
            received = 0
            first_words: list[dict[str, object]] = []
            while received == 0:
                event = await session.receive()
                if isinstance(event, AudioEvent):
                    received += len(event.data)
                else:
                    first_words += event.message.get("words", [])
            await session.cancel()
            after: list[AudioEvent | ControlEvent] = await drain_until(session, ("cancelled",))
            received += sum(len(e.data) for e in after if isinstance(e, AudioEvent))
            cancelled = after[-1].message  # type: ignore[union-attr]
            assert cancelled["request_id"] == request_id
            assert cancelled["audio_bytes"] == received
            assert 0 < cancelled["duration_s"] < 30
            # `last_word`: the last word whose audio ended within what was sent; None if none did
            words = [w for e in after if isinstance(e, ControlEvent) for w in e.message.get("words", [])]
            whole = [w["word"] for w in [*first_words, *words] if w["end_s"] <= cancelled["duration_s"] + 1e-6]
            assert cancelled["last_word"] == (whole[-1] if whole else None)
            # nothing of that request after `cancelled`, and the session still works
            result = await session.collect(await session.speak("Next question."))
            assert result.final is not None and result.final["type"] == "synthesis_complete"
            assert result.of_type("synthesis_start")[0]["request_id"] == result.request_id
        assert server.runtime.scheduler is not None and server.runtime.scheduler.queued == 0
    finally:
        server.stop()


async def test_cancel_a_queued_request_by_id(fake_server: ThreadedServer) -> None:
    async with SpeechSession(fake_server.ws_url) as session:
        first = await session.speak(REPLY, request_id="a")
        await session.speak(REPLY, request_id="b")
        await session.cancel(request_id="b")
        events = await drain_until(session, ("cancelled",))
        assert events[-1].message["request_id"] == "b"  # type: ignore[union-attr]
        assert events[-1].message["audio_bytes"] == 0  # type: ignore[union-attr]
        result = await session.collect(first)
        assert result.final is not None and result.final["type"] == "synthesis_complete"


async def test_duplicate_request_ids_are_refused(fake_server: ThreadedServer) -> None:
    async with SpeechSession(fake_server.ws_url) as session:
        await session.speak(REPLY, request_id="same")
        await session.speak("Again.", request_id="same")
        events = await drain_until(session, ("error",))
        assert events[-1].message["code"] == "duplicate_request_id"  # type: ignore[union-attr]


async def test_config_sets_session_defaults(fake_server: ThreadedServer) -> None:
    async with SpeechSession(fake_server.ws_url) as session:
        await session.configure(voice="bm_george", speed=1.5, format="wav")
        result = await session.collect(await session.speak("Configured."))
        start = result.of_type("synthesis_start")[0]
        assert (start["voice"], start["speed"], start["format"]) == ("bm_george", 1.5, "wav")
        assert bytes(result.audio[:4]) == b"RIFF"


async def test_client_vanishing_mid_synthesis_leaves_nothing_behind() -> None:
    server = start_server(FakeEngine(seconds_per_char=0.003))
    try:
        baseline = (await asyncio.to_thread(server_counts, server))["tasks"]
        for _ in range(5):
            ws = await websockets.connect(server.ws_url)
            await ws.recv()
            await ws.send(json.dumps({"type": "text", "text": " ".join([REPLY] * 3)}))
            await ws.recv()  # synthesis_start
            ws.transport.abort()  # vanish without a close frame
        state = await settled(server, baseline)
        assert state == {"tasks": baseline, "sessions": 0, "queued": 0, "reserved": 0}
    finally:
        server.stop()


async def test_idle_sessions_are_closed_with_a_reason() -> None:
    server = start_server(FakeEngine(), idle_timeout_s=0.3)
    try:
        async with websockets.connect(server.ws_url) as ws:
            await ws.recv()
            with pytest.raises(websockets.exceptions.ConnectionClosedOK):
                await asyncio.wait_for(ws.recv(), 5)
            assert (ws.close_code, ws.close_reason) == (1000, "idle timeout")
    finally:
        server.stop()


async def test_close_message_ends_the_session_cleanly(fake_server: ThreadedServer) -> None:
    async with websockets.connect(fake_server.ws_url) as ws:
        await ws.recv()
        await ws.send(json.dumps({"type": "text", "text": REPLY}))
        await ws.send(json.dumps({"type": "close"}))

        async def read_all() -> None:
            while True:
                await asyncio.wait_for(ws.recv(), 5)

        with pytest.raises(websockets.exceptions.ConnectionClosedOK):
            await read_all()
        assert (ws.close_code, ws.close_reason) == (1000, "closed by client")


async def test_sessions_over_the_limit_are_refused_fast_and_retryably() -> None:
    server = start_server(FakeEngine(), max_sessions=2)
    try:
        async with SpeechSession(server.ws_url), SpeechSession(server.ws_url):
            with pytest.raises(SpeakstreamError) as info:
                async with SpeechSession(server.ws_url):
                    pass
            assert info.value.code == "overloaded" and info.value.retryable
        for _ in range(50):  # recovers once load drops (the slots free as the server closes them)
            try:
                async with SpeechSession(server.ws_url) as again:
                    result = await again.collect(await again.speak("Back again."))
                break
            except SpeakstreamError as exc:
                if not exc.retryable:
                    raise
                await asyncio.sleep(0.1)
        assert result.final is not None and result.final["type"] == "synthesis_complete"
    finally:
        server.stop()


async def test_word_timestamps_cover_the_audio(fake_server: ThreadedServer) -> None:
    async with SpeechSession(fake_server.ws_url) as session:
        result = await session.collect(await session.speak(REPLY))
        words = [w for m in result.of_type("word_timestamps") for w in m["words"]]
        starts = [w["start_s"] for w in words]
        assert starts == sorted(starts)
        duration = len(result.audio) / 2 / 24_000
        assert words[-1]["end_s"] == pytest.approx(duration, abs=0.05)
        assert np.isclose(result.final["duration_s"], duration, atol=0.01)  # type: ignore[index]


@pytest.mark.parametrize(("chunking", "chunks"), [("auto", 4), ("sentences", 3), ("none", 1)])
async def test_chunking_modes(fake_server: ThreadedServer, chunking: str, chunks: int) -> None:
    async with SpeechSession(fake_server.ws_url) as session:
        result = await session.collect(await session.speak(REPLY, chunking=chunking))
        assert len(result.of_type("word_timestamps")) == chunks
        await session.speak(REPLY, chunking="paragraphs")
        error = await next_control(session)
        assert error.message["code"] == "invalid_chunking"
