"""Spanish, French, Hindi, Italian and Brazilian Portuguese with espeak-ng, as Kokoro's pipeline
does (misaki's ``EspeakG2P``: espeak-ng's phonemes mapped to Kokoro's symbols).

A sentence is phonemised whole, so words keep their context (French liaison, elision); when
espeak's words do not line up one to one with the text's (a number read as several words), each
word is phonemised alone, so every word still gets its own time.
"""

from __future__ import annotations

import logging
import re

from speakstream.engine.phonemes.g2p.tokens import Token, split_marks

_HINDI_STOPS = str.maketrans({"।": ".", "॥": "."})
_WORD = re.compile(r"\S+")


class EspeakWords:
    def __init__(self, voice: str) -> None:
        from misaki.espeak import EspeakG2P

        self._g2p = EspeakG2P(language=voice)
        # phonemizer warns whenever espeak's word count differs from the text's: expected, handled
        self._g2p.backend.logger.setLevel(logging.ERROR)
        self._voice = voice

    def __call__(self, text: str) -> list[Token]:
        if self._voice == "hi":
            text = text.translate(_HINDI_STOPS)  # espeak drops the danda; a stop keeps the pause
        words = _WORD.findall(text)
        spoken = self._phonemes(text).split()
        if len(spoken) != len(words):
            spoken = [self._phonemes(word) for word in words]
        tokens: list[Token] = []
        for word, phonemes in zip(words, spoken, strict=True):
            tokens += split_marks(word, phonemes)
        return tokens

    def _phonemes(self, text: str) -> str:
        phonemes, _ = self._g2p(text)
        return str(phonemes)
