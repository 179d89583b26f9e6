"""Pronunciation rules applied to text before it is chunked, whole or as a stream of fragments.

A rule is an alias (say this text instead) or a phoneme rule (say these phonemes); a phoneme rule
becomes Kokoro's inline form ``[word](/phonemes/)``, which the engine speaks in every language.
Rules match whole words by default and are case-sensitive by default, as ElevenLabs' are. The
streaming ``Rewriter`` holds back only a tail that could still start a match, so any fragmentation
of a text gives exactly what the whole text gives, and a rule never falls across a chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

INLINE = re.compile(r"\[([^\[\]\n]{1,100})\]\(/([^/()\n.,;:!?\[\]]{1,200})/\)")
"""Kokoro's inline phonemes: ``[text](/phonemes/)``. A markdown link's target has a scheme, a
dot or a second slash, so ``[docs](/guide/intro)`` and ``[site](https://x.io/)`` are links."""
_INLINE_PREFIX = re.compile(r"\[[^\[\]\n]{0,100}(?:\](?:\((?:/[^/()\n.,;:!?\[\]]{0,200}/?)?)?)?\Z")
_INLINE_MAX = 306
ALPHABETS = ("ipa", "cmu-arpabet")
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
        if not self.string.strip() or len(self.string) > 200:
            raise ValueError("a rule's string_to_replace must be 1 to 200 characters, not blank")
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

    def pattern(self) -> str:
        body = re.escape(self.string)
        if self.word_boundaries:
            body = rf"(?<!\w){body}(?!\w)"
        return body if self.case_sensitive else f"(?i:{body})"

    def spoken(self, matched: str) -> str:
        """What replaces ``matched``: the alias, or the inline phonemes with ``matched`` shown."""
        if self.alias is not None:
            return self.alias
        phonemes = self.phoneme or ""
        ipa = arpabet_to_ipa(phonemes) if self.alphabet == "cmu-arpabet" else phonemes
        shown = re.sub(r"[\[\]\n]", " ", matched).strip() or "word"
        return f"[{shown}](/{_PHONEME_JUNK.sub('', ipa).strip()}/)"


class Lexicon:
    """Rules compiled into one pattern: the longest string wins where several start at once, and
    the first rule given wins between equal strings (earlier dictionaries before later ones)."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        unique: dict[tuple[str, bool], Rule] = {}
        for rule in rules:
            key = (rule.string if rule.case_sensitive else rule.string.lower(), rule.case_sensitive)
            unique.setdefault(key, rule)
        self.rules: tuple[Rule, ...] = tuple(sorted(unique.values(), key=lambda r: -len(r.string)))
        branches = [INLINE.pattern] + [f"({rule.pattern()})" for rule in self.rules]
        self._pattern = re.compile("|".join(f"(?:{b})" if i == 0 else b for i, b in enumerate(branches)))
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
        return "".join(self._pieces(text, start, len(text)))

    def _pieces(self, text: str, start: int, stop: int) -> Iterable[str]:
        at = start
        for m in self._pattern.finditer(text, start):
            if m.end() > stop:
                break
            yield text[at : m.start()]
            rule_index = m.lastindex - 3 if m.lastindex is not None and m.lastindex >= 3 else None
            yield m.group() if rule_index is None else self.rules[rule_index].spoken(m.group())
            at = m.end()
        yield text[at:stop]

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
        hold = self._hold()
        out = "".join(self.lexicon._pieces(self._buf, self._start, hold))
        self._buf, self._start = self._buf[hold - 1 :] if hold else self._buf, 1 if hold else self._start
        return out

    def flush(self) -> str:
        out = self.lexicon.apply(self._buf, self._start)
        self._buf, self._start = "", 0
        return out

    def _hold(self) -> int:
        """Where the held-back tail starts: the earliest place a match may still begin, moved
        back before any match that would cross it."""
        buf, start = self._buf, self._start
        reach = max(self.lexicon.longest, _INLINE_MAX)
        hold = len(buf)
        for at in range(max(start, len(buf) - reach), len(buf)):
            if self.lexicon.could_start(buf[at:]):
                hold = at
                break
        for m in self.lexicon._pattern.finditer(buf, start):
            if m.start() >= hold:
                break
            if m.end() > hold or m.end() == len(buf):
                hold = m.start()
                break
        return hold if hold > start else start


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
    """One lexicon of several, earlier ones first; None when there are no rules at all."""
    rules = [rule for lexicon in lexicons for rule in lexicon.rules]
    return Lexicon(rules) if rules else None
