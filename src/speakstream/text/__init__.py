"""Text stage: speakable-text filter and sentence chunker (no engine, no asyncio needed)."""

from speakstream.text.chunker import ChunkPolicy, IncrementalSentenceChunker, achunks, chunk_text
from speakstream.text.segment import split_sentences
from speakstream.text.speakable import SpeakableFilter, SpeakableOptions, aspeakable, speakable

__all__ = [
    "ChunkPolicy",
    "IncrementalSentenceChunker",
    "SpeakableFilter",
    "SpeakableOptions",
    "achunks",
    "aspeakable",
    "chunk_text",
    "speakable",
    "split_sentences",
]
