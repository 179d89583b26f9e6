"""Speakable chunks from a stream of text fragments.

The latency policy: the first chunk of a reply may end at a clause mark (``, ; : —``) once it has
``min_first_words`` words, so speech starts early; later chunks are whole sentences, merged when
tiny and cut at a clause (else a space) when longer than the chunk's maximum. The maximum may grow
along a schedule so that each chunk is synthesised while the audio before it is still playing.

One core does the work for a whole text and for a stream, so any way of cutting the input into
fragments gives exactly the same chunks: every decision looks at a bounded window of text and is
postponed until that window has arrived. Feeding is linear: the core remembers how far it has
scanned, and a buffer offset (compacted now and then) replaces slicing.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

from speakstream.text.segment import next_boundary, next_non_space

# Latin clause marks count when a space follows ("3,5" and "10:30" are not clauses); CJK marks
# have no space after them.
_CLAUSE_MARKS = re.compile(r"[,;:](?=\s)|[，；：、]|[—–]")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# A word: a run of letters and digits, but each CJK character counts as one (no spaces there).
_WORD = re.compile(rf"[^\W{_CJK}]+|[{_CJK}]")
_SPACE = re.compile(r"\s")
# Characters that can change a decision: terminators, newlines, clause marks.
_TRIGGERS = re.compile(r"[.!?…‼⁇⁈⁉。！？｡؟۔।॥\n,;:，；：、—–]")
# Words that start a phrase: cutting before one keeps natural prosody ("walk you | through it").
PHRASE_STARTERS = (
    "the a an to at in on of for with from by about into through over after before during until "
    "and but or so because which that who when while where if as than"
).split()
# Each starts only where a run of spaces starts ((?<!\s)), so a long run costs its length once,
# not its square (a cut inside a run is never taken: a cut must follow a letter).
_PHRASE = re.compile(r"(?<!\s)\s+(?=(?:" + "|".join(PHRASE_STARTERS) + r")[\s,.;:!?])", re.IGNORECASE)
# Conjunctions and relative words: where a long clause without commas can break naturally.
CLAUSE_STARTERS = "and but or so because which that who while when where whereas although though unless".split()
_CLAUSE_START = re.compile(r"(?<!\s)\s+(?=(?:" + "|".join(CLAUSE_STARTERS) + r")[\s,.;:!?])", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkPolicy:
    """How text is cut into chunks for synthesis (defaults measured in docs/performance.md)."""

    first_clause: bool = True
    """Let the first chunk end at a clause mark instead of a sentence end."""
    min_first_words: int = 3
    """Words the first chunk needs before it may end at a clause mark."""
    first_phrase_words: int = 0
    """Words the first chunk needs before it may end before a phrase-starting word (the, to,
    at...) that follows a plain word (not "p.m." or "5"), when no clause mark came first;
    0 (the default) turns phrase cuts off: a phrase said alone is several dB apart from the rest
    of its sentence, with a pause where none belongs (``docs/design.md``, Sound)."""
    min_chunk_chars: int = 16
    """Later sentences shorter than this wait to be merged with the next one."""
    max_chunk_chars: int = 280
    """No chunk is longer than this (the engine's 510-phoneme window is ~400 characters)."""
    schedule: tuple[int, ...] = (80, 40, 70, 100, 140, 200)
    """Soft limits for chunk 0, 1, ...: past one, a sentence is cut at a clause mark (the last
    before the limit, else the next after it). Later chunks have only ``max_chunk_chars``."""

    def __post_init__(self) -> None:
        if self.min_first_words < 1 or self.max_chunk_chars < 8 or self.first_phrase_words < 0:
            raise ValueError("min_first_words must be >= 1, first_phrase_words >= 0 and max_chunk_chars >= 8")
        if any(limit < 8 for limit in self.schedule):
            raise ValueError("every schedule entry must be >= 8 characters")

    def max_chars(self, index: int) -> int:
        """The soft limit of chunk ``index`` (``max_chunk_chars`` past the schedule)."""
        if index < len(self.schedule):
            return min(self.schedule[index], self.max_chunk_chars)
        return self.max_chunk_chars


class IncrementalSentenceChunker:
    """Turns LLM text fragments into speakable chunks as soon as each is complete.

    ``feed`` returns the chunks that became complete and keeps the unfinished tail; ``flush``
    returns what is left at the end of input (even without final punctuation) and resets.
    ``flush_all`` does the same but keeps the final pieces apart, each within the maximum.
    """

    _COMPACT_AT = 4096

    def __init__(self, policy: ChunkPolicy | None = None) -> None:
        self.policy = policy or ChunkPolicy()
        self._reset()

    def _reset(self) -> None:
        self._buf = ""
        self._base = 0  # the current chunk starts here in _buf
        self._lead_at = 0  # the chunk's first non-space is at or after this
        self._sentence = 0  # the current (unfinished) sentence starts here (after a cut: the cut)
        self._origin = 0  # the sentence's first non-space, which boundary decisions look back to
        self._scan = 0  # the sentence scanner resumes here (kept across cuts inside the sentence)
        self._boundary: int | None = None  # the sentence's end, once decided
        self._clause_scan = 0  # the first-clause search resumes here
        self._index = 0  # chunks emitted in this reply

    @property
    def pending(self) -> str:
        """Text received but not yet emitted as a chunk."""
        return self._buf[self._base :]

    def feed(self, fragment: str) -> list[str]:
        if self._more_blank(fragment):
            return []
        if self._inert(fragment):
            self._buf += fragment
            self._scan = len(self._buf)
            return []
        self._buf += fragment
        return self._drain(final=False)

    def _inert(self, fragment: str) -> bool:
        """Whether ``fragment`` cannot change any decision (the common case, made cheap)."""
        phrase_cuts_possible = self._index == 0 and self.policy.first_clause and self.policy.first_phrase_words
        return (
            not phrase_cuts_possible
            and self._boundary is None
            and self._scan == len(self._buf)
            and not _TRIGGERS.search(fragment)
            and not _TRIGGERS.match(self._buf[-1:])
            and len(self._buf) + len(fragment) - self._base <= self.policy.max_chars(self._index)
        )

    def _more_blank(self, fragment: str) -> bool:
        """Spaces after a space decide nothing yet: a rule looks at the first blank after a
        character (a clause mark's, a phrase word's) or at the next word after a sentence end,
        which the next fragment that is not blank brings. Appended as they are, so a run of
        blanks costs its length once, not its square."""
        if fragment and self._buf[-1:].isspace() and fragment.isspace() and "\n" not in fragment:
            self._buf += fragment
            return True
        return False

    def flush(self) -> str | None:
        """The rest of the reply as one chunk (None if nothing is left); resets for the next."""
        rest = " ".join(self.flush_all())
        return rest or None

    def flush_all(self) -> list[str]:
        """The rest of the reply as chunks, each within the maximum; resets for the next."""
        chunks = self.cut()
        self._reset()
        return chunks

    def cut(self) -> list[str]:
        """Everything pending as chunks now, as at the end of input, but the reply goes on."""
        chunks = self._drain(final=True)
        while self.pending.strip():
            lead = self._lead()
            limit = self.policy.max_chunk_chars
            if len(self._buf[lead:].rstrip()) <= limit:
                chunks.append(self._emit(len(self._buf)))
            else:
                chunks.append(self._emit(self._cut_point(lead, limit)))
        return chunks

    def _drain(self, *, final: bool) -> list[str]:
        chunks: list[str] = []
        while (chunk := self._next_chunk(final=final)) is not None:
            if chunk:
                chunks.append(chunk)
        return chunks

    def _lead(self) -> int:
        self._lead_at = next_non_space(self._buf, max(self._lead_at, self._base))
        return self._lead_at

    def _stripped_len(self, start: int, stop: int) -> int:
        """``len(self._buf[start:stop].rstrip())`` without copying the span."""
        while stop > start and self._buf[stop - 1].isspace():
            stop -= 1
        return stop - start

    def _find_boundary(self, *, final: bool) -> tuple[int | None, int]:
        """The current sentence's end (remembered once decided) or where the scan stopped.
        Decisions look back to the sentence's start, never to a cut inside it, so text before
        a cut is never scanned again."""
        if self._boundary is not None:
            return self._boundary, self._boundary
        self._origin = next_non_space(self._buf, self._origin)
        end, resume = next_boundary(self._buf, self._origin, self._scan, final=final)
        self._scan = resume
        self._boundary = end
        return end, resume

    def _next_chunk(self, *, final: bool) -> str | None:
        """One step of the policy: a chunk, "" when state moved without a chunk, None to wait."""
        lead = self._lead()
        hard = self.policy.max_chunk_chars
        end, resume = self._find_boundary(final=final)
        decided_to = end if end is not None else resume
        content = self._stripped_len(lead, decided_to)
        cut: int | None = None
        searching = False  # the first chunk's clause search has text still to come
        if self._index == 0 and self.policy.first_clause:
            cut = self._first_clause(min(decided_to, lead + hard))
            searching = end is None and decided_to < lead + hard
        soft = self.policy.max_chars(self._index)
        if cut is None and not searching and soft < hard and content > soft:
            cut = self._soft_cut(lead, soft, min(decided_to, lead + hard))
        if cut is not None:
            return self._emit(cut)
        if end is not None:
            return self._sentence_end(lead, end, hard, final=final)
        if content > hard:
            return self._emit(self._over_limit_cut(lead, hard))
        return None

    def _sentence_end(self, lead: int, end: int, limit: int, *, final: bool) -> str:
        if self._stripped_len(lead, end) > limit:
            return self._emit(self._over_limit_cut(lead, limit))
        tiny = len(self._buf[self._sentence : end].strip()) < self.policy.min_chunk_chars
        last = final and next_non_space(self._buf, end) == len(self._buf)
        if self._index > 0 and tiny and not last:
            self._next_sentence(end)  # hold it and merge it with the next sentence
            return ""
        return self._emit(end)

    def _over_limit_cut(self, lead: int, limit: int) -> int:
        """Held short sentences go out alone; else the long sentence is cut inside."""
        return self._sentence if self._sentence > lead else self._cut_point(lead, limit)

    def _first_clause(self, limit: int) -> int | None:
        """The earliest allowed cut of the first chunk before ``limit``: a clause mark after
        ``min_first_words`` words, or a phrase start after ``first_phrase_words`` words."""
        start = max(self._clause_scan, self._base)
        stop = max(start, limit)
        candidates = [(m.end(), self.policy.min_first_words) for m in _CLAUSE_MARKS.finditer(self._buf, start, stop)]
        if self.policy.first_phrase_words:
            phrases = self._word_cuts(_PHRASE, start, stop, self._base)
            candidates += [(cut, self.policy.first_phrase_words) for cut in phrases]
        for cut, words in sorted(candidates):
            if len(_WORD.findall(self._buf, self._base, cut)) >= words:
                return cut
            self._clause_scan = cut
        return None

    def _soft_cut(self, lead: int, soft: int, upto: int) -> int | None:
        """Past the schedule's soft limit: the last clause boundary before it (a clause mark,
        else a conjunction such as "and" or "which"), else the first one after it."""
        last = self._last_clause(lead, soft)
        if last is not None:
            return last
        after = [c for c in self._clause_cuts(lead + soft, max(lead + soft, upto), lead) if c > lead + soft]
        return min(after) if after else None

    def _clause_cuts(self, start: int, stop: int, lead: int) -> list[int]:
        """Clause marks and (where they start a clause) conjunctions in ``_buf[start:stop]``."""
        marks = [m.end() for m in _CLAUSE_MARKS.finditer(self._buf, start, stop)]
        return marks + self._word_cuts(_CLAUSE_START, start, stop, lead)

    def _word_cuts(self, pattern: re.Pattern[str], start: int, stop: int, origin: int) -> list[int]:
        """Cuts before the words ``pattern`` finds, where one follows a plain word (not "p.m."
        or "5") outside any quotation opened since ``origin``."""
        return [
            m.start()
            for m in pattern.finditer(self._buf, start, stop)
            if m.start() > origin
            and self._buf[m.start() - 1].isalpha()
            and not _inside_quote(self._buf[origin : m.start()])
        ]

    def _last_clause(self, lead: int, limit: int) -> int | None:
        stop = lead + limit
        marks = [m.end() for m in _CLAUSE_MARKS.finditer(self._buf, lead, stop + 1) if m.end() <= stop]
        if marks and marks[-1] - lead >= limit // 3:
            return marks[-1]
        words = [c for c in self._clause_cuts(lead, stop + 1, lead) if c <= stop and c - lead >= limit // 3]
        return max(words) if words else None

    def _cut_point(self, lead: int, limit: int) -> int:
        """Where to cut an over-long piece: the last clause mark, else the last space."""
        clause = self._last_clause(lead, limit)
        if clause is not None:
            return clause
        stop = lead + limit
        spaces = [m.start() for m in _SPACE.finditer(self._buf, lead + 1, stop + 1)]
        return spaces[-1] if spaces else stop

    def _next_sentence(self, start: int) -> None:
        self._sentence = self._origin = self._scan = start
        self._boundary = None

    def _emit(self, cut: int) -> str:
        chunk = self._buf[self._base : cut].strip()
        self._base = self._sentence = self._clause_scan = cut
        if self._boundary is not None and cut >= self._boundary:
            self._next_sentence(cut)
        else:  # a cut inside the sentence: its scan goes on where it was
            self._scan = max(self._scan, cut)
        if self._base >= self._COMPACT_AT and self._base * 2 >= len(self._buf) and self._origin >= self._base:
            self._compact()
        if chunk:
            self._index += 1
        return chunk

    def _compact(self) -> None:
        """Drop emitted text; only at a sentence's start (decisions never look before it)."""
        shift = self._base
        self._buf = self._buf[shift:]
        self._base = self._sentence = self._clause_scan = 0
        self._lead_at = max(0, self._lead_at - shift)
        self._origin -= shift
        self._scan -= shift
        if self._boundary is not None:
            self._boundary -= shift


def _inside_quote(text: str) -> bool:
    """Whether ``text`` leaves a quotation or bracket open (no phrase cut in there)."""
    return (
        text.count('"') % 2 == 1
        or text.count("“") > text.count("”")
        or text.count("(") > text.count(")")
        or text.count("[") > text.count("]")
    )


_LETTER_OR_DIGIT = re.compile(r"[^\W_]")


def has_words(chunk: str) -> bool:
    """Whether ``chunk`` has a letter or a digit: a chunk of marks alone (what is left of a long
    run of punctuation cut at the maximum) is a pause, not something to synthesise."""
    return _LETTER_OR_DIGIT.search(chunk) is not None


def chunk_text(text: str, policy: ChunkPolicy | None = None) -> list[str]:
    """The chunks of a whole text: exactly what any fragmentation of it gives when streamed."""
    chunker = IncrementalSentenceChunker(policy)
    return chunker.feed(text) + chunker.flush_all()


async def achunks(fragments: AsyncIterable[str], policy: ChunkPolicy | None = None) -> AsyncIterator[str]:
    """Chunks from an async stream of fragments, each yielded as soon as it is complete."""
    chunker = IncrementalSentenceChunker(policy)
    async for fragment in fragments:
        for chunk in chunker.feed(fragment):
            yield chunk
    for chunk in chunker.flush_all():
        yield chunk
