"""Helpers for tests that drive a real server."""

from __future__ import annotations

import asyncio
from typing import Any

from speakstream.client import AudioEvent, ControlEvent, SpeechSession
from speakstream.server.serve import ThreadedServer


async def next_control(session: SpeechSession, timeout: float = 30.0) -> ControlEvent:
    """The next control message, skipping audio."""
    while True:
        event = await asyncio.wait_for(session.receive(), timeout)
        if isinstance(event, ControlEvent):
            return event


async def drain_until(
    session: SpeechSession, kinds: tuple[str, ...], timeout: float = 60.0
) -> list[AudioEvent | ControlEvent]:
    events: list[AudioEvent | ControlEvent] = []
    while True:
        event = await asyncio.wait_for(session.receive(), timeout)
        events.append(event)
        if isinstance(event, ControlEvent) and event.type in kinds:
            return events


def server_state(server: ThreadedServer) -> dict[str, Any]:
    """Tasks, sessions and queue of the server, read on its own loop."""
    runtime = server.runtime

    async def read() -> dict[str, Any]:
        await asyncio.sleep(0)
        return {
            "tasks": len(asyncio.all_tasks()),
            "sessions": len(runtime.sessions),
            "queued": runtime.scheduler.queued if runtime.scheduler else 0,
        }

    assert runtime.loop is not None
    return asyncio.run_coroutine_threadsafe(read(), runtime.loop).result(timeout=10)


async def settle(server: ThreadedServer, baseline_tasks: int, timeout: float = 10.0) -> dict[str, Any]:
    """Wait until the server is back to ``baseline_tasks`` tasks and no sessions."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        state = await asyncio.to_thread(server_state, server)
        if (
            state["tasks"] <= baseline_tasks and state["sessions"] == 0
        ) or asyncio.get_running_loop().time() > deadline:
            return state
        await asyncio.sleep(0.05)
