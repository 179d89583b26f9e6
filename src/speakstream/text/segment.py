"""Sentence boundaries: a focused, local rule set that can decide a boundary from a few
characters of lookahead, so a stream and a whole text give the same answer.

A boundary candidate is a run of terminators (``. ! ? …`` and the CJK/other-script marks) with
any closing quotes and brackets after it, or a newline. Whether it ends a sentence depends on the
word before it (abbreviations, titles, list numbers, initials) and the next non-space character
after it (a lowercase letter continues the sentence). When that character has not arrived yet, the
candidate is *undecided*: the streaming chunker waits, the whole-text splitter treats the end of
the text as a boundary.
"""

from __future__ import annotations

import re
from enum import Enum

from speakstream.types import Span

TERMINATORS = ".!?…‼⁇⁈⁉。！？｡؟۔।॥"
_NO_SPACE_TERMINATORS = frozenset("。！？｡")
CLOSERS = "\"'”’»)]}」』）】〕〉》›"
_OPENERS = "\"'“‘([{«「『（"
_CANDIDATE = re.compile(r"[.!?…‼⁇⁈⁉。！？｡؟۔।॥\n]")
_MAX_WORD = 64
_MAX_GAP = 64
"""Blank characters a decision looks across for the next word; a longer gap ends the sentence."""
_MAX_RUN = 16
"""A run of terminators is decided this many at a time: a longer run goes on (CONTINUE), so a
decision never scans a whole run of ``!!!!`` again when a stream brings more of it."""
_TYPOGRAPHIC_SPACES = " \u00a0\u202f"

# Never end a sentence when a word follows: "Dr. Smith", "e.g. Chrome", "vs. them", and the titles
# of the other languages the chunker cuts (es, fr, it, pt, hi: "Sra. García", "Dott. Rossi", "डॉ. शर्मा").
TITLES = frozenset(
    "mr mrs ms mx dr prof sr jr st mt rev hon gen col capt lt sgt maj gov sen rep pres fr "
    "messrs mme mlle e.g i.e eg ie vs cf viz approx "
    "sra srta dra dña ud uds lic ing arq sres sras "
    "sig sigg dott avv geom rag "
    "exmo exma "
    "डॉ".split()
)
# Never end a sentence before a number: "No. 5", "Fig. 3", "pp. 10", "Jan. 5", "ca. 1900", and
# the same in the other languages the chunker cuts (es, fr, it, pt: "pág. 5", "núm. 3", "chap. 2").
NUMBER_ABBREVIATIONS = frozenset(
    "no nos vol vols fig figs p pp ch chap sec art tel ext nr op ca est min max eq eqs pt pts ed eds "
    "apt ste rm rte hwy bldg dept div sq tab tbl ref para cl reg n nº "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "núm pág págs pag pagg cap avda apdo ej aprox sig éd tél env bd fl".split()
)
_STREET_TITLES = frozenset(("st", "mt"))


class Decision(Enum):
    BOUNDARY = 1
    CONTINUE = 2
    UNDECIDED = 3


def split_sentences(text: str) -> list[Span]:
    """Split a whole text into sentences, each a stripped span of ``text``."""
    spans: list[Span] = []
    start = scan = 0
    while True:
        end, scan = next_boundary(text, next_non_space(text, start), scan, final=True)
        if end is None:
            break
        _append_span(spans, text, start, end)
        start = scan = end
    _append_span(spans, text, start, len(text))
    return spans


def _append_span(spans: list[Span], text: str, start: int, end: int) -> None:
    piece = text[start:end]
    stripped = piece.strip()
    if stripped:
        lead = len(piece) - len(piece.lstrip())
        spans.append(Span(stripped, start + lead, start + lead + len(stripped)))


def next_boundary(text: str, start: int, pos: int, *, final: bool) -> tuple[int | None, int]:
    """Find the first sentence end at or after ``pos`` in the sentence that begins at ``start``
    (its first non-space character, or the end of the text while only spaces have arrived: then
    a newline is blank, decided in constant time).

    Returns ``(end, resume)``. ``end`` is the offset just past the sentence (closing quotes
    included), or None when no boundary is decided yet; then ``resume`` is where scanning must
    start again once more text has arrived (an undecided candidate, or the end of the text).
    """
    for match in _CANDIDATE.finditer(text, pos):
        index = match.start()
        if index < pos:
            continue
        decision, end = decide(text, start, index, final=final)
        if decision is Decision.BOUNDARY:
            return end, end
        if decision is Decision.UNDECIDED:
            return None, index
        pos = end
    return None, len(text)


