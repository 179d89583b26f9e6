"""Each spoken word's span in the client's text (``SpanFinder``): for generated texts of plain
words, aliases, numbers the normaliser reads out, markdown, inline phonemes and SSML, fed in
fragments, every word the real G2P says points at the piece of the client's text it came from."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import pytest

from speakstream.engine.kokoro import KokoroEngine
from speakstream.engine.phonemes.languages import parse_language
from speakstream.text import ChunkPolicy, IncrementalSentenceChunker, chunk_text
from speakstream.text.lexicon import Lexicon, Rule
from speakstream.text.script import Say, Script
from speakstream.text.spans import SpanFinder
from speakstream.text.ssml import SsmlReader
from tests.scaling import RATIO_LIMIT, growth

RULES = Lexicon([Rule(string="Zorbixal", alias="Saturday"), Rule(string="ACME", alias="Acme Corporation")])
WORDS = "booking flight tomorrow please thanks window seat morning ticket order".split()
OPAQUE = {"alias", "ssml"}
PLAIN = [
    *(("word", w, (w,)) for w in WORDS),
    ("alias", "Zorbixal", ("Saturday",)),
    ("alias", "ACME", ("Acme", "Corporation")),
    *(("number", n, ()) for n in ("42", "$42.50", "10:30", "2025-03-05", "3rd", "1,200", "7%")),
    ("markdown", "**urgent**", ()),
    ("markdown", "*really*", ()),
    ("markdown", "[the docs](https://example.com/docs)", ()),
    ("inline", "[Qwertle](/bəˈnænə/)", ("Qwertle",)),
]
SSML_ONLY = [
    ("ssml", '<sub alias="Monday">Zorb</sub>', ("Monday",)),
    ("ssml", '<say-as interpret-as="characters">dog</say-as>', ("D.", "O.", "G.")),
    ("ssml", "<emphasis>gladly</emphasis>", ("gladly",)),
    ("ssml", '<say-as interpret-as="ordinal">3</say-as>', ()),
    ("ssml", "fish &amp; chips", ()),
]


@dataclass(frozen=True)
class Piece:
    start: int
    end: int
    says: tuple[str, ...]
    """Words only this piece says (checked to point at it)."""


def _generated(rng: random.Random, ssml: bool) -> tuple[str, list[Piece]]:
    """A text of 6 to 14 pieces; two pieces none of whose words are written in the text (an alias,
    a word read out) are never side by side: their words would share both in proportion."""
    kinds = PLAIN + (SSML_ONLY if ssml else [])
    text, pieces, opaque = "<speak>" if ssml else "", [], False
    for n in range(rng.randint(6, 14)):
        kind, source, says = rng.choice(kinds)
        while opaque and kind in OPAQUE:
            kind, source, says = rng.choice(kinds)
        opaque = kind in OPAQUE
        if n and rng.random() < 0.2 and ssml:
            text += '<break time="100ms"/> '
        pieces.append(Piece(len(text), len(text) + len(source), says))
        text += source + rng.choice([" ", " ", ", ", ". "])
    return text.rstrip() + ("." if not ssml else ".</speak>"), pieces


def _spans(kokoro: KokoroEngine, text: str, cut: int) -> list[tuple[str, tuple[int, int]]]:
    """Each word the engine says, with its span: the text fed in fragments of ``cut`` characters."""
    script = Script(IncrementalSentenceChunker(ChunkPolicy()), RULES.rewriter(), SsmlReader())
    finder, english, parts = SpanFinder(), parse_language("en-us"), []
    for at in range(0, len(text), cut):
        finder.add(text[at : at + cut])
        parts += script.feed(text[at : at + cut])
    parts += script.end()
    finder.ssml = script.ssml
    placed = []
    for part in parts:
        if isinstance(part, Say):
            words = [w.text for p in kokoro.phoneme_windows(part.text, english) for w in p.words]
            placed += list(zip(words, finder.place(words, part.text, part.ends_at), strict=True))
    return placed


@pytest.mark.model
@pytest.mark.parametrize("ssml", [False, True], ids=["plain", "ssml"])
def test_every_word_points_at_the_piece_it_came_from(kokoro: KokoroEngine, ssml: bool) -> None:
    rng = random.Random(52)
    for _ in range(60):
        text, pieces = _generated(rng, ssml)
        placed = _spans(kokoro, text, rng.randint(1, 12))
        pointed: set[Piece] = set()
        for word, (start, end) in placed:
            inside = [p for p in pieces if p.start <= start < end <= p.end]
            assert len(inside) == 1, (text, word, text[start:end])
            pointed.add(inside[0])
            if any(word in p.says for p in pieces):
                assert word in inside[0].says, (text, word, text[start:end])
        assert [s for _, (s, _) in placed] == sorted(s for _, (s, _) in placed), text
        assert pointed == set(pieces), (text, [text[p.start : p.end] for p in set(pieces) - pointed])


def test_words_are_placed_as_the_text_streams_in() -> None:
    finder = SpanFinder()
    finder.add("Hello there, we meet on Zorb")
    assert finder.place(["Hello", "there"], "Hello there,") == [(0, 5), (6, 11)]
    finder.add("ixal at noon.")
    text = finder.text
    spans = finder.place(["we", "meet", "on", "Saturday", "at", "noon"], "we meet on Saturday at noon.")
    assert [text[a:b] for a, b in spans] == ["we", "meet", "on", "Zorbixal", "at", "noon"]


def _placed_in_chunks(text: str) -> None:
    finder = SpanFinder()
    for at in range(0, len(text), 7):
        finder.add(text[at : at + 7])
    words = text.split()
    for at in range(0, len(words), 20):
        finder.place(words[at : at + 20], " ".join(words[at : at + 20]))


@pytest.mark.parametrize("unit", ["a ", "1 ", "a. ", "x-y ", "<b> ", "** ", "[a](/b/) "])
def test_placing_costs_linear_time(unit: str) -> None:
    assert growth(_placed_in_chunks, unit) < RATIO_LIMIT


def _placed_as_served(text: str) -> None:
    """The text cut as the server cuts it, each chunk's words as a G2P says them (its runs of
    letters or digits): a text with no spaces is one group of units from start to end."""
    finder = SpanFinder()
    finder.add(text)
    for chunk in chunk_text(text):
        finder.place(re.findall(r"[^\W_]+", chunk), chunk)


@pytest.mark.parametrize("unit", ["a.", "7", "a-", "a. "])
def test_placing_chunks_of_a_text_without_spaces_costs_linear_time(unit: str) -> None:
    assert growth(_placed_as_served, unit) < RATIO_LIMIT
