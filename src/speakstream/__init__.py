"""speakstream: low-latency streaming speech (Kokoro-82M) for AI voice agents.

The public API; everything else is private to its module.
"""

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
