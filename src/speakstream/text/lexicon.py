"""Pronunciation rules applied to text before it is chunked, whole or as a stream of fragments.

A rule is an alias (say this text instead) or a phoneme rule (say these phonemes); a phoneme rule
becomes Kokoro's inline form ``[word](/phonemes/)``, which the engine speaks in every language.
Rules match whole words by default and are case-sensitive by default, as ElevenLabs' are. The
streaming ``Rewriter`` holds back only a tail that could still start a match, so any fragmentation
of a text gives exactly what the whole text gives, and a rule never falls across a chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

INLINE = re.compile(r"\[([^\[\]\n]{1,100})\]\(/([^/()\n.,;:!?\[\]]{1,200})/\)")
"""Kokoro's inline phonemes: ``[text](/phonemes/)``. A markdown link's target has a scheme, a
dot or a second slash, so ``[docs](/guide/intro)`` and ``[site](https://x.io/)`` are links."""
_INLINE_PREFIX = re.compile(r"\[[^\[\]\n]{0,100}(?:\](?:\((?:/[^/()\n.,;:!?\[\]]{0,200}/?)?)?)?\Z")
_INLINE_MAX = 306
ALPHABETS = ("ipa", "cmu-arpabet")
Match = tuple[int, int, str]
"""Where a rule (or an inline word) matches, and what is said there: (start, end, spoken)."""
_KEY = 3
"""Rules are indexed by their first this many characters."""
MAX_STRING = 100
"""A rule's string: a streamed reply holds back at most this much waiting for a match, and a
lexicon keeps every prefix of every string (5,000 rules: at most 500,000 prefixes)."""
_PHONEME_JUNK = re.compile(r"[/()\[\].\n]")  # slashes, brackets, IPA syllable dots


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """Say ``alias`` (or ``phoneme``, in ``alphabet``) wherever ``string`` is written."""

    string: str
    alias: str | None = None
    phoneme: str | None = None
    alphabet: str = "ipa"
    case_sensitive: bool = True
    word_boundaries: bool = True

    def __post_init__(self) -> None:
        if not self.string.strip() or len(self.string) > MAX_STRING:
            raise ValueError(f"a rule's string_to_replace must be 1 to {MAX_STRING} characters, not blank")
        if (self.alias is None) == (self.phoneme is None):
            raise ValueError("a rule is an alias or a phoneme rule: give one of alias and phoneme")
        if self.phoneme is not None and self.alphabet not in ALPHABETS:
            raise ValueError(f"alphabet must be one of {', '.join(ALPHABETS)}, not {self.alphabet[:20]!r}")
        if self.alias is not None and len(self.alias) > 1000:
            raise ValueError("an alias is at most 1,000 characters")
        if self.phoneme is not None and not 0 < len(self.phoneme) <= 200:
            raise ValueError("a phoneme rule's phonemes are 1 to 200 characters")

    @property
    def kind(self) -> str:
        return "alias" if self.alias is not None else "phoneme"

    def spoken(self, matched: str) -> str:
        """What replaces ``matched``: the alias, or the inline phonemes with ``matched`` shown."""
        if self.alias is not None:
            return self.alias
        phonemes = self.phoneme or ""
        ipa = arpabet_to_ipa(phonemes) if self.alphabet == "cmu-arpabet" else phonemes
        shown = re.sub(r"[\[\]\n]", " ", matched).strip() or "word"
        return f"[{shown}](/{_PHONEME_JUNK.sub('', ipa).strip()}/)"


class Lexicon:
    """Rules indexed by their first characters: the longest string wins where several start at
    once, and the first rule given wins between equal strings (earlier dictionaries first). A scan
    costs a few dictionary lookups a character whatever the number of rules (one regular
    expression of every rule costs the rules times the characters)."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        unique: dict[tuple[str, bool], Rule] = {}
        for rule in rules:
            key = (rule.string if rule.case_sensitive else rule.string.lower(), rule.case_sensitive)
            unique.setdefault(key, rule)
        self.rules: tuple[Rule, ...] = tuple(sorted(unique.values(), key=lambda r: -len(r.string)))
        self._exact = _buckets((i, r.string) for i, r in enumerate(self.rules) if r.case_sensitive)
        self._folded = _buckets((i, r.string.lower()) for i, r in enumerate(self.rules) if not r.case_sensitive)
        self._firsts = frozenset(k[0] for k in self._exact) | frozenset(k[0] for k in self._folded)
        self.longest = max((len(r.string) for r in self.rules), default=0)

    def __bool__(self) -> bool:
        return bool(self.rules)

    @cached_property
    def _prefixes(self) -> tuple[frozenset[str], frozenset[str]]:
        """Every prefix of every string: as written (case-sensitive rules), and lower-cased."""
        exact = {r.string[:n] for r in self.rules if r.case_sensitive for n in range(1, len(r.string) + 1)}
        folded = {r.string.lower()[:n] for r in self.rules if not r.case_sensitive for n in range(1, len(r.string) + 1)}
        return frozenset(exact), frozenset(folded)

    def apply(self, text: str, start: int = 0) -> str:
        """``text[start:]`` with every rule applied (``text[:start]`` is context only)."""
        return "".join(self._pieces(text, start, len(text), self.matches(text, start)))

    def _pieces(self, text: str, start: int, stop: int, found: Iterable[Match]) -> Iterable[str]:
        """``text[start:stop]`` with the matches ``found`` there said instead."""
        at = start
        for first, end, spoken in found:
            if end > stop:
                break
            yield text[at:first]
            yield spoken
            at = end
        yield text[at:stop]

    def matches(self, text: str, start: int = 0) -> Iterator[Match]:
        """Each match in ``text[start:]``, leftmost first: (start, end, what is said instead).
        Inline phonemes already there are matches of themselves, never rewritten or cut."""
        inline = [(m.start(), m.end()) for m in INLINE.finditer(text, start)] if "](/" in text else []
        inline.append((len(text), len(text)))
        next_inline, at = 0, start
        while at < len(text):
            if at == inline[next_inline][0]:
                yield at, inline[next_inline][1], text[at : inline[next_inline][1]]
                at = inline[next_inline][1]
                next_inline += 1
                continue
            char = text[at]
            if char in self._firsts or char.lower() in self._firsts:
                found = self._match_at(text, at, inline[next_inline][0])
                if found is not None:
                    yield found
                    at = found[1]
                    continue
            at += 1

    def _match_at(self, text: str, at: int, limit: int) -> Match | None:
        """The longest rule matching at ``at`` and ending by ``limit`` (the next inline word)."""
        found: list[int] = []
        for buckets, fold in ((self._exact, False), (self._folded, True)):
            for size in range(1, _KEY + 1):
                key = text[at : at + size]
                for length, strings in buckets.get(key.lower() if fold else key, ()):
                    written = text[at : at + length]
                    index = strings.get(written.lower() if fold else written)
                    if index is None or at + length > limit:
                        continue
                    rule = self.rules[index]
                    if rule.word_boundaries and (_is_word(text, at - 1) or _is_word(text, at + length)):
                        continue
                    found.append(index)
        if not found:
            return None
        rule = self.rules[min(found)]  # the longest; between equals, the first given
        written = text[at : at + len(rule.string)]
        return at, at + len(written), rule.spoken(written)

    def could_start(self, tail: str) -> bool:
        """Whether ``tail`` (text at the end of what has arrived) may be the start of a match."""
        exact, folded = self._prefixes
        return tail in exact or tail.lower() in folded or _INLINE_PREFIX.match(tail) is not None

    def rewriter(self) -> Rewriter:
        return Rewriter(self)


class Rewriter:
    """Applies a lexicon to text fragments as they arrive: ``feed`` each, ``flush`` at the end."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon
        self._buf = ""  # _buf[:1] is context (the character before) once anything went out
        self._start = 0

    def feed(self, fragment: str) -> str:
        self._buf += fragment
        found = list(self.lexicon.matches(self._buf, self._start))
        hold = self._hold(found)
        out = "".join(self.lexicon._pieces(self._buf, self._start, hold, found))
        if hold:
            self._buf, self._start = self._buf[hold - 1 :], 1
        return out

    def flush(self) -> str:
        out = self.lexicon.apply(self._buf, self._start)
        self._buf, self._start = "", 0
        return out

    def _hold(self, found: list[Match]) -> int:
        """Where the held-back tail starts: the earliest place a match may still begin, moved
        back before any of the matches ``found`` that would cross it."""
        buf, start = self._buf, self._start
        reach = max(self.lexicon.longest, _INLINE_MAX)
        hold = len(buf)
        for at in range(max(start, len(buf) - reach), len(buf)):
            if self.lexicon.could_start(buf[at:]):
                hold = at
                break
        for first, end, _ in found:
            if first >= hold:
                break
            if end > hold or end == len(buf):
                hold = first
                break
        return hold if hold > start else start


Buckets = dict[str, list[tuple[int, dict[str, int]]]]


def _buckets(strings: Iterable[tuple[int, str]]) -> Buckets:
    """Rule indices by their strings' first ``_KEY`` characters, then by length (longest first),
    then by the whole string: a lookup costs the lengths in one bucket, not the rules."""
    by_key: dict[str, dict[int, dict[str, int]]] = {}
    for index, string in strings:
        by_key.setdefault(string[:_KEY], {}).setdefault(len(string), {}).setdefault(string, index)
    return {key: sorted(lengths.items(), reverse=True) for key, lengths in by_key.items()}


def _is_word(text: str, at: int) -> bool:
    """Whether ``text[at]`` is a word character (as ``\\w``); outside the text is not."""
    return 0 <= at < len(text) and (text[at].isalnum() or text[at] == "_")


def arpabet_to_ipa(arpabet: str) -> str:
    """CMU Arpabet (``K AH0 K AO1 R OW0``) as IPA with Kokoro's stress marks before the vowel."""
    phones: list[str] = []
    for phone in arpabet.split():
        base = phone.rstrip("012").upper()
        stress = phone[len(base) :]
        if base not in _ARPABET:
            raise ValueError(f"{phone[:12]!r} is not a CMU Arpabet phone")
        ipa = {"AH": "ə", "ER": "əɹ"}.get(base, _ARPABET[base]) if stress == "0" else _ARPABET[base]
        phones.append({"1": "ˈ", "2": "ˌ"}.get(stress, "") + ipa)
    return "".join(phones)


_ARPABET = {
    "AA": "ɑ", "AE": "æ", "AH": "ʌ", "AO": "ɔ", "AW": "aʊ", "AY": "aɪ", "EH": "ɛ", "ER": "ɜɹ",
    "EY": "eɪ", "IH": "ɪ", "IY": "i", "OW": "oʊ", "OY": "ɔɪ", "UH": "ʊ", "UW": "u",
    "B": "b", "CH": "tʃ", "D": "d", "DH": "ð", "F": "f", "G": "ɡ", "HH": "h", "JH": "dʒ", "K": "k",
    "L": "l", "M": "m", "N": "n", "NG": "ŋ", "P": "p", "R": "ɹ", "S": "s", "SH": "ʃ", "T": "t",
    "TH": "θ", "V": "v", "W": "w", "Y": "j", "Z": "z", "ZH": "ʒ",
}  # fmt: skip


def merged(lexicons: Sequence[Lexicon]) -> Lexicon | None:
    """One lexicon of several, earlier ones first (one alone is itself); None when there are no
    rules at all."""
    if len(lexicons) == 1:
        return lexicons[0] or None
    rules = [rule for lexicon in lexicons for rule in lexicon.rules]
    return Lexicon(rules) if rules else None
