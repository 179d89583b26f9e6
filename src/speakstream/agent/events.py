"""What a voice agent reports, in true arrival order; times are seconds from ``agent_start``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentEvent:
    t: float
    """Seconds since ``agent_start``."""

    @property
    def type(self) -> str:
        return _TYPES[type(self)]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("audio", None)
        return {"type": self.type, **data}


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentStart(AgentEvent):
    mode: str
    prompt: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta(AgentEvent):
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkSent(AgentEvent):
    text: str
    index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioChunkEvent(AgentEvent):
    audio: bytes = field(repr=False)
    size: int
    request_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class WordTimestampsEvent(AgentEvent):
    text: str
    words: list[dict[str, Any]]
    offset_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentDone(AgentEvent):
    mode: str
    timings: dict[str, float | None]
    """``ttft_s`` (first text), ``llm_done_s``, ``first_chunk_s``, ``ttfa_s`` (first audio),
    ``audio_s`` (audio seconds), ``total_s``."""
    audio_bytes: int
    interrupted: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentError(AgentEvent):
    code: str
    message: str
    retryable: bool


_TYPES: dict[type, str] = {
    AgentStart: "agent_start",
    TextDelta: "text_delta",
    ChunkSent: "chunk_sent",
    AudioChunkEvent: "audio_chunk",
    WordTimestampsEvent: "word_timestamps",
    AgentDone: "agent_done",
    AgentError: "error",
}
