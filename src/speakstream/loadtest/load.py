"""Load: N sessions at once, each speaking a multi-sentence reply; every session must receive
exactly its own audio (bytes and request ids against ``synthesis_complete``), and each admitted
listener is played in real time from its first audio: the gaps it hears are counted. A reply the
server refuses for capacity (``overloaded``) is counted apart from errors."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from speakstream.bench.player import pcm_arrivals, play
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
    refused: int = 0
    """Replies refused for capacity (retryable ``overloaded``)."""
    waited_s: list[float] = field(default_factory=list)
    """Seconds each admitted reply waited for room (a server that queues)."""
    gaps: list[float] = field(default_factory=list)
    """Every gap a real-time player heard after first audio, in seconds."""


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
                if final.get("code") == "overloaded":
                    outcome.refused += 1
                elif final.get("type") != "synthesis_complete":
                    outcome.errors.append(str(final.get("code", final.get("type"))))
                elif final["audio_bytes"] != len(result.audio):
                    outcome.foreign += 1
                else:
                    outcome.audio_s += float(final.get("duration_s", 0.0))
                    outcome.waited_s.append(float(final.get("timings", {}).get("admission_wait_s", 0.0)))
                    outcome.gaps += list(play(pcm_arrivals(result.audio_times), sent_at).gaps)
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
    waited = [w for o in outcomes for w in o.waited_s]
    return {
        "sessions": sessions,
        "held": sum(o.held for o in outcomes),
        "requests": len(ttfa),
        "ttfa_ms": summary(ttfa),
        "refused": sum(o.refused for o in outcomes),
        "delayed": sum(1 for w in waited if w > 0.05),
        "gaps": sum(len(o.gaps) for o in outcomes),
        "gap_ms_per_session": round(1000 * sum(sum(o.gaps) for o in outcomes) / max(1, len(waited)), 1),
        "errors": sum(len(o.errors) for o in outcomes),
        "error_codes": sorted({e for o in outcomes for e in o.errors}),
        "foreign": sum(o.foreign for o in outcomes),
        "wall_s": round(wall_s, 2),
        "audio_s": round(audio_s, 2),
        "audio_per_wall": round(audio_s / wall_s, 3),  # audio seconds per wall second: throughput
    }


async def run_load(url: str, levels: list[int], **kwargs: Any) -> list[dict[str, Any]]:
    return [await run_level(url, n, **kwargs) for n in levels]