def decide(text: str, start: int, index: int, *, final: bool) -> tuple[Decision, int]:
    """Decide whether the candidate at ``index`` ends the sentence that began at ``start``.

    Returns the decision and the offset just past the candidate.
    """
    if text[index] == "\n":
        return _decide_newline(text, start, index, final=final)
    end = index
    while end < len(text) and text[end] in TERMINATORS:
        end += 1
        if end - index == _MAX_RUN and end < len(text) and text[end] in TERMINATORS:
            return Decision.CONTINUE, end
    while end < len(text) and text[end] in CLOSERS:
        end += 1
    end = _spaced_closer(text, end)
    cluster = text[index:end].rstrip(CLOSERS + _TYPOGRAPHIC_SPACES)
    if end == len(text):
        return (Decision.BOUNDARY if final else Decision.UNDECIDED), end
    if not text[end].isspace():
        if any(c in _NO_SPACE_TERMINATORS for c in cluster):
            return Decision.BOUNDARY, end
        return Decision.CONTINUE, end
    following = next_non_space(text, end, limit=_MAX_GAP)
    if following == len(text):
        return (Decision.BOUNDARY if final else Decision.UNDECIDED), end
    if _continues(text, start, index, cluster, text[following]):
        return Decision.CONTINUE, end
    return Decision.BOUNDARY, end


def _spaced_closer(text: str, end: int) -> int:
    """French sets a space before a closing guillemet (``« Bonjour ! »``): it closes the sentence."""
    k = end
    while k < len(text) and text[k] in _TYPOGRAPHIC_SPACES:
        k += 1
    if k > end and k < len(text) and text[k] == "»":
        return k + 1
    return end


def _decide_newline(text: str, start: int, index: int, *, final: bool) -> tuple[Decision, int]:
    if index < start:  # ``start`` is the sentence's first non-space character
        return Decision.CONTINUE, index + 1
    following = next_non_space(text, index + 1, newlines=False, limit=_MAX_GAP)
    if following == len(text):
        return (Decision.BOUNDARY if final else Decision.UNDECIDED), index
    nxt = text[following]
    if nxt == "\n" or not nxt.islower():
        return Decision.BOUNDARY, index
    return Decision.CONTINUE, index + 1


def next_non_space(text: str, pos: int, *, newlines: bool = True, limit: int | None = None) -> int:
    """The next non-space (or newline, unless ``newlines``); at most ``limit`` characters on,
    where a blank one then means a long gap."""
    stop = len(text) if limit is None else min(len(text), pos + limit)
    while pos < stop and text[pos].isspace() and (newlines or text[pos] != "\n"):
        pos += 1
    return pos


def _continues(text: str, start: int, index: int, cluster: str, nxt: str) -> bool:
    """Whether the sentence goes on past the terminator ``cluster`` at ``index``."""
    if nxt.islower():
        return True
    if cluster != ".":
        return False
    word_start = _word_start(text, start, index)
    word = text[word_start:index].lstrip(_OPENERS)
    low = word.lower()
    if low in TITLES and nxt.isalnum():
        return not (low in _STREET_TITLES and _after_capitalised_word(text, start, word_start))
    if low in NUMBER_ABBREVIATIONS and nxt.isdigit():
        return True
    if len(word) == 1 and word.isupper() and nxt.isupper():
        return True  # an initial: "J. R. R. Tolkien"
    return word.isdigit() and _at_line_start(text, start, word_start)  # "1. Open Settings"


def _word_start(text: str, start: int, index: int) -> int:
    k = index
    while k > start and not text[k - 1].isspace() and index - k < _MAX_WORD:
        k -= 1
    return k


def _at_line_start(text: str, start: int, pos: int) -> bool:
    k = pos
    while k > start and text[k - 1] in " \t":
        k -= 1
    return k == start or text[k - 1] == "\n"


def _after_capitalised_word(text: str, start: int, pos: int) -> bool:
    """ "Baker St." is a street (may end a sentence); "the St. Mary's" is a title."""
    k = pos
    while k > start and text[k - 1] in " \t":
        k -= 1
    word_start = _word_start(text, start, k)
    return k > word_start and text[word_start].isupper()
