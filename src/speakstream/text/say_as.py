"""SSML ``<say-as>``: a span rewritten as it should be read (letters, digits, an ordinal, a date),
in a form the language's own normaliser and G2P then read (they read plain numbers well)."""

from __future__ import annotations

import re

from num2words import num2words

_DATE_ORDER = {"ymd": "ymd", "mdy": "mdy", "dmy": "dmy", "ydm": "ydm"}
_NUM2WORDS = {"es": "es", "fr-fr": "fr", "fr": "fr", "it": "it", "pt-br": "pt_BR", "pt": "pt_BR", "ja": "ja"}


def say_as(kind: str, text: str, fmt: str, language: str) -> str:
    """``text`` read as ``kind`` (``interpret-as``) in ``language`` (a tag); an unknown kind, or a
    text that is not of the kind, is read as it is."""
    text = text.strip()
    english = language.lower().startswith("en")
    if kind in ("characters", "spell-out", "verbatim", "letters"):
        return _letters(text, english)
    if kind == "digits":
        return " ".join(c for c in text if c.isdigit()) or text
    if kind == "ordinal" and text.isdigit():
        return _ordinal(int(text), english, language)
    if kind == "telephone":
        return telephone(text)
    if kind == "date":
        return _date(text, fmt, english)
    if kind in ("cardinal", "number"):
        return text.replace(",", "") if re.fullmatch(r"\d{1,3}(,\d{3})+", text) else text
    return text


def _letters(text: str, english: bool) -> str:
    """One letter at a time, as a person spells: English reads a capital followed by a dot by its
    name ("C. A. T": a lone "A" would be the article), the espeak languages read single letters
    by their names."""
    characters = [c for c in text if not c.isspace()]
    if not english:
        return " ".join(characters)
    return ". ".join(c.upper() for c in characters)


def _ordinal(number: int, english: bool, language: str) -> str:
    if english:
        suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
        return f"{number}{suffix}"
    code = _NUM2WORDS.get(language.lower())
    return str(num2words(number, lang=code, to="ordinal")) if code else str(number)


def telephone(text: str) -> str:
    """A phone number read digit by digit, its groups apart ("+1 555-0123": "plus 1, 5 5 5, 0 1 2 3")."""
    groups = re.findall(r"\d+", text)
    spoken = ", ".join(" ".join(group) for group in groups)
    return ("plus " if text.startswith("+") else "") + spoken if groups else text


def _date(text: str, fmt: str, english: bool) -> str:
    """A numeric date as ISO ``yyyy-mm-dd``, which every language's normaliser reads as a date."""
    parts = re.findall(r"\d+", text)
    order = _DATE_ORDER.get(fmt.lower()) or ("ymd" if parts and len(parts[0]) == 4 else "mdy" if english else "dmy")
    if len(parts) != 3:
        return text
    values = dict(zip(order, (int(p) for p in parts), strict=True))
    year, month, day = values["y"], values["m"], values["d"]
    if year < 100:
        year += 2000
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return text
    return f"{year:04d}-{month:02d}-{day:02d}"
