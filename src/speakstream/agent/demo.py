"""The agent demo: both modes over the same text source and the same speech session.

Each trial runs bidi and batch (alternating which goes first, since this machine is noisy) and
records the time from ``agent_start`` to the first ``audio_chunk``. The first trial plays both
replies to the end (the bidi audio is saved as WAV); later trials barge in at the first audio,
which is all the measurement needs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speakstream.agent.events import AgentDone, AgentError, AudioChunkEvent
from speakstream.agent.sources import TextSource
from speakstream.agent.voice_agent import MODES, VoiceAgent
from speakstream.audio.encoders import wav_header
from speakstream.channel import Channel
from speakstream.errors import SpeakstreamError

DEFAULT_PROMPT = "Which plan should I pick?"


@dataclass(slots=True)
class ModeRun:
    ttfa_s: float | None
    timings: dict[str, Any]
    audio: bytes
    sample_rate: int = 24_000
    timeline: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class DemoResult:
    source: str
    runs: dict[str, list[ModeRun]] = field(default_factory=lambda: {m: [] for m in MODES})

    def ttfa_ms(self, mode: str) -> list[float]:
        return [round(r.ttfa_s * 1000, 1) for r in self.runs[mode] if r.ttfa_s is not None]

    def ratio(self) -> float | None:
        bidi, batch = self.ttfa_ms("bidi"), self.ttfa_ms("batch")
        if not bidi or not batch:
            return None
        return round(statistics.mean(batch) / statistics.mean(bidi), 2)

    def summary(self, mode: str) -> dict[str, float]:
        values = self.ttfa_ms(mode)
        return {
            "mean": round(statistics.mean(values), 1),
            "p50": round(statistics.median(values), 1),
            "min": min(values),
            "max": max(values),
        }

    def reply(self) -> str:
        """The text of the first bidi run, which played to the end."""
        return "".join(str(e["text"]) for e in self.runs["bidi"][0].timeline if e["type"] == "text_delta")

    def llm(self) -> dict[str, Any]:
        """The text source's own pace: time to first token (every run), and tokens a second from
        the first token to the last, alone (batch: speech waits for the whole reply) and beside the
        speech (bidi: the voice and the model share the cores; only runs that played to the end)."""
        ttft = [r.timings["ttft_s"] for m in MODES for r in self.runs[m] if r.timings.get("ttft_s") is not None]
        return {
            "ttft_ms": round(1000 * statistics.mean(ttft), 1) if ttft else None,
            "tokens_per_s_alone": _pace(self.runs["batch"]),
            "tokens_per_s_beside_speech": _pace(self.runs["bidi"]),
            "reply_s": _reply_s(self.runs["batch"]),
        }

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {m: {"ttfa_ms": self.ttfa_ms(m), **self.summary(m)} for m in MODES}
        return {**out, "ratio": self.ratio(), "source": self.source, "llm": self.llm(), "reply": self.reply()}


def _pace(runs: list[ModeRun]) -> float | None:
    """Mean tokens a second (text deltas after the first over the time they took) of the runs
    whose model finished."""
    paces = []
    for run in runs:
        first, done = run.timings.get("ttft_s"), run.timings.get("llm_done_s")
        deltas = sum(1 for e in run.timeline if e["type"] == "text_delta")
        if first is not None and done is not None and done > first and deltas > 1:
            paces.append((deltas - 1) / (done - first))
    return round(statistics.mean(paces), 1) if paces else None


def _reply_s(runs: list[ModeRun]) -> float | None:
    done = [r.timings["llm_done_s"] for r in runs if r.timings.get("llm_done_s") is not None]
    return round(statistics.mean(done), 2) if done else None


async def run_mode(
    source: TextSource, channel: Channel, mode: str, prompt: str, *, voice: str | None, full: bool
) -> ModeRun:
    agent = VoiceAgent(source, channel, mode=mode, voice=voice)
    audio = bytearray()
    timeline: list[dict[str, Any]] = []
    ttfa = None
    done: dict[str, Any] = {}
    async for event in agent.run(prompt):
        timeline.append(event.to_dict())
        if isinstance(event, AudioChunkEvent):
            audio += event.audio
            if ttfa is None:
                ttfa = event.t
                if not full:
                    await agent.interrupt()
        elif isinstance(event, AgentDone):
            done = event.timings
        elif isinstance(event, AgentError):
            raise SpeakstreamError(f"{mode} run failed: {event.message}", code=event.code)
    return ModeRun(ttfa, done, bytes(audio), timeline=timeline)


async def run_demo(
    make_source: Callable[[], TextSource],
    channel: Channel,
    *,
    prompt: str = DEFAULT_PROMPT,
    trials: int = 5,
    voice: str | None = None,
    progress: Callable[[str], None] | None = None,
    full_first: bool = True,
) -> DemoResult:
    result = DemoResult(source=make_source().name)
    for trial in range(trials):
        order = MODES if trial % 2 == 0 else tuple(reversed(MODES))
        for mode in order:
            run = await run_mode(make_source(), channel, mode, prompt, voice=voice, full=full_first and trial == 0)
            result.runs[mode].append(run)
            if progress:
                progress(f"trial {trial + 1}/{trials} {mode}: first audio {1000 * (run.ttfa_s or 0):.0f} ms")
    return result


def write_wav(run: ModeRun, path: Path) -> float:
    """Save a PCM run as WAV; returns its duration in seconds."""
    pcm = run.audio[: len(run.audio) - len(run.audio) % 2]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(wav_header(run.sample_rate, data_bytes=len(pcm)) + pcm)
    return len(pcm) / 2 / run.sample_rate
