"""How long a text takes to speak at the least, known before any work: a text that would take
longer than a server's audio limit is refused up front instead of failing after minutes of work.

A lower bound, so that a text that might fit is never refused: every letter or digit at least
``SECONDS_PER_CHARACTER`` (Kokoro's voices take 69-115 ms per letter on the bundled replies), and
a long digit run, read digit by digit, at least ``SECONDS_PER_DIGIT`` a digit (246-430 ms).
"""

from __future__ import annotations

import re

LONG_DIGITS = 16
"""Digit runs this long or longer are codes (card, account, order numbers) and are read digit by
digit: as a number they would be read in illions, and past 303 digits the English G2P fails."""

SECONDS_PER_CHARACTER = 0.05
SECONDS_PER_DIGIT = 0.2

_CHARACTERS = re.compile(r"\w")
_LONG_DIGITS = re.compile(rf"\d{{{LONG_DIGITS},}}")


def least_seconds(text: str) -> float:
    """Seconds ``text`` takes to speak at speed 1, at the least (linear in its length)."""
    long_digits = sum(len(run) for run in _LONG_DIGITS.findall(text))
    others = len(_CHARACTERS.findall(text)) - long_digits
    return others * SECONDS_PER_CHARACTER + long_digits * SECONDS_PER_DIGIT
