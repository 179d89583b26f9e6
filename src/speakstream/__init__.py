"""speakstream: low-latency streaming speech (Kokoro-82M) for AI voice agents.

The public API; everything else is private to its module. Names load on first use (PEP 562), so
that the command line starts without importing the server, the client and the agent it may not run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from speakstream.agent.sources import LlamaCppServer, OpenAISource, ReplaySource, TextSource
    from speakstream.agent.voice_agent import VoiceAgent
    from speakstream.audio import FORMATS, open_encoder
    from speakstream.channel import SpeechResult
    from speakstream.client import SpeechSession, fetch_audio, stream_audio, stream_events
    from speakstream.config import ServerConfig
    from speakstream.engine.base import Engine
    from speakstream.engine.cancel import CancelToken
    from speakstream.engine.config import EngineConfig
    from speakstream.engine.fake import FakeEngine
    from speakstream.engine.kokoro import KokoroEngine
    from speakstream.errors import (
        AssetError,
        EngineError,
        InvalidInput,
        Overloaded,
        ProtocolError,
        SourceError,
        SpeakstreamError,
        Unauthorized,
        UnknownVoice,
    )
    from speakstream.protocol import SSEReader, classify_frame
    from speakstream.server.app import create_app
    from speakstream.text import (
        ChunkPolicy,
        IncrementalSentenceChunker,
        SpeakableFilter,
        SpeakableOptions,
        achunks,
        chunk_text,
        speakable,
        split_sentences,
    )
    from speakstream.types import AudioChunk, Span, WordTimestamp

__version__ = "0.2.0"

_HOMES = {
    "LlamaCppServer": "speakstream.agent.sources",
    "OpenAISource": "speakstream.agent.sources",
    "ReplaySource": "speakstream.agent.sources",
    "TextSource": "speakstream.agent.sources",
    "VoiceAgent": "speakstream.agent.voice_agent",
    "FORMATS": "speakstream.audio",
    "open_encoder": "speakstream.audio",
    "SpeechResult": "speakstream.channel",
    "SpeechSession": "speakstream.client",
    "fetch_audio": "speakstream.client",
    "stream_audio": "speakstream.client",
    "stream_events": "speakstream.client",
    "ServerConfig": "speakstream.config",
    "Engine": "speakstream.engine.base",
    "CancelToken": "speakstream.engine.cancel",
    "EngineConfig": "speakstream.engine.config",
    "FakeEngine": "speakstream.engine.fake",
    "KokoroEngine": "speakstream.engine.kokoro",
    "AssetError": "speakstream.errors",
    "EngineError": "speakstream.errors",
    "InvalidInput": "speakstream.errors",
    "Overloaded": "speakstream.errors",
    "ProtocolError": "speakstream.errors",
    "SourceError": "speakstream.errors",
    "SpeakstreamError": "speakstream.errors",
    "Unauthorized": "speakstream.errors",
    "UnknownVoice": "speakstream.errors",
    "SSEReader": "speakstream.protocol",
    "classify_frame": "speakstream.protocol",
    "create_app": "speakstream.server.app",
    "ChunkPolicy": "speakstream.text",
    "IncrementalSentenceChunker": "speakstream.text",
    "SpeakableFilter": "speakstream.text",
    "SpeakableOptions": "speakstream.text",
    "achunks": "speakstream.text",
    "chunk_text": "speakstream.text",
    "speakable": "speakstream.text",
    "split_sentences": "speakstream.text",
    "AudioChunk": "speakstream.types",
    "Span": "speakstream.types",
    "WordTimestamp": "speakstream.types",
}
"""Where each public name is defined."""


__all__ = [
    "FORMATS",
    "AssetError",
    "AudioChunk",
    "CancelToken",
    "ChunkPolicy",
    "Engine",
    "EngineConfig",
    "EngineError",
    "FakeEngine",
    "IncrementalSentenceChunker",
    "InvalidInput",
    "KokoroEngine",
    "LlamaCppServer",
    "OpenAISource",
    "Overloaded",
    "ProtocolError",
    "ReplaySource",
    "SSEReader",
    "ServerConfig",
    "SourceError",
    "Span",
    "SpeakableFilter",
    "SpeakableOptions",
    "SpeakstreamError",
    "SpeechResult",
    "SpeechSession",
    "TextSource",
    "Unauthorized",
    "UnknownVoice",
    "VoiceAgent",
    "WordTimestamp",
    "__version__",
    "achunks",
    "chunk_text",
    "classify_frame",
    "create_app",
    "fetch_audio",
    "open_encoder",
    "speakable",
    "split_sentences",
    "stream_audio",
    "stream_events",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'speakstream' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
