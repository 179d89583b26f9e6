"""Pronunciation rules on text: matching, the inline form, Arpabet, and streaming invariance."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from speakstream.text.chunker import IncrementalSentenceChunker, chunk_text
from speakstream.text.lexicon import INLINE, Lexicon, Rule, arpabet_to_ipa, merged
from tests.scaling import _cost, repeated

RULES = [
    Rule(string="Kokoro", phoneme="kˈOkəɹO"),
    Rule(string="UN", alias="United Nations"),
    Rule(string="nasa", alias="NASA", case_sensitive=False),
    Rule(string="New York", alias="the Big Apple"),
    Rule(string="York City", alias="YC"),
    Rule(string="tomato", phoneme="T AH0 M EY1 T OW2", alphabet="cmu-arpabet"),
    Rule(string="km", alias="kilometres", word_boundaries=False),
]
LEXICON = Lexicon(RULES)


def test_aliases_replace_whole_words_with_their_case() -> None:
    text = "The UN met NASA, nasa and Nasa; UNs and UNO did not."
    assert LEXICON.apply(text) == "The United Nations met NASA, NASA and NASA; UNs and UNO did not."


def test_a_phoneme_rule_becomes_the_inline_form_showing_the_word_written() -> None:
    assert LEXICON.apply("Hello Kokoro!") == "Hello [Kokoro](/kˈOkəɹO/)!"
    assert INLINE.fullmatch("[Kokoro](/kˈOkəɹO/)")


def test_the_longest_string_wins_and_matches_never_overlap() -> None:
    assert LEXICON.apply("New York City") == "the Big Apple City"


def test_without_word_boundaries_a_rule_matches_inside_words() -> None:
    assert LEXICON.apply("5km and 10 km") == "5kilometres and 10 kilometres"


def test_text_already_inline_is_left_as_it_is() -> None:
    text = "Say [UN](/jˈun/) and [Kokoro](/kˈOkO/)."
    assert LEXICON.apply(text) == text


def test_arpabet_becomes_ipa_with_stress_before_the_vowel() -> None:
    assert arpabet_to_ipa("K AH0 K AO1 R OW0") == "kəkˈɔɹoʊ"
    assert arpabet_to_ipa("T AH0 M EY1 T OW2") == "təmˈeɪtˌoʊ"
    with pytest.raises(ValueError, match="Arpabet"):
        arpabet_to_ipa("K QQ1")


@pytest.mark.parametrize(
    "bad",
    [
        {"string": " ", "alias": "x"},
        {"string": "a"},
        {"string": "a", "alias": "b", "phoneme": "c"},
        {"string": "a", "phoneme": "b", "alphabet": "x-sampa"},
        {"string": "a" * 101, "alias": "b"},
    ],
)
def test_a_rule_that_cannot_be_applied_is_refused(bad: dict[str, str]) -> None:
    with pytest.raises(ValueError, match=r"rule|alphabet|characters"):
        Rule(**bad)  # type: ignore[arg-type]


def test_earlier_dictionaries_win_over_later_ones() -> None:
    first = Lexicon([Rule(string="SQL", alias="sequel")])
    second = Lexicon([Rule(string="SQL", alias="S Q L"), Rule(string="DB", alias="database")])
    both = merged([first, second])
    assert both is not None and both.apply("SQL DB") == "sequel database"
    assert merged([Lexicon([])]) is None


TEXTS = st.lists(
    st.sampled_from(
        [
            *(
                "Kokoro",
                "UN",
                "nasa",
                "NASA",
                "New",
                "York",
                "City",
                "tomato",
                "km",
                "5km",
                "[x](/ab/)",
                "[Kok",
                "oro]",
            ),
            *(" ", ", ", ". ", "s", "(", ")", "/", "\n", "é"),
        ]
    ),
    max_size=40,
).map("".join)


@given(text=TEXTS, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_any_fragmentation_gives_what_the_whole_text_gives(text: str, cuts: list[int]) -> None:
    bounds = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    rewriter = LEXICON.rewriter()
    streamed = "".join(rewriter.feed(text[a:b]) for a, b in itertools.pairwise(bounds)) + rewriter.flush()
    assert streamed == LEXICON.apply(text)


def test_a_stream_holds_back_only_what_may_still_start_a_match() -> None:
    rewriter = LEXICON.rewriter()
    assert rewriter.feed("I flew to the ") == "I flew to the "
    assert rewriter.feed("UN today, then Ne") == "United Nations today, then "
    assert rewriter.feed("w York") == ""
    assert rewriter.feed(" City.") == "the Big Apple City."
    assert rewriter.flush() == ""


SENTENCES = st.lists(
    st.sampled_from(
        [
            "We met at the UN today. ",
            "Ask [Kokoro](/kˈOkəɹO/) about it, please. ",
            "The tomato, which Kokoro grew, was red! ",
            "New York City is far; nasa is farther. ",
            "Say [New York](/nˈu jˈɔɹk/) slowly, then stop. ",
            "It runs 5km a day and sells [Zyx](/zˈɪks/) too. ",
        ]
    ),
    min_size=1,
    max_size=8,
).map("".join)


@given(text=SENTENCES, cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=20))
def test_rules_and_inline_phonemes_streamed_give_the_chunks_of_the_whole(text: str, cuts: list[int]) -> None:
    """What a reply does with appended fragments: the rules, then the chunker."""
    bounds = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    rewriter, chunker = LEXICON.rewriter(), IncrementalSentenceChunker()
    chunks = [chunk for a, b in itertools.pairwise(bounds) for chunk in chunker.feed(rewriter.feed(text[a:b]))]
    chunks += chunker.feed(rewriter.flush()) + chunker.flush_all()
    assert chunks == chunk_text(LEXICON.apply(text))
    for chunk in chunks:  # no inline word is cut in two
        assert chunk.count("](/") == len(INLINE.findall(chunk))


def test_a_text_costs_about_the_same_whatever_the_number_of_rules() -> None:
    """Rules are indexed, not tried one by one: ten times the rules must not cost ten times the
    time (one regular expression of 5,000 rules took 216 s on 20,000 characters)."""
    text = repeated("Thanks for waiting, I found your booking. ", 20_000)

    def lexicon(count: int) -> Lexicon:
        return Lexicon([Rule(string=f"{w}{i}", alias="x") for i in range(count) for w in ("book", "wait")])

    small, big = lexicon(250), lexicon(2_500)
    big.apply(text)
    ratio = min(_cost(big.apply, text, 3) / _cost(small.apply, text, 3) for _ in range(3))
    assert ratio < 3.0
