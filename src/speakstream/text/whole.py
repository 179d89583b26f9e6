"""The chunker of ``chunking: none``: the whole text at once."""

from __future__ import annotations

from speakstream.text.chunker import ChunkPolicy, chunk_text


class WholeText:
    """The chunker of ``chunking: none``: the text is spoken as one piece, or, when it is longer
    than one engine job should be, as runs of whole sentences of up to ``max_chars`` (the engine
    would cut it at about the same places: its phoneme windows hold about 400 characters)."""

    def __init__(self, max_chars: int = 1_000) -> None:
        self._parts: list[str] = []
        self._max_chars = max_chars

    def feed(self, fragment: str) -> list[str]:
        self._parts.append(fragment)
        return []

    def cut(self) -> list[str]:
        text, self._parts = "".join(self._parts).strip(), []
        if len(text) <= self._max_chars:
            return [text] if text else []
        sentences = chunk_text(text, ChunkPolicy(first_clause=False, schedule=(), max_chunk_chars=self._max_chars))
        runs: list[str] = []
        for sentence in sentences:
            if runs and len(runs[-1]) + 1 + len(sentence) <= self._max_chars:
                runs[-1] += " " + sentence
            else:
                runs.append(sentence)
        return runs

    flush_all = cut
