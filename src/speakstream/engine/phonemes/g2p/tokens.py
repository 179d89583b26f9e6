"""What every G2P returns: words and marks with their phonemes."""

from __future__ import annotations

from dataclasses import dataclass

PUNCTUATION = frozenset('!"(),.:;?—“”…¿¡«»')
"""Marks Kokoro's vocabulary has: kept as tokens of their own, so prosody follows them."""
_MARKS = "".join(sorted(PUNCTUATION))


@dataclass(slots=True)
class Token:
    text: str
    phonemes: str
    whitespace: bool = True
    """Whether a space follows (between words in the phoneme string)."""


def split_marks(text: str, phonemes: str) -> list[Token]:
    """A word and its phonemes as tokens: leading marks, the word, trailing marks (each mark its
    own token, so a word's time ends where its sound does)."""
    lead = len(phonemes) - len(phonemes.lstrip(_MARKS))
    tail = len(phonemes.rstrip(_MARKS))
    tokens = [Token(mark, mark, False) for mark in phonemes[:lead]]
    if tail > lead:
        tokens.append(Token(text.strip(_MARKS + "'’-"), phonemes[lead:tail], False))
    tokens += [Token(mark, mark, False) for mark in phonemes[max(tail, lead) :]]
    if tokens:
        tokens[-1].whitespace = True
    return tokens
