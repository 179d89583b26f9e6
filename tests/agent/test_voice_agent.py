from __future__ import annotations

import asyncio

import pytest

from speakstream.agent.events import AgentDone, AgentError, AudioChunkEvent, ChunkSent, TextDelta, WordTimestampsEvent
from speakstream.agent.sources import OpenAISource, ReplaySource
from speakstream.agent.voice_agent import VoiceAgent
from speakstream.client import SpeechSession
from speakstream.engine.fake import FakeEngine
from speakstream.loadtest.servers import server_counts, settled, start_server
from speakstream.server.serve import ThreadedServer

FAST = ReplaySource(reply_id="long", ttft_s=0.02, tokens_per_s=400.0)


@pytest.mark.parametrize("mode", ["bidi", "batch"])
async def test_events_come_in_order_and_complete(fake_server: ThreadedServer, mode: str) -> None:
    async with SpeechSession(fake_server.ws_url) as session:
        events = [e async for e in VoiceAgent(FAST, session, mode=mode).run("Which plan?")]
    kinds = [e.type for e in events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_done"
    assert [e.t for e in events] == sorted(e.t for e in events)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == FAST.text
    chunks = [e for e in events if isinstance(e, ChunkSent)]
    assert len(chunks) >= 5 if mode == "bidi" else len(chunks) == 1
    first_audio = next(e for e in events if isinstance(e, AudioChunkEvent))
    done = events[-1]
    assert isinstance(done, AgentDone) and done.timings["ttfa_s"] == first_audio.t
    assert done.audio_bytes == sum(e.size for e in events if isinstance(e, AudioChunkEvent))
    assert any(isinstance(e, WordTimestampsEvent) for e in events)
    if mode == "bidi":  # speech started while the LLM was still writing
        last_delta = max(e.t for e in events if isinstance(e, TextDelta))
        assert chunks[0].t < last_delta
    assert all(set(e.to_dict()) >= {"type", "t"} for e in events)


async def test_barge_in_stops_everything() -> None:
    server = start_server(FakeEngine(seconds_per_char=0.003))
    try:
        baseline = (await asyncio.to_thread(server_counts, server))["tasks"]
        async with SpeechSession(server.ws_url) as session:
            agent = VoiceAgent(ReplaySource(reply_id="long", ttft_s=0.02, tokens_per_s=100.0), session)
            events = []
            report = None
            async for event in agent.run("Which plan?"):
                events.append(event)
                if isinstance(event, AudioChunkEvent) and report is None:
                    await asyncio.sleep(0.3)
                    report = await agent.interrupt()
            done = events[-1]
            assert isinstance(done, AgentDone) and done.interrupted == report
            assert report is not None and report["delivered_s"] > 0 and report["last_word_delivered"]
            assert report["heard_s"] <= report["delivered_s"]
            cancelled_at = done.t
            assert all(e.t <= cancelled_at for e in events)
            # the session is clean and usable: the next turn speaks normally
            events2 = [e async for e in VoiceAgent(FAST, session).run("Again")]
            assert isinstance(events2[-1], AgentDone) and events2[-1].interrupted is None
        state = await settled(server, baseline)
        assert state == {"tasks": baseline, "sessions": 0, "queued": 0, "reserved": 0}
    finally:
        server.stop()


async def test_interrupt_after_the_reply_ended_returns_at_once(fake_server: ThreadedServer) -> None:
    async with SpeechSession(fake_server.ws_url) as session:
        agent = VoiceAgent(FAST, session)
        assert await agent.interrupt() is None  # nothing started yet
        events = [e async for e in agent.run("Which plan?")]
        assert isinstance(events[-1], AgentDone)
        assert await asyncio.wait_for(agent.interrupt(), 1.0) is None


async def test_interrupt_before_any_text_reached_the_server(fake_server: ThreadedServer) -> None:
    slow_start = ReplaySource(reply_id="long", ttft_s=5.0, tokens_per_s=100.0)
    async with SpeechSession(fake_server.ws_url) as session:
        agent = VoiceAgent(slow_start, session)
        events = []
        async for event in agent.run("Which plan?"):
            events.append(event)
            if len(events) == 1:  # agent_start: the LLM has written nothing yet
                report = await asyncio.wait_for(agent.interrupt(), 10.0)
        done = events[-1]
        assert isinstance(done, AgentDone) and done.interrupted == report
        assert report is not None and report["audio_bytes"] == 0 and report["last_word_delivered"] is None
        again = [e async for e in VoiceAgent(FAST, session).run("hi")]
        assert isinstance(again[-1], AgentDone) and again[-1].interrupted is None


async def test_llm_failure_is_an_error_event(fake_server: ThreadedServer) -> None:
    source = OpenAISource(base_url="http://127.0.0.1:9/v1", model="x")
    async with SpeechSession(fake_server.ws_url) as session:
        events = [e async for e in VoiceAgent(source, session).run("hi")]
        assert isinstance(events[-1], AgentError) and events[-1].code == "source_error"
        again = [e async for e in VoiceAgent(FAST, session).run("hi")]
        assert isinstance(again[-1], AgentDone)


@pytest.mark.model
async def test_agent_speaks_with_the_real_engine(kokoro_server: ThreadedServer) -> None:
    source = ReplaySource(reply_id="greeting", ttft_s=0.05, tokens_per_s=60.0)
    async with SpeechSession(kokoro_server.ws_url) as session:
        events = [e async for e in VoiceAgent(source, session, voice="af_bella").run("Hello?")]
    done = events[-1]
    assert isinstance(done, AgentDone)
    audio_s = done.audio_bytes / 2 / 24_000
    assert audio_s > 2.0 and done.timings["audio_s"] == pytest.approx(audio_s, abs=0.01)
