"""Inline phonemes, ``[word](/phonemes/)``, in every language: IPA or Kokoro's own symbols.

The phonemes are mapped to Kokoro's symbols (English diphthongs and affricates have one symbol
each there: ``eɪ`` is ``A``, ``dʒ`` is ``ʤ``) and must then be in the model's vocabulary; the
word in brackets is what word timestamps show.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from speakstream.engine.phonemes.languages import Language
from speakstream.errors import InvalidInput
from speakstream.text.lexicon import INLINE

_TIES = str.maketrans({"\u0361": None, "\u035c": None, "^": None, "'": "ˈ", ",": "ˌ", "g": "ɡ", "ɫ": "l"})
_EVERY = (("dʒ", "ʤ"), ("tʃ", "ʧ"))
_OTHER = (("ts", "ʦ"), ("dz", "ʣ"))  # espeak's affricates, one symbol each as misaki maps them
_ENGLISH = (("eɪ", "A"), ("aɪ", "I"), ("aʊ", "W"), ("ɔɪ", "Y"), ("ɝ", "ɜɹ"), ("ɚ", "əɹ"), ("r", "ɹ"))
_AMERICAN = (("oʊ", "O"), ("əʊ", "O"), ("ː", ""))
_BRITISH = (("əʊ", "Q"), ("oʊ", "Q"))
_VOWELS = "aeiouyæɐɑɒɔəɚɛɜɝɤɨɪɯʉʊʌøœɶAIOQWYᵊᵻ"
_ONSET_STRESS = re.compile(f"([ˈˌ])([^{_VOWELS}ˈˌ ]+)(?=[{_VOWELS}])")
"""IPA marks stress before a syllable's onset, Kokoro's symbols before its vowel (``bəˈnænə`` is
``bənˈænə`` there): the model was trained on the second."""


@dataclass(frozen=True, slots=True)
class TextRun:
    """A piece of text: plain (``phonemes`` None) or a word with the phonemes that say it."""

    text: str
    phonemes: str | None = None
    space_after: bool = False


def text_runs(text: str) -> Iterator[TextRun]:
    """``text`` as plain pieces and inline-phoneme words, in order."""
    at = 0
    for m in INLINE.finditer(text):
        if m.start() > at:
            yield TextRun(text[at : m.start()])
        yield TextRun(m.group(1), m.group(2), text[m.end() : m.end() + 1].isspace())
        at = m.end()
    if at < len(text):
        yield TextRun(text[at:])


def has_inline(text: str) -> bool:
    return "](/" in text and INLINE.search(text) is not None


def to_kokoro(phonemes: str, language: Language, vocab: dict[str, int]) -> str:
    """IPA (or Kokoro's symbols) as Kokoro's symbols for ``language``; ``InvalidInput``
    (``invalid_phonemes``) naming a symbol the model does not have."""
    mapped = phonemes.strip().translate(_UNCARRY).translate(_TIES)
    if language.g2p == "english":
        rules = _EVERY + _ENGLISH + (_BRITISH if language.british else _AMERICAN)
    else:
        rules = _EVERY + _OTHER
    for ipa, symbol in rules:
        mapped = mapped.replace(ipa, symbol)
    mapped = _ONSET_STRESS.sub(r"\2\1", mapped)
    unknown = sorted({c for c in mapped if c not in vocab})
    if unknown or not mapped.strip():
        raise InvalidInput(
            f"phonemes /{phonemes[:60]}/ have symbols Kokoro does not speak: {' '.join(unknown) or '(none given)'}",
            code="invalid_phonemes",
        )
    return mapped


_MARKS = '.,;:!?…—"“”()¡¿'
_PHONEME_WORD = re.compile(f"([{_MARKS}]*)([^\\s{_MARKS}](?:\\S*[^\\s{_MARKS}])?)([{_MARKS}]*)")
"""A whitespace-separated token: marks before, the word (marks inside it kept), marks after."""
_CARRIED = ".,;:!?"
_CARRY = str.maketrans({mark: chr(0xE000 + i) for i, mark in enumerate(_CARRIED)})
_UNCARRY = str.maketrans({chr(0xE000 + i): mark for i, mark in enumerate(_CARRIED)})
"""A mark inside a word's phonemes (espeak writes a syllable break in Hindi's ``ʊr.ˈaːn`` as a
dot) cannot be written inline, where a dot makes ``[x](/a.b/)`` a link: ``as_inline`` carries it
as a private-use character that ``to_kokoro`` reads back, so the word is spoken as given."""
MAX_PHONEMES_CHARS = 5_000


def as_inline(phonemes: str) -> str:
    """Phonemes given whole (``"həlˈO, wˈɜɹld!"``, IPA or Kokoro's symbols) as text of inline
    words (``"[həlˈO](/həlˈO/), [wˈɜɹld](/wˈɜɹld/)!"``), so they are chunked, spoken and timed
    as any text is; each word shows as its phonemes."""
    if not isinstance(phonemes, str) or not phonemes.strip():
        raise InvalidInput("phonemes must be a non-empty string", code="invalid_phonemes")
    if len(phonemes) > MAX_PHONEMES_CHARS:
        raise InvalidInput(f"phonemes are at most {MAX_PHONEMES_CHARS} characters", code="invalid_phonemes")
    words = []
    for token in phonemes.split():
        match = _PHONEME_WORD.fullmatch(token)
        if match is None:  # punctuation alone
            words.append(token)
            continue
        lead, word, trail = match.groups()
        if len(word) > 100 or any(c in word for c in "[]/()"):
            raise InvalidInput(f"cannot read phonemes {word[:40]!r} as a word", code="invalid_phonemes")
        words.append(f"{lead}[{word}](/{word.translate(_CARRY)}/){trail}")
    return " ".join(words)
