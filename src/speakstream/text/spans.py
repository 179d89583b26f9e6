"""Where each spoken word came from in the client's own text: a character span for every word.

Between the client's text and the words the engine says lie SSML, pronunciation rules, markdown
and normalisation ("2025-03-05" is said "March 5, 2025"). Rather than thread offsets through every
one of them, the words of each chunk are aligned with the client's text afterwards. The text is
cut into units, its runs of letters or digits (markup left out), grouped by the spaces between
them ("10:30" is the units 10 and 30 in one group). A word says a run of units of one group with
the same letters and digits ("42.50", "Kokoro's"), or, a word of digits, a number written in
parts, as a whole ("5" and "2025" both say "2025-03-05", read "March 5, 2025"). An alignment in
order places the words: each match scores, each word left unmatched, each unit passed over and
each word in place of a unit costs, so the nearest reading wins. A word that matches nothing (an
alias, a letter read out, a month named) takes its share of the units left between its matched
neighbours, or a matched neighbour's when none are left. A chunk's part of the text ends where a
tag cut it (SSML), or where its last mark is.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

_KEY = re.compile(r"[^\W_]+")
_GROUP = re.compile(r"\S+")
_SSML_MARKUP = re.compile(r"<[^<>]*>|&[#\w]+;")
_TARGET = re.compile(r"\]\([^()\s]*\)")
"""A markdown link's target or inline phonemes: never spoken."""
_ENDS = ".!?…。！？,;:，、"
_CLOSERS = "\"')]}»”’*_"
_WINDOW = 48
"""Units looked at past a chunk's words: an alias or markup may stand for this many."""
_RUN = 8
_RECUT = 256
"""Characters of the group at the end of the text cut again when more text comes (a markdown
target or an entity the end of the text cut in two is shorter)."""
"""The most units one word says ("U.S.A.": three)."""
MATCH, MISS = 3, 1
Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int
    end: int
    key: str
    """Its letters or digits, lower-cased."""
    group: int
    """The units between two spaces share one."""
    tail: str
    """The marks after it up to the next unit (markup and spaces left out): where a chunk may end."""

    @property
    def plain(self) -> bool:
        """Letters: a word a normaliser leaves as it is (it may expand a number or symbol)."""
        return self.key.isalpha()


def _key(text: str) -> str:
    return "".join(_KEY.findall(text)).lower()


def _letter(token: str) -> bool:
    """A letter read out ("D."): the mark after it, but for the last, is not the client's."""
    key = _key(token)
    return len(key) == 1 and key.isalpha()


def _blank(found: re.Match[str]) -> str:
    return " " * len(found.group())


def _units(masked: str, base: int, group: int) -> list[_Unit]:
    """The units of ``masked`` (text at ``base`` with markup blanked), groups counted from ``group``."""
    found = [(g, m) for g, spaced in enumerate(_GROUP.finditer(masked)) for m in _KEY.finditer(spaced.group())]
    starts = [m.start() for m in _GROUP.finditer(masked)]
    units = []
    for k, (g, m) in enumerate(found):
        start, end = starts[g] + m.start(), starts[g] + m.end()
        following = starts[found[k + 1][0]] + found[k + 1][1].start() if k + 1 < len(found) else len(masked)
        units.append(
            _Unit(base + start, base + end, m.group().lower(), group + g, "".join(masked[end:following].split())[:16])
        )
    return units


def _run(key: str, units: list[_Unit], j: int) -> int:
    """How many units from ``j`` (one group, at most ``_RUN``) a word's ``key`` says; 0: none.
    Their keys joined only grow, so one count at most can say it, and a prefix that differs ends
    the search."""
    joined = ""
    for k in range(j, min(len(units), j + _RUN)):
        if units[k].group != units[j].group:
            break
        joined += units[k].key
        if not key.startswith(joined):
            break
        if len(joined) == len(key):
            return k + 1 - j
    return 0


def _in_number(key: str, units: list[_Unit], j: int, numbers: dict[int, frozenset[int]]) -> bool:
    """Whether a word of digits says one of the numbers of the number written from unit ``j``."""
    return key.isdigit() and len(key) < 9 and j in numbers and int(key) in numbers[j]


def _numbers(units: list[_Unit]) -> dict[int, frozenset[int]]:
    """The numbers written in parts or whole ("2025-03-05", "10:30", "42"), by their first unit."""
    found: dict[int, frozenset[int]] = {}
    j = 0
    while j < len(units):
        end = _group_end(units, j)
        if all(u.key.isdigit() for u in units[j:end]):
            found[j] = frozenset(int(u.key) for u in units[j:end] if len(u.key) < 9)
        j = end
    return found


