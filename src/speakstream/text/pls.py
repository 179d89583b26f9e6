"""W3C Pronunciation Lexicon Specification files (what ElevenLabs' ``add-from-file`` takes) as
rules, and rules as a PLS file: ``<lexeme>`` with ``<grapheme>``s and an ``<alias>`` or a
``<phoneme>`` in the lexicon's alphabet (``ipa``; ``x-cmu-arpabet`` or ``cmu-arpabet``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from xml.sax.saxutils import escape

from speakstream.errors import InvalidInput
from speakstream.text.lexicon import Rule

MAX_BYTES = 1 << 20
_NS = "{http://www.w3.org/2005/01/pronunciation-lexicon}"
_ALPHABETS = {"ipa": "ipa", "x-cmu-arpabet": "cmu-arpabet", "cmu-arpabet": "cmu-arpabet", "arpabet": "cmu-arpabet"}


def parse(data: bytes) -> list[Rule]:
    """The rules of a PLS document; ``InvalidInput`` (``invalid_pls``) says what is wrong."""
    if len(data) > MAX_BYTES:
        raise InvalidInput(f"a PLS file is at most {MAX_BYTES >> 10} KB", code="invalid_pls")
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise InvalidInput("a PLS file may not declare a DOCTYPE or entities", code="invalid_pls")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise InvalidInput(f"the PLS file is not well-formed XML: {exc}", code="invalid_pls") from exc
    if _local(root.tag) != "lexicon":
        raise InvalidInput("a PLS file's root element is <lexicon>", code="invalid_pls")
    alphabet = _ALPHABETS.get((root.get("alphabet") or "ipa").lower())
    if alphabet is None:
        raise InvalidInput(f"PLS alphabet {root.get('alphabet')!r} is not ipa or x-cmu-arpabet", code="invalid_pls")
    rules: list[Rule] = []
    for number, lexeme in enumerate(_children(root, "lexeme"), 1):
        try:
            rules += _rules(lexeme, alphabet)
        except ValueError as exc:
            raise InvalidInput(f"lexeme {number}: {exc}", code="invalid_pls") from exc
    return rules


def _rules(lexeme: ET.Element, alphabet: str) -> list[Rule]:
    graphemes = [(g.text or "").strip() for g in _children(lexeme, "grapheme")]
    aliases = [(a.text or "").strip() for a in _children(lexeme, "alias")]
    phonemes = list(_children(lexeme, "phoneme"))
    if not graphemes or not (aliases or phonemes):
        raise ValueError("needs a <grapheme> and an <alias> or a <phoneme>")
    if aliases:
        return [Rule(string=g, alias=aliases[0]) for g in graphemes]
    own = _ALPHABETS.get((phonemes[0].get("alphabet") or alphabet).lower(), alphabet)
    spoken = (phonemes[0].text or "").strip()
    return [Rule(string=g, phoneme=spoken, alphabet=own) for g in graphemes]


def dump(rules: Sequence[Rule], *, language: str = "en-US") -> str:
    """``rules`` as a PLS document (phonemes in IPA; Arpabet rules keep their own alphabet)."""
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<lexicon version="1.0" xmlns="{_NS[1:-1]}" alphabet="ipa" xml:lang="{escape(language)}">',
    ]
    for rule in rules:
        lines.append(f"  <lexeme><grapheme>{escape(rule.string)}</grapheme>{_spoken(rule)}</lexeme>")
    lines.append("</lexicon>")
    return "\n".join(lines) + "\n"


def _spoken(rule: Rule) -> str:
    if rule.alias is not None:
        return f"<alias>{escape(rule.alias)}</alias>"
    own = ' alphabet="x-cmu-arpabet"' if rule.alphabet == "cmu-arpabet" else ""
    return f"<phoneme{own}>{escape(rule.phoneme or '')}</phoneme>"


def _children(element: ET.Element, name: str) -> list[ET.Element]:
    return [child for child in element if _local(child.tag) == name]


def _local(tag: str) -> str:
    return tag.removeprefix(_NS).rpartition("}")[2]
