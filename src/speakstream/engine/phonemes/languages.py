"""Kokoro's nine languages: which G2P speaks each, and how a request names one.

A voice's language is its first letter (``ef_dora`` is Spanish). A request may name another
(``"language": "es"``), so an English voice can read Spanish; inside the engine that choice rides
on the voice spec as ``af_heart@es``. A blend speaks the language of its heaviest voice (the first
listed, on a tie).
"""

from __future__ import annotations

from dataclasses import dataclass

from speakstream.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class Language:
    letter: str
    """Kokoro's code, the first letter of its voices' names."""
    tag: str
    """BCP-47 tag, e.g. ``en-us``."""
    name: str
    g2p: str
    """``english`` (misaki), ``espeak`` (espeak-ng), ``chinese`` or ``japanese`` (misaki)."""
    espeak_voice: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def british(self) -> bool:
        return self.tag == "en-gb"


_ALL = (
    Language("a", "en-us", "American English", "english", aliases=("en", "english", "american english")),
    Language("b", "en-gb", "British English", "english", aliases=("british english",)),
    Language("e", "es", "Spanish", "espeak", "es", ("es-es", "es-mx", "spanish", "español")),
    Language("f", "fr-fr", "French", "espeak", "fr-fr", ("fr", "french", "français")),
    Language("h", "hi", "Hindi", "espeak", "hi", ("hi-in", "hindi")),
    Language("i", "it", "Italian", "espeak", "it", ("it-it", "italian", "italiano")),
    Language("j", "ja", "Japanese", "japanese", aliases=("ja-jp", "jp", "japanese")),
    Language("p", "pt-br", "Brazilian Portuguese", "espeak", "pt-br", ("pt", "portuguese", "português")),
    Language("z", "zh", "Mandarin Chinese", "chinese", aliases=("cmn", "zh-cn", "chinese", "mandarin")),
)
BY_LETTER = {language.letter: language for language in _ALL}
_BY_NAME = {name: language for language in _ALL for name in (language.tag, *language.aliases)}
MAX_LANGUAGE_CHARS = 24


def all_languages() -> tuple[Language, ...]:
    return _ALL


def of_voice(name: str) -> Language:
    """The language a voice was trained on (American English for a name without a known prefix)."""
    return BY_LETTER.get(name[:1], BY_LETTER["a"])


def parse_language(value: object) -> Language:
    """A request's ``language``: a tag (``es``, ``pt-br``), Kokoro's letter or an English name."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_LANGUAGE_CHARS:
        raise InvalidInput("language must be a short string such as 'es' or 'pt-br'", code="unsupported_language")
    key = value.strip().lower().replace("_", "-")
    language = _BY_NAME.get(key) or (BY_LETTER.get(key) if len(key) == 1 else None)
    if language is None:
        tags = ", ".join(language.tag for language in _ALL)
        raise InvalidInput(f"unsupported language {value[:24]!r}; one of {tags}", code="unsupported_language")
    return language
