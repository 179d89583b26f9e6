"""Text -> Kokoro's phoneme tokens in the language asked for (the G2P of each is in ``g2p``).

The result keeps, for every word, which phoneme tokens speak it, so the model's per-token
durations become word timestamps. Inputs longer than the model's 510-token window are split at
sentence punctuation, else clause punctuation, else a word boundary; never truncated.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from speakstream.data import read_text
from speakstream.engine.phonemes import g2p, inline
from speakstream.engine.phonemes.g2p import G2P, Token
from speakstream.engine.phonemes.languages import BY_LETTER, Language
from speakstream.engine.phonemes.scripts import check_script

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
        """Tokens ``start``..``end`` and the words that start there; a word longer than the window
        (a number of dozens of digits read out) ends with it, its rest in the next window."""
        words = tuple(
            Word(w.text, w.first - start, min(w.end, end) - start) for w in self.words if start <= w.first < end
        )
        return Phonemized(self.phonemes[start:end], self.tokens[start:end], words)


class Phonemizer:
    """Thread-safe text -> ``Phonemized`` in any of Kokoro's languages; loads each G2P once, on
    first use (an English-only server never imports the others)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._g2p: dict[str, G2P] = {}
        self._vocab = vocab()

    def load(self, language: Language | None = None) -> None:
        with self._lock:
            self._for(language or BY_LETTER["a"])

    def loaded(self) -> list[str]:
        """Tags of the languages whose G2P is in memory."""
        return sorted(self._g2p)

    def _for(self, language: Language) -> G2P:
        if language.tag not in self._g2p:
            self._g2p[language.tag] = g2p.load(language, english=lambda text: self._for(BY_LETTER["a"])(text))
        return self._g2p[language.tag]

    def phonemize(
        self, text: str, language: Language | None = None, prepare: Callable[[str], str] | None = None
    ) -> Phonemized:
        """``text``'s phonemes; ``prepare`` (normalisation) rewrites its plain text, never the
        words given inline phonemes (``[word](/phonemes/)``)."""
        language = language or BY_LETTER["a"]
        prepare = prepare or str
        check_script(text, language)
        if not inline.has_inline(text):
            with self._lock:
                return self._assemble(self._for(language)(prepare(text)))
        pieces = list(inline.text_runs(text))
        given = [None if p.phonemes is None else inline.to_kokoro(p.phonemes, language, self._vocab) for p in pieces]
        with self._lock:
            g2p = self._for(language)
            if language.g2p == "english" and any(p.phonemes is None and _has_word(p.text) for p in pieces):
                # misaki reads the inline form itself, so plain words around it are read in context
                marked = [
                    prepare(p.text) if s is None else f"[{p.text}](/{s}/)" for p, s in zip(pieces, given, strict=True)
                ]
                return self._assemble(g2p("".join(marked)))
            tokens: list[Token] = []
            for piece, spoken in zip(pieces, given, strict=True):
                if spoken is not None:
                    tokens.append(Token(piece.text, spoken, piece.space_after))
                elif piece.text.strip():
                    tokens += _spaced(g2p(prepare(piece.text)), piece.text)
        return self._assemble(tokens)

    def _assemble(self, tokens: list[Token]) -> Phonemized:
        chars: list[str] = []
        words: list[Word] = []
        for token in tokens:
            spoken = "".join(c for c in token.phonemes if c in self._vocab)
            if spoken and _has_word(token.text):
                words.append(Word(token.text, len(chars), len(chars) + len(spoken)))
            chars.extend(spoken)
            if token.whitespace and chars and chars[-1] != " ":
                chars.append(" ")
        while chars and chars[-1] == " ":
            chars.pop()
        phonemes = "".join(chars)
        return Phonemized(phonemes, tuple(self._vocab[c] for c in phonemes), tuple(words))


def _has_word(text: str) -> bool:
    return any(c.isalnum() for c in text)


def _spaced(tokens: list[Token], text: str) -> list[Token]:
    """A plain piece's tokens keeping the space that ends it: a G2P reads ``", "`` between two
    inline words as a comma alone (Chinese wrote ``ˈdai↘,wo↓``), and given phonemes must be
    spoken as given."""
    if tokens and text[-1].isspace():
        tokens[-1].whitespace = True
    return tokens


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
