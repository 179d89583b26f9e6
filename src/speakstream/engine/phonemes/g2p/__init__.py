"""Grapheme-to-phoneme per language, as Kokoro's own pipeline does it, each loaded on first use.

Every G2P turns text into ``Token``s (a word or mark, its phonemes, whether a space follows), so
the model's per-token durations become word timestamps in every language.
"""

from __future__ import annotations

from collections.abc import Callable

from speakstream.engine.phonemes.g2p.tokens import Token
from speakstream.engine.phonemes.languages import Language
from speakstream.errors import EngineError

G2P = Callable[[str], list[Token]]


def load(language: Language, english: G2P) -> G2P:
    """A new G2P for ``language`` (imports its libraries only now); ``english`` reads the Latin
    words inside Chinese text."""
    if language.g2p == "english":
        from speakstream.engine.phonemes.g2p.english import english as load_english

        return load_english(british=language.british)
    if language.g2p == "espeak":
        from speakstream.engine.phonemes.g2p.espeak import EspeakWords

        return EspeakWords(language.espeak_voice)
    try:
        if language.g2p == "chinese":
            from speakstream.engine.phonemes.g2p.chinese import ChineseWords

            return ChineseWords(english)
        from speakstream.engine.phonemes.g2p.japanese import JapaneseWords

        return JapaneseWords()
    except ImportError as exc:
        extra = "zh" if language.g2p == "chinese" else "ja"
        raise EngineError(
            f"{language.name} needs its G2P: pip install 'speakstream[{extra}]' ({exc.name} is missing)",
            code="language_unavailable",
            retryable=False,
        ) from exc


__all__ = ["G2P", "Token", "load"]
