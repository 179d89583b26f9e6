"""Load: N sessions at once, each speaking a multi-sentence reply; every session must receive
exactly its own audio (bytes and request ids against ``synthesis_complete``)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from speakstream.bench.stats import summary
from speakstream.client import SpeechSession
from speakstream.data import replies
from speakstream.errors import SpeakstreamError


@dataclass(slots=True)
class SessionOutcome:
    held: bool = False
    ttfa_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    foreign: int = 0
    """Messages or bytes that belonged to another session."""
    audio_s: float = 0.0


async def one_session(url: str, index: int, texts: list[str], deadline: float, delay_s: float = 0.0) -> SessionOutcome:
    outcome = SessionOutcome()
    await asyncio.sleep(delay_s)
    try:
        async with SpeechSession(url) as session:
            outcome.held = True
            for turn, text in enumerate(texts):
                if time.monotonic() > deadline:
                    outcome.errors.append("deadline")
                    break
                request_id = f"s{index}-r{turn}"
                sent_at = time.perf_counter()
                await session.speak(text, request_id=request_id)
                result = await asyncio.wait_for(
                    session.collect(request_id, sent_at=sent_at), deadline - time.monotonic()
                )
                outcome.foreign += _foreign(result.messages, index)
                final = result.final or {}
                if final.get("type") != "synthesis_complete":
                    outcome.errors.append(str(final.get("code", final.get("type"))))
                elif final["audio_bytes"] != len(result.audio):
                    outcome.foreign += 1
                else:
                    outcome.audio_s += float(final.get("duration_s", 0.0))
                if result.ttfa_s is not None:
                    outcome.ttfa_ms.append(result.ttfa_s * 1000)
    except (SpeakstreamError, TimeoutError) as exc:
        outcome.errors.append(getattr(exc, "code", type(exc).__name__))
    return outcome


def _foreign(messages: list[dict[str, Any]], index: int) -> int:
    own = f"s{index}-"
    return sum(1 for m in messages if m.get("request_id") and not str(m["request_id"]).startswith(own))


async def run_level(
    url: str,
    sessions: int,
    *,
    reply_id: str = "greeting",
    turns: int = 1,
    ramp_s: float = 0.0,
    timeout_s: float = 300.0,
) -> dict[str, Any]:
    """``sessions`` at once (or one every ``ramp_s``, as callers arrive), ``turns`` replies each."""
    text = replies()[reply_id]["text"]
    deadline = time.monotonic() + timeout_s
    started = time.perf_counter()
    outcomes = await asyncio.gather(
        *(one_session(url, i, [text] * turns, deadline, i * ramp_s) for i in range(sessions))
    )
    ttfa = [t for o in outcomes for t in o.ttfa_ms]
    wall_s = time.perf_counter() - started
    audio_s = sum(o.audio_s for o in outcomes)
    return {
        "sessions": sessions,
        "held": sum(o.held for o in outcomes),
        "requests": len(ttfa),
        "ttfa_ms": summary(ttfa),
        "errors": sum(len(o.errors) for o in outcomes),
        "error_codes": sorted({e for o in outcomes for e in o.errors}),
        "foreign": sum(o.foreign for o in outcomes),
        "wall_s": round(wall_s, 2),
        "audio_s": round(audio_s, 2),
        "audio_per_wall": round(audio_s / wall_s, 3),  # audio seconds per wall second: throughput
    }


async def run_load(url: str, levels: list[int], **kwargs: Any) -> list[dict[str, Any]]:
    return [await run_level(url, n, **kwargs) for n in levels]