class SpanFinder:
    """The client's text of one reply, fed as it arrives (``add``); ``place`` gives each chunk's
    words their spans in it, chunk after chunk. ``ssml``: tags and entities are not spoken."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self.ssml = False
        self._units: list[_Unit] = []
        self._scanned = 0
        self._next = 0
        """The first unit no chunk has taken yet."""
        self._breaks: list[int] = []

    def add(self, fragment: str, *, apart: bool = False) -> None:
        """More of the client's text; ``apart``: a chunk of its own (no word runs across its edges)."""
        if apart:
            self._breaks.append(self._length)
        self._parts.append(fragment)
        self._length += len(fragment)
        if apart:
            self._breaks.append(self._length)

    @property
    def text(self) -> str:
        """The client's text so far (its fragments joined when asked, not at each one)."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def place(self, words: list[str], chunk: str, ends_at: int | None = None) -> list[Span]:
        """Spans in the client's text of ``words``, the words of the chunk after those placed
        before (``chunk``: its text, whose marks tell where its part of the client's text ends,
        unless ``ends_at`` says)."""
        self._scan()
        if ends_at is not None:
            extent, known = sum(1 for u in self._units[self._next :] if u.start < ends_at), True
        else:
            extent, known = self._extent(words, chunk)
        units = self._units[self._next : self._next + extent]
        matched = _align([_key(word) for word in words], units)
        written = {_key(token) for token in chunk.split()}
        spans, used = [], -1
        for i, run in enumerate(matched):
            first, stop = _number(units, *(run or _gap(units, matched, i, _key(words[i]) in written)))
            used = max(used, stop - 1)
            at = units[first].start if first < len(units) else len(self.text)
            spans.append((units[first].start, units[stop - 1].end) if first < stop else (at, at))
        self._next += extent if known else used + 1
        return spans

    def _extent(self, words: list[str], chunk: str) -> tuple[int, bool]:
        """How many units from the next the chunk's part of the client's text holds, and whether
        that is known: it ends at the unit followed by the chunk's last mark as many times as the
        chunk has it after a word (but after letters read out, "D. O. G"); a chunk that ends with
        no mark holds a group of units for each word it writes (letters read out in a row: one),
        but never more units than its own text has and ``_WINDOW`` (a text with no spaces is one
        group: each chunk's work stays within its own length)."""
        mark, units = chunk.rstrip()[-1:], self._units
        written = [t for t in chunk.split() if _key(t)]
        spelled = [_letter(t) and k + 1 < len(written) and _letter(written[k + 1]) for k, t in enumerate(written)]
        if mark and mark in _ENDS:
            marked = [t for t, inner in zip(written, spelled, strict=True) if not inner]
            times = max(1, sum(1 for t in marked if t.rstrip(_CLOSERS).endswith(mark)))
            for k in range(self._next, min(len(units), self._next + len(words) + _WINDOW)):
                if mark in units[k].tail and _ends_group(units, k):  # a chunk ends at a space
                    times -= 1
                    if times == 0:
                        return k + 1 - self._next, True
        k, most = self._next, self._next + len(_KEY.findall(chunk)) + _WINDOW
        for _ in range(max(1, spelled.count(False))):  # a group of the client's text a word written
            k = _group_end(units, k, most) if k < len(units) else k
        return min(k, most) - self._next, False

    def _scan(self) -> None:
        """Cut the text received since the last scan into units; the group that reached the end of
        the text then may have gone on, so it is cut again (its last ``_RECUT`` characters: a text
        with no spaces is one group), and so is an SSML tag not closed."""
        group = self._units[-1].group + 1 if self._units else 0
        if self._units and self._units[-1].end + len(self._units[-1].tail) >= self._scanned:
            last, since = self._units[-1].group, self._scanned - _RECUT
            while self._units and self._units[-1].group == last and self._units[-1].start >= since:
                self._scanned = self._units.pop().start
            self._next, group = min(self._next, len(self._units)), last
        text = self.text
        stop = len(text)
        if self.ssml and (opened := text.rfind("<", self._scanned)) > text.rfind(">", self._scanned):
            stop = opened
        edges = [self._scanned, *(b for b in self._breaks if self._scanned < b < stop), stop]
        for start, end in itertools.pairwise(edges):
            masked = _TARGET.sub(_blank, text[start:end])
            if self.ssml:
                masked = _SSML_MARKUP.sub(_blank, masked)
            found = _units(masked, start, group)
            self._units += found
            group = found[-1].group + 1 if found else group
        self._scanned = stop


def _gap(units: list[_Unit], matched: list[tuple[int, int] | None], i: int, alias: bool) -> tuple[int, int]:
    """The units of unmatched word ``i``: its share of those left between its matched neighbours
    (or the chunk's edges), or, when none are, a neighbour's: the one before for a word the chunk
    has written (``alias``: an alias goes on), else the one a normaliser expands (a number or
    symbol rather than a plain word; the one before when both or neither are)."""
    before = next((m for m in reversed(matched[:i]) if m is not None), None)
    after = next((m for m in matched[i + 1 :] if m is not None), None)
    first = 0 if before is None else _group_end(units, before[1] - 1)
    stop = len(units) if after is None else after[0]
    while after is not None and stop > first and units[stop - 1].group == units[after[0]].group:
        stop -= 1  # the rest of a matched word's group is said with it ("2025-03-05")
    if first < stop:
        return _share(matched, i, first, stop)
    expands = after is not None and before is not None and not units[after[0]].plain
    if after is not None and (before is None or (not alias and units[before[0]].plain and expands)):
        return after
    return before if before is not None else (first, first)


def _share(matched: list[tuple[int, int] | None], i: int, first: int, stop: int) -> tuple[int, int]:
    """Word ``i``'s part of the units ``first``..``stop`` that the unmatched words around it share
    in order and in proportion (one alias of several words, or several letters read out, for one
    unit; one word for several)."""
    start = i
    while start > 0 and matched[start - 1] is None:
        start -= 1
    end = i
    while end + 1 < len(matched) and matched[end + 1] is None:
        end += 1
    count, units, r = end - start + 1, stop - first, i - start
    low = first + r * units // count
    return low, max(first + (r + 1) * units // count, low + 1)


def _number(units: list[_Unit], first: int, stop: int) -> tuple[int, int]:
    """``first``..``stop`` widened to the whole of a number written in parts ("2025-03-05", "10:30"):
    a normaliser reads it in another order, so each of its words points at all of it."""
    if first >= stop or not units[first].key.isdigit():
        return first, stop
    low, high = first, _group_end(units, stop - 1)
    while low > 0 and units[low - 1].group == units[first].group:
        low -= 1
    if all(u.key.isdigit() for u in units[low:high]):
        return low, high
    return first, stop


def _group_end(units: list[_Unit], k: int, most: int | None = None) -> int:
    """The index after the last unit of unit ``k``'s group (no further than ``most``)."""
    stop = len(units) if most is None else min(len(units), most)
    while k + 1 < stop and units[k + 1].group == units[k].group:
        k += 1
    return k + 1


def _ends_group(units: list[_Unit], k: int) -> bool:
    return k + 1 == len(units) or units[k + 1].group != units[k].group


def _align(keys: list[str], units: list[_Unit]) -> list[tuple[int, int] | None]:
    """The units each word says (first, stop; None: none), in order: a match scores ``MATCH``
    (the words after the first that say parts of one number, ``MATCH - 1``: a number read out of
    order, "2025-03-05" as "March 5 2025", is matched as a whole); each word unmatched, each unit
    passed over before the last match, and each word in place of a unit (an alias) costs ``MISS``."""
    n, m = len(keys), len(units)
    numbers, ends = _numbers(units), [_group_end(units, j) for j in range(m)]
    outside = [[0] * (m + 1) for _ in range(n + 1)]
    inside = [[0] * (m + 1) for _ in range(n + 1)]
    """The best score from word ``i`` at unit ``j``; ``inside``: within the number that starts at ``j``."""
    for i in range(n - 1, -1, -1):
        outside[i][m] = outside[i + 1][m] - MISS
        for j in range(m - 1, -1, -1):
            inside[i][j] = outside[i][ends[j]]
            if _in_number(keys[i], units, j, numbers):
                inside[i][j] = max(inside[i][j], MATCH - 1 + inside[i + 1][j])
            here = max(outside[i + 1][j], outside[i][j + 1], outside[i + 1][j + 1]) - MISS
            if _in_number(keys[i], units, j, numbers):
                here = max(here, MATCH + inside[i + 1][j])
            if count := _run(keys[i], units, j):
                here = max(here, MATCH + outside[i + 1][j + count])
            outside[i][j] = here
    return _back(keys, units, numbers, ends, outside, inside)


def _back(
    keys: list[str],
    units: list[_Unit],
    numbers: dict[int, frozenset[int]],
    ends: list[int],
    outside: list[list[int]],
    inside: list[list[int]],
) -> list[tuple[int, int] | None]:
    """The alignment the scores chose: a match first, then a word in place of a unit, then a word
    unmatched (so later words match early), then a unit passed over."""
    n, m = len(keys), len(units)
    matched: list[tuple[int, int] | None] = []
    i, j, within = 0, 0, False
    while i < n:
        number = j < m and _in_number(keys[i], units, j, numbers)
        if within:
            if number and inside[i][j] == MATCH - 1 + inside[i + 1][j]:
                matched.append((j, ends[j]))
                i += 1
            else:
                j, within = ends[j], False
            continue
        whole = _run(keys[i], units, j) if j < m else 0
        if number and outside[i][j] == MATCH + inside[i + 1][j]:
            matched.append((j, ends[j]))
            i, within = i + 1, True
        elif whole and outside[i][j] == MATCH + outside[i + 1][j + whole]:
            matched.append((j, j + whole))
            i, j = i + 1, j + whole
        elif j < m and outside[i][j] == outside[i + 1][j + 1] - MISS:  # a word for a unit: an alias
            matched.append(None)
            i, j = i + 1, j + 1
        elif outside[i][j] == outside[i + 1][j] - MISS:  # the word said nothing here: later words match early
            matched.append(None)
            i += 1
        else:
            j += 1
    return matched
