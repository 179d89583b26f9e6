"""Work never done twice: a bounded cache of the audio of whole chunks, least recently used first
out, answered with no engine time.

Voice agents say the same phrases again and again (greetings, "one moment please"). A chunk is
cached under the engine's key for everything that changes its sound (``Engine.sound_key``: the
text after normalisation, the voice, the speed, the language, the model and its settings), once
it was made whole; a repeat is answered from here as one piece, word timestamps included.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from speakstream.types import AudioPiece, SynthesisTimings

LARGEST_SHARE = 8
"""No chunk larger than this share of the cache is kept (one long text would empty it)."""


@dataclass(frozen=True, slots=True)
class CacheStats:
    hits: int
    misses: int
    entries: int
    bytes: int
    max_bytes: int


class AudioCache:
    """Chunks' audio by sound key, at most ``max_bytes`` of samples; thread-safe."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, AudioPiece] = OrderedDict()
        self._bytes = 0
        self._hits = self._misses = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> AudioPiece | None:
        """The chunk made for ``key``, as one piece with no engine time, or None (a miss)."""
        with self._lock:
            piece = self._entries.get(key)
            if piece is None:
                self._misses += 1
                return None
            self._entries.move_to_end(key)
            self._hits += 1
            return piece

    def put(self, key: Hashable, pieces: Sequence[AudioPiece]) -> bool:
        """Keep a whole chunk's ``pieces`` (in order, the last one ``last``); False when it is too
        large to keep."""
        if not pieces or not pieces[-1].last:
            return False
        samples = np.concatenate([p.samples for p in pieces]).astype(np.float32, copy=False)
        if samples.nbytes * LARGEST_SHARE > self.max_bytes:
            return False
        first = pieces[0]
        whole = AudioPiece(
            samples, 0, 0.0, len(samples) / first.sample_rate, first.words, True, SynthesisTimings(), first.sample_rate
        )
        with self._lock:
            old = self._entries.pop(key, None)
            self._bytes -= 0 if old is None else old.samples.nbytes
            self._entries[key] = whole
            self._bytes += samples.nbytes
            while self._bytes > self.max_bytes and self._entries:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.samples.nbytes
        return True

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses, len(self._entries), self._bytes, self.max_bytes)
