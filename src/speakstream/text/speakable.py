"""Markdown from an LLM turned into what a person would say, incrementally.

Drops emphasis markers, headings' ``#``, bullets, table pipes and code fences (code blocks are
skipped or replaced by a short phrase); keeps link text and drops the link target; speaks a raw
URL as its host. Markers split across fragments (``"**bo"``, ``"ld**"``) are handled because the
filter holds back the unfinished last word of what it has seen, and a line's first characters
until its kind (heading, bullet, table row, fence...) is known. Plain text passes through
unchanged, and any fragmentation of the input gives the same output.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from enum import Enum
from urllib.parse import urlsplit


class LineKind(Enum):
    PLAIN = "plain"
    HEADING = "heading"
    ITEM = "item"
    TABLE = "table"
    DROPPED = "dropped"


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeakableOptions:
    """What the filter does with markdown constructs that have no spoken form."""

    code_blocks: str = "skip"
    """``"skip"`` drops fenced code blocks; ``"phrase"`` says ``code_phrase`` instead."""
    code_phrase: str = "There is a code sample in the text."
    urls: str = "host"
    """A raw URL is spoken as its ``"host"``, kept (``"keep"``) or dropped (``"drop"``)."""
    end_lines: bool = True
    """End headings, list items and table rows with a full stop when they have no punctuation."""

    def __post_init__(self) -> None:
        if self.code_blocks not in ("skip", "phrase") or self.urls not in ("host", "keep", "drop"):
            raise ValueError("code_blocks must be skip|phrase and urls host|keep|drop")


_LINK = re.compile(r"!?\[([^\]\n]{0,300})\]\(([^)\s]{0,2000})\)")
_LINK_RESOLVED = re.compile(r"\[[^\]\n]{0,300}\](?:\([^)\s]{0,2000}\)|(?=[^(]))")
_TOKEN = re.compile(r"\S+")
_LEADING_MARKS = re.compile(r"^([(\"'“‘]*)(?:\*{1,3}|_{1,3}|~~)(?=\S)")
_TRAILING_MARKS = re.compile(r"(?<=\S)(?:\*{1,3}|_{1,3}|~~)(?=[.,;:!?)\"'’”]*$)")
_URL = re.compile(r"^<?(https?://[^\s<>]+?)>?([.,;:!?)\"'’”]*)$")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~])")
_TAG = re.compile(r"</?(?:br|p|b|i|em|strong|code|span|div)/?>", re.IGNORECASE)
_FENCE = re.compile(r"[ \t]*(```|~~~)")
_RULE = re.compile(r"[ \t]*([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_HEADING = re.compile(r"#{1,6}(?:[ \t]+|$)")
_BULLET = re.compile(r"[-*+•][ \t]+")
_NUMBERED = re.compile(r"\d{1,3}[.)][ \t]")
_SPECIAL = re.compile(r"[\[*_`~\\<]|://")
_SENTENCE_END = frozenset(".!?…:;,。！？")


class SpeakableFilter:
    """Incremental markdown-to-speech filter: ``feed`` fragments, ``flush`` at the end."""

    def __init__(self, options: SpeakableOptions | None = None) -> None:
        self.options = options or SpeakableOptions()
        self._reset()

    def _reset(self) -> None:
        self._pending = ""
        self._plain = 0  # _pending[:_plain] has no newline, space or tab (searched once)
        self._line_start = True
        self._kind = LineKind.PLAIN
        self._in_fence = False
        self._last = ""  # last non-space character emitted on this line

    def feed(self, fragment: str) -> str:
        self._pending += fragment
        return self._run(final=False)

    def _consume(self, count: int) -> None:
        self._pending = self._pending[count:]
        self._plain = max(0, self._plain - count)

    def flush(self) -> str:
        out = self._run(final=True)
        out += self._end_line()
        self._reset()
        return out

    def _run(self, *, final: bool) -> str:
        out: list[str] = []
        while self._pending:
            if self._line_start:
                if not self._start_line(out, final=final):
                    break
                continue
            if not self._inline(out, final=final):
                break
        return "".join(out)

    # Lines

    def _start_line(self, out: list[str], *, final: bool) -> bool:
        """Classify the line at the head of _pending; False when more text is needed."""
        newline = self._pending.find("\n")
        complete = newline >= 0 or final
        line = self._pending if newline < 0 else self._pending[:newline]
        if self._in_fence or _FENCE.match(line) or line.lstrip(" \t").startswith("|"):
            if not complete:
                return False
            self._whole_line(line, out)
            self._consume(len(line))
            self._kind = LineKind.DROPPED if self._kind is not LineKind.TABLE else self._kind
            self._line_start = False
            return True
        consumed = self._classify(line, complete=complete)
        if consumed is None:
            return False
        self._consume(consumed)
        self._line_start = False
        return True

    def _classify(self, line: str, *, complete: bool) -> int | None:
        """Set the line kind and return how many marker characters to drop (None: wait)."""
        body = line.lstrip(" \t")
        indent = len(line) - len(body)
        while body.startswith(">"):
            body = body[1:].lstrip(" \t")
        dropped = len(line) - len(body)
        if not body:
            if not complete:
                return None
            self._kind = LineKind.PLAIN
            return dropped if dropped > indent else 0
        if _RULE.match(body) and complete:
            self._kind = LineKind.DROPPED
            return len(line)
        if not complete and body[0] in "-*_" and not body.strip("-*_ \t"):
            return None  # might still become a horizontal rule
        for pattern, kind, keep in (
            (_HEADING, LineKind.HEADING, False),
            (_BULLET, LineKind.ITEM, False),
            (_NUMBERED, LineKind.ITEM, True),
        ):
            match = pattern.match(body)
            if match and (complete or match.end() < len(body) or kind is LineKind.ITEM):
                self._kind = kind
                return dropped if keep else dropped + match.end()
        if not complete and _could_be_marker(body):
            return None
        self._kind = LineKind.PLAIN
        return 0 if dropped == indent else dropped

    def _whole_line(self, line: str, out: list[str]) -> None:
        if _FENCE.match(line):
            self._in_fence = not self._in_fence
            if self._in_fence and self.options.code_blocks == "phrase":
                out.append(self.options.code_phrase)
                self._last = self.options.code_phrase[-1:]
            return
        if self._in_fence:
            return
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(not c.strip("-: ") for c in cells):
            return  # the |---|:---:| separator row
        spoken = ", ".join(self._transform(c) for c in cells if c)
        out.append(spoken)
        self._kind = LineKind.TABLE
        self._last = spoken.rstrip()[-1:] if spoken.strip() else self._last

    def _end_line(self) -> str:
        needs_stop = self._kind in (LineKind.HEADING, LineKind.ITEM, LineKind.TABLE)
        stop = "." if needs_stop and self.options.end_lines and self._last not in _SENTENCE_END and self._last else ""
        self._kind = LineKind.PLAIN
        self._last = ""
        return stop

    # Inline text

    def _inline(self, out: list[str], *, final: bool) -> bool:
        newline = self._pending.find("\n", self._plain)
        segment = self._pending if newline < 0 else self._pending[:newline]
        ready = len(segment) if (newline >= 0 or final) else _safe_prefix(segment, self._plain)
        if newline < 0 and not ready:
            self._plain = _plain_prefix(segment, self._plain)
        if ready:
            text = self._transform(segment[:ready])
            if self._kind is not LineKind.DROPPED:
                out.append(text)
                if text.strip():
                    self._last = text.rstrip()[-1]
            self._consume(ready)
        if ready < len(segment) or newline < 0:
            return False
        out.append(self._end_line() + "\n")
        self._consume(1)
        self._line_start = True
        return True

    def _transform(self, text: str) -> str:
        if not _SPECIAL.search(text):
            return text
        text = _LINK.sub(r"\1", text)
        text = _TAG.sub(" ", text)
        return _TOKEN.sub(self._token, text)

    def _token(self, match: re.Match[str]) -> str:
        token = _ESCAPE.sub(r"\1", match.group(0)).replace("`", "")
        url = _URL.match(token)
        if url:
            return self._speak_url(url.group(1)) + url.group(2)
        if len(token.strip("*_~")) == 0:
            return token if token in ("*", "_") else ""
        token = _LEADING_MARKS.sub(r"\1", token)
        return _TRAILING_MARKS.sub("", token).replace("**", "")

    def _speak_url(self, url: str) -> str:
        if self.options.urls == "keep":
            return url
        if self.options.urls == "drop":
            return ""
        host = urlsplit(url).hostname or ""
        return host.removeprefix("www.")


def _could_be_marker(body: str) -> bool:
    """Whether more characters could still make ``body`` a marker: heading, bullet, fence..."""
    if "```".startswith(body) or "~~~".startswith(body):
        return True
    if body[0] == "#":
        return not body.rstrip(" \t").strip("#")
    if body[0] in "-*+•":
        return len(body) == 1
    digits = len(body) - len(body.lstrip("0123456789"))
    return 0 < digits <= 3 and (digits == len(body) or (body[digits] in ".)" and len(body) == digits + 1))


def _plain_prefix(segment: str, known: int) -> int:
    """How far from the start ``segment`` has no space or tab (``[:known]`` has none)."""
    found = [i for i in (segment.find(c, known) for c in " \t") if i >= 0]
    return min(found) if found else len(segment)


def _safe_prefix(segment: str, plain: int = 0) -> int:
    """How much of an unfinished line can be transformed now (``segment[:plain]`` is known to
    have no space or tab, so the search for the last one starts there).

    The last word waits for the space after it (it may be ``**bo`` of ``**bold**`` or a URL's
    start), and so does a ``[`` whose link is not resolved yet.
    """
    ready = len(segment)
    if not segment[-1:].isspace():
        ready = max(segment.rfind(" ", plain), segment.rfind("\t", plain)) + 1
    bracket = segment.find("[", 0, ready)
    while 0 <= bracket < ready:
        if len(segment) - bracket > 2400 or _LINK_RESOLVED.match(segment, bracket):
            bracket = segment.find("[", bracket + 1)
            continue
        word_start = max(segment.rfind(" ", 0, bracket), segment.rfind("\t", 0, bracket)) + 1
        return min(ready, word_start)
    return ready


def speakable(text: str, options: SpeakableOptions | None = None) -> str:
    """The spoken form of a whole text."""
    spoken = SpeakableFilter(options)
    return spoken.feed(text) + spoken.flush()


async def aspeakable(fragments: AsyncIterable[str], options: SpeakableOptions | None = None) -> AsyncIterator[str]:
    """Filter an async stream of fragments, yielding speakable text as soon as it is known."""
    spoken = SpeakableFilter(options)
    async for fragment in fragments:
        if out := spoken.feed(fragment):
            yield out
    if out := spoken.flush():
        yield out
