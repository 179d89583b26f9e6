"""Helpers for tests that drive a real server."""

from __future__ import annotations

import asyncio

from speakstream.client import AudioEvent, ControlEvent, SpeechSession


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
