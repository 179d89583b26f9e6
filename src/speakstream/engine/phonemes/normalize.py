"""Text normalisation before G2P: the forms misaki reads badly, rewritten as a person says them.

misaki already reads numbers, currency, percentages and common abbreviations well (measured in
tests/engine/phonemes/test_normalize.py); this handles clock times, versions, dates, phone numbers, web
addresses, e-mail addresses, temperatures and a few ambiguous abbreviations.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from speakstream.engine.phonemes.languages import Language
from speakstream.engine.phonemes.normalize_other import normalize_other
from speakstream.text.length import LONG_DIGITS
from speakstream.text.say_as import telephone

_MONTHS = "January February March April May June July August September October November December".split()
_DOMAIN_WORDS = r"(?:com|org|net|io|ai|dev|app|co|uk|de|fr|eu|edu|gov|info|biz|us|ca|html?|php)"


def _time(m: re.Match[str]) -> str:
    hour, minute, suffix = int(m.group(1)), int(m.group(2)), m.group(3) or ""
    if minute == 0:
        return f"{hour}{suffix}" if suffix else f"{hour} o'clock"
    return (f"{hour} oh {minute}" if minute < 10 else f"{hour} {minute}") + suffix


def _version(m: re.Match[str]) -> str:
    spoken = " point ".join(m.group(2).split("."))
    prefix = m.group(1) or ""
    return f"version {spoken}" if prefix.lower() == "v" else prefix + spoken


def _date(m: re.Match[str]) -> str:
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return m.group(0)
    return f"{_MONTHS[month - 1]} {day}, {year}"


def _digits(m: re.Match[str]) -> str:
    return telephone(m.group(0))


def _address(m: re.Match[str]) -> str:
    text = m.group(0)
    text = re.sub(r"^https?://", "", text)
    text = text.replace("@", " at ").replace("/", " slash ")
    text = re.sub(r"\.(?=\w)", " dot ", text)
    return re.sub(r"\bwww\b", "w w w", text)


def _street(m: re.Match[str]) -> str:
    return f"{m.group(1)} Street" + (m.group(2) or ".")


_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (re.compile(rf"\d{{{LONG_DIGITS},}}"), lambda m: " ".join(m.group())),  # a code, digit by digit
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), _date),
    (re.compile(r"(?<![\d:])(\d{1,2}):([0-5]\d)(?![\d:])(\s*[ap]\.?m\.?)?", re.IGNORECASE), _time),
    (re.compile(r"(?<![\w.])(v|version\s)?(\d+(?:\.\d+){2,})(?![\w.])", re.IGNORECASE), _version),
    (re.compile(r"(?<![\w.])v(\d+\.\d+)\b"), lambda m: f"version {m.group(1)}"),
    (re.compile(r"(?<!\w)\+?(?:\(\d{3}\)\s?|\d{3}[-.\s])\d{3}[-.\s]\d{4}\b|(?<![\w-])\d{3}-\d{4}\b"), _digits),
    # Addresses start only where a run of their characters starts ((?<!...)), and the local part
    # never gives back what it took (++): a long run costs its length once, not its square.
    (re.compile(r"(?<![\w.+-])[\w.+-]++@[\w-]+(?:\.[\w-]+)+\b"), _address),
    (
        re.compile(
            rf"(?<![\w.-])(?:https?://)?(?:www\.)?(?:[\w-]+\.)+{_DOMAIN_WORDS}\b(?:/[\w./-]*\w)?", re.IGNORECASE
        ),
        _address,
    ),
    (re.compile(r"°\s?C\b"), " degrees Celsius"),
    (re.compile(r"°\s?F\b"), " degrees Fahrenheit"),
    (re.compile(r"°"), " degrees"),
    (re.compile(r"#(?=\d)"), "number "),
    (re.compile(r"\be\.g\.(?=\s|,|$)", re.IGNORECASE), "for example"),
    (re.compile(r"\bi\.e\.(?=\s|,|$)", re.IGNORECASE), "that is"),
    (re.compile(r"\b([A-Z][a-z]+) St\.(?=\s|$)(\s+(?=[a-z]))?"), _street),
    (re.compile(r"\bSt\.(?=\s+[A-Z])"), "Saint"),
]


RUN = re.compile(r"(?:(?:[^\w\s]|_)\s*){4,}")
"""Four marks or more (punctuation or symbols) with nothing but spaces between: a G2P reads a long
one as minutes of invented speech. The classes are disjoint, so matching is linear in the run."""
SENTENCE_END = ".!?…。！？"
CLAUSE = ",;:—–-、，；："


def quiet_runs(text: str) -> str:
    """Every run of four marks or more as the pause it means: its first sentence end (``...!!`` ->
    ``.``), else its first clause mark (``-----`` -> ``-``... as a comma's pause), else nothing."""
    return RUN.sub(_pause, text)


def _pause(m: re.Match[str]) -> str:
    run = m.group()
    mark = next((c for c in run if c in SENTENCE_END), None) or next((c for c in run if c in CLAUSE), None)
    if mark is None:
        return " "
    return ("," if mark in "—–-" else mark) + " "


def normalize(text: str, language: Language | None = None) -> str:
    """Rewrite the forms the language's G2P reads badly; everything else is left as it is."""
    text = quiet_runs(text)
    if language is not None and language.g2p != "english":
        return normalize_other(text, language)
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
