"""Japanese with misaki's cutlet G2P, which Kokoro-82M v1.0's pipeline uses (fugashi with the
bundled ``unidic-lite`` dictionary, kana to Kokoro's phonemes), word by word for timestamps.

misaki's ``ja`` module imports pyopenjtalk (which downloads a dictionary at first use) even for
cutlet; this module imports ``misaki.cutlet`` alone, so nothing is fetched at run time.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

from speakstream.engine.phonemes.g2p.tokens import PUNCTUATION, Token, split_marks

_OPEN_QUOTES = '"«“'


def _tokenizer() -> Any:
    import jaconv

    with warnings.catch_warnings():  # misaki reads its word list with a deprecated importlib call
        warnings.simplefilter("ignore", DeprecationWarning)
        from misaki.cutlet import Cutlet, Word

    class WordCutlet(Cutlet):  # type: ignore[misc]
        """misaki's cutlet, keeping which text each romanised token came from."""

        def tokens(self, text: str) -> list[tuple[str, str, bool]]:
            self._surfaces: list[str] = []
            words = [
                Word(
                    w.surface,
                    jaconv.kata2hira(w.feature.pron or w.feature.kana or w.surface),
                    6 if w.char_type == 7 or not w.is_unk else w.char_type,
                )
                for w in self.tagger(self._normalize_text(text))
            ]
            spoken = self._romaji_tokens(words)
            return [(s, t.surface, t.space) for s, t in zip(self._surfaces, spoken, strict=True)]

        def _romaji_word(self, word: Any) -> str:
            self._surfaces.append(word.surface)
            return str(super()._romaji_word(word))

    return WordCutlet()


class JapaneseWords:
    def __init__(self) -> None:
        self._cutlet = _tokenizer()

    def __call__(self, text: str) -> list[Token]:
        tokens: list[Token] = []
        for surface, roma, space in self._cutlet.tokens(text):
            phonemes = roma.strip().replace("(", "«").replace(")", "»")
            if not phonemes:
                continue
            pieces = split_marks(surface, phonemes) if surface.strip() else []
            if pieces:
                pieces[-1].whitespace = space
                tokens += pieces
        _join_glottal_stops(tokens)
        return tokens


def _join_glottal_stops(tokens: list[Token]) -> None:
    """No space around a sokuon that crosses a word boundary (``moʔ te`` is ``moʔte``), as cutlet
    joins its string."""
    for before, after in itertools.pairwise(tokens):
        if after.phonemes.startswith("ʔ") and before.phonemes[-1:] not in PUNCTUATION | {"»"}:
            before.whitespace = False
        if before.phonemes.endswith("ʔ") and after.phonemes[:1] not in _OPEN_QUOTES:
            before.whitespace = False
